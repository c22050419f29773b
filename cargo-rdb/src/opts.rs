//! Command line of `cargo rdb`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Invoked by cargo as `cargo-rdb rdb ...`.
#[derive(Parser, Debug)]
#[command(bin_name = "cargo", version, styles = clap::builder::Styles::plain())]
pub enum Cargo {
    /// Replay debugging for Rust: replay a recorded run with debug code added since
    ///
    /// Record the run with the bug once from a plain build (`rdb record`); then write debug
    /// code in the source between `rdb_begin!();` and `rdb_end!();` (crate `rdb-macros`;
    /// imports, helpers and state only it uses are `#[debug_only]`) and replay the exact
    /// recorded run with that code running at its places. The program built from the source
    /// without the debug code must be the recorded program byte for byte: when it is not,
    /// `cargo rdb replay` says what differs.
    #[command(version, display_name = "cargo-rdb", after_help = EXAMPLES)]
    Rdb(Rdb),
}

const EXAMPLES: &str = "\
Examples:
  cargo build && rdb record -- target/debug/app ARGS   record the run with the bug, once
  cargo rdb replay                   add regions to the source, then rebuild and replay the
                                     latest recording with them
  cargo rdb replay app-0 --release   a trace of a release build (`rdb ls` lists traces)
  cargo rdb build                    only build: target/rdb/<profile>/<bin> and its debug files";

#[derive(Args, Debug)]
pub struct Rdb {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build the program and its debug regions into target/rdb/<profile>/
    ///
    /// Writes, per binary: `<bin>` (byte-identical to a plain `cargo build` of the source
    /// without debug code), `<bin>.rdb.so` (the debug module) and the descriptors
    /// `<bin>.rdb-functions.json`, `<bin>.rdb-arguments.json`; prints their paths. Never
    /// writes outside target/rdb/.
    Build(BuildArgs),
    /// Build, then record a run of the program with `rdb record`
    ///
    /// The program recorded is the one built from the source without debug code (the same as a
    /// plain `cargo build`), so the trace can be replayed with regions later.
    Record(RecordArgs),
    /// Build, then replay a trace with the debug regions running
    ///
    /// Builds as `cargo rdb build` (use the profile the program was recorded with), checks the
    /// program is the recorded one (or says what differs), then runs `rdb replay TRACE --debug
    /// target/rdb/<profile>/<bin>`; exits with its status (see `rdb replay --help`).
    Replay(ReplayArgs),
}

#[derive(Args, Debug, Clone)]
pub struct RecordArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Trace directory to create (default: `rdb record`'s default).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Arguments for the program (after `--`).
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// Trace directory, trace name in the trace root (`rdb ls`), or packed trace (default: the
    /// latest recording).
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
    /// Do not print cargo's or cargo rdb's status messages (warnings and errors still print).
    #[arg(short, long)]
    pub quiet: bool,
    /// Use verbose output.
    #[arg(short, long)]
    pub verbose: bool,
    /// Build the main binary with the `rdb-macros` / `rdb-api` dependencies the manifests
    /// declare, as a plain `cargo build` of them does (by default they are left out: the
    /// program recorded before they were added). `cargo rdb replay` tries both by itself.
    #[arg(long)]
    pub keep_rdb_dependencies: bool,
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
