//! `cargo rdb`: builds Rust programs with debug regions (and, through the
//! other subcommands, records and replays them).
//!
//! ```text
//! cargo rdb build [--release | --profile NAME] [-p PKG]... [--bin NAME]...
//!                 [-F FEATURES] [--all-features] [--no-default-features] [--manifest-path PATH]
//! cargo rdb record [BUILD OPTIONS] [-o TRACE] -- ARGS...   # build, then `rdb record` the main binary
//! cargo rdb replay [TRACE] [BUILD OPTIONS] [--region-timeout SECS]
//!                  # build, then `rdb replay TRACE --debug target/rdb/<profile>/<bin>`
//! ```
//! `record` and `replay` run `rdb` from `$RDB`, beside this executable, or
//! from `PATH`, and exit with its status.
//!
//! For each binary it writes, in `target/rdb/<profile-dir>/` (`debug` for
//! dev, `release`, or the profile's name): `<bin>` (identical to a plain
//! build of the source without regions), `<bin>.rdb.so` (debug module),
//! `<bin>.rdb-functions.json` and `<bin>.rdb-arguments.json` (descriptors,
//! see `descriptors/FORMAT.md`), and prints their paths on stdout. Errors in
//! regions are reported rustc-style before anything is written (exit 1).
//!
//! Everything happens under `target/rdb/`: `shadow-main/` and
//! `shadow-debug/` (copies of the workspace, rewritten file by file only when
//! a file changed), `debug-packages/<bin>/` (the generated cdylib package of
//! each debug module), `rdb-region/` (the support crate, embedded in this
//! binary), `target/` (cargo's target directory for the main build) and
//! `target-debug/` (for the debug modules). The user's files are only read. The user's
//! `RUSTFLAGS` / `CARGO_ENCODED_RUSTFLAGS` or `build.rustflags` config are
//! kept; `--remap-path-prefix <shadow>=<workspace root>` is appended so that
//! paths embedded in the binary are those of a build in place.
//!
//! `cargo rdb build` is a pipeline over the workspace found by `cargo
//! metadata`: [`build::run`] extracts regions (`rdb-extract`), syncs two
//! shadow copies of the workspace under `target/rdb/` ([`shadow`]), builds
//! the main binaries from the stripped copy with `--remap-path-prefix`,
//! builds one debug module per binary from the debug copy ([`debug_package`],
//! compiled through the rustc wrapper in [`wrapper`]), and writes the
//! artefacts and descriptors ([`artefacts`]).

mod artefacts;
mod build;
mod cargo;
mod debug_package;
mod opts;
mod progress;
mod session;
mod shadow;
mod term;
mod twin;
mod why;
mod wrapper;

use clap::Parser;

fn main() {
    if wrapper::is_wrapper_call() {
        wrapper::run();
    }
    let opts::Cargo::Rdb(rdb) = opts::Cargo::parse();
    let result = match rdb.command {
        opts::Command::Build(args) => build::run(&args).map(|_| 0),
        opts::Command::Record(args) => session::record(&args),
        opts::Command::Replay(args) => session::replay(&args),
    };
    let e = match result {
        Ok(code) => std::process::exit(code),
        Err(e) => e,
    };
    {
        match e.downcast_ref::<build::Reported>() {
            Some(_) => {}
            None => {
                eprintln!("error: {e}");
                for cause in e.chain().skip(1) {
                    eprintln!("\nCaused by:\n    {cause}");
                }
            }
        }
        std::process::exit(1);
    }
}
