//! Command line of `cargo rdb`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Invoked by cargo as `cargo-rdb rdb ...`.
#[derive(Parser, Debug)]
#[command(bin_name = "cargo", version, styles = clap::builder::Styles::plain())]
pub enum Cargo {
    /// Replay debugging: build with debug regions, record, replay.
    Rdb(Rdb),
}

#[derive(Args, Debug)]
pub struct Rdb {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build main binaries (identical to a plain build without debug regions),
    /// debug modules and descriptors into target/rdb/<profile>/.
    Build(BuildArgs),
    /// Build (as `cargo rdb build`), then record a run of the main binary
    /// (identical to a plain build) with `rdb record`.
    Record(RecordArgs),
    /// Build (as `cargo rdb build`), then replay a trace with the debug
    /// regions running (`rdb replay TRACE --debug target/rdb/<profile>/<bin>`).
    Replay(ReplayArgs),
}

#[derive(Args, Debug, Clone)]
pub struct RecordArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Trace directory to create (default: `rdb record`'s default).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Arguments for the program.
    #[arg(last = true)]
    pub args: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// Trace directory (default: the latest recording).
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub build: BuildArgs,
    /// Seconds one region call may run before it is stopped and reported.
    #[arg(long, value_name = "SECS")]
    pub region_timeout: Option<f64>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct BuildArgs {
    /// Build with the release profile.
    #[arg(short = 'r', long, conflicts_with = "profile")]
    pub release: bool,
    /// Build with the given profile.
    #[arg(long, value_name = "PROFILE-NAME")]
    pub profile: Option<String>,
    /// Package(s) to build (default: the workspace's default members).
    #[arg(short = 'p', long = "package", value_name = "SPEC")]
    pub packages: Vec<String>,
    /// Binary target(s) to build (default: every binary of the packages).
    #[arg(long = "bin", value_name = "NAME")]
    pub bins: Vec<String>,
    /// Space or comma separated list of features to activate.
    #[arg(short = 'F', long)]
    pub features: Vec<String>,
    /// Activate all available features.
    #[arg(long)]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long)]
    pub no_default_features: bool,
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Do not print cargo log messages.
    #[arg(short, long)]
    pub quiet: bool,
    /// Use verbose output.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print the artefact paths on stdout (on by default for `cargo rdb
    /// build`; the other subcommands keep stdout for the program).
    #[arg(skip = true)]
    pub print_paths: bool,
}

impl BuildArgs {
    /// The cargo profile name and the directory its artefacts go to.
    pub fn profile(&self) -> (String, String) {
        let name = match (&self.profile, self.release) {
            (Some(p), _) => p.clone(),
            (None, true) => "release".to_string(),
            (None, false) => "dev".to_string(),
        };
        let dir = match name.as_str() {
            "dev" | "test" => "debug".to_string(),
            "bench" => "release".to_string(),
            other => other.to_string(),
        };
        (name, dir)
    }
}
