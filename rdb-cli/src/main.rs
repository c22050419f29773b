//! `rdb`: record a program once, replay it exactly.
//!
//! Exit codes: the recorded program's status for `record` (128+signal if it was killed);
//! for `replay`: 0 replay completed, 1 error (bad trace, changed file, unsupported), 3 the
//! replay diverged from the recording, 4 the trace ends early (replayed up to its end), 5 (with
//! `--debug`) the replay completed but some region calls did not (each reported on stderr).

mod gdb;
mod info;
mod record;
mod replay;
mod traces;

use clap::{Parser, Subcommand};

/// Replay debugging for Linux x86-64: record a run once, replay it exactly.
#[derive(Parser)]
#[command(name = "rdb", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Record(record::Args),
    Replay(replay::Args),
    Gdb(gdb::Args),
    Info(info::Args),
}

/// Exit code for errors that are not the program's own status.
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_DIVERGED: i32 = 3;
pub const EXIT_ENDS_EARLY: i32 = 4;

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Record(a) => record::run(a),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Gdb(a) => gdb::run(a),
        Cmd::Info(a) => info::run(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            let mut src = e.source();
            while let Some(s) = src {
                eprintln!("Caused by: {s}");
                src = s.source();
            }
            let code = match e.downcast_ref::<rdb_runtime::Error>() {
                Some(rdb_runtime::Error::Divergence(_)) => EXIT_DIVERGED,
                Some(rdb_runtime::Error::EndsEarly { .. }) => EXIT_ENDS_EARLY,
                _ => EXIT_ERROR,
            };
            std::process::exit(code);
        }
    }
}
