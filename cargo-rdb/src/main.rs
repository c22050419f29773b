//! `cargo rdb`: builds Rust programs with debug regions (and, through the
//! other subcommands, records and replays them).
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
mod shadow;
mod term;
mod wrapper;

use clap::Parser;

fn main() {
    if wrapper::is_wrapper_call() {
        wrapper::run();
    }
    let opts::Cargo::Rdb(rdb) = opts::Cargo::parse();
    let result = match rdb.command {
        opts::Command::Build(args) => build::run(&args),
    };
    if let Err(e) = result {
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
