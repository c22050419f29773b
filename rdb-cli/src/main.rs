//! `rdb`: record a program once, replay it exactly.
//!
//! Exit codes: the recorded program's status for `record` (128+signal if it was killed);
//! for `replay`: 0 replay completed, 1 error (bad trace, changed file, unsupported), 3 the
//! replay diverged from the recording, 4 the trace ends early (replayed up to its end), 5 (with
//! `--debug`) the replay completed but some region calls did not (each reported on stderr).
//! `attach`: 0 the program ran to its end, 1 error (the stub failed or went away, the binary is
//! not the running one), 5 some region calls did not complete.

mod attach;
mod find;
mod gdb;
mod info;
mod ls;
mod pack;
mod progress;
mod record;
mod replay;
mod rm;
mod traces;
mod why;

use clap::{Parser, Subcommand};

/// Replay debugging for Linux x86-64: record a run once, replay it exactly
///
/// Record the run with the bug once; replay that exact execution as often as you like, and
/// with --debug run debug code you added to the source afterwards at its places, reading the
/// program's real state, without changing the replay (Rust: `cargo rdb`; C: `rdb-clang`).
#[derive(Parser)]
#[command(name = "rdb", version, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Record(record::Args),
    Replay(replay::Args),
    Gdb(gdb::Args),
    Find(find::Args),
    Info(info::Args),
    Ls(ls::Args),
    Pack(pack::Args),
    Rm(rm::Args),
    Attach(attach::Args),
}

const EXAMPLES: &str = "\
Examples:
  rdb record -- ./app --port 8080     record a run (trace: ~/.local/share/rdb/app-0)
  rdb replay                          replay the latest recording
  rdb ls                              list the recorded traces
  cargo rdb replay app-0              Rust: rebuild with debug regions, replay app-0 with them
  rdb replay app-0 --debug ./app      C: replay with the regions of a program rebuilt by rdb-clang
  rdb find app-0 --debug ./app --at src/vm.rs:41   the first hit where that region's rdb_check! fails";

/// Before Rust's runtime puts `/dev/null` on closed standard descriptors: which were closed, so
/// that `rdb record` closes them for the program too.
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STANDARD_FDS: extern "C" fn() = rdb_runtime::sys::note_closed_standard_fds;

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
        Cmd::Find(a) => find::run(a),
        Cmd::Info(a) => info::run(a),
        Cmd::Ls(a) => ls::run(a),
        Cmd::Pack(a) => pack::run(a),
        Cmd::Rm(a) => rm::run(a),
        Cmd::Attach(a) => attach::run(a),
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
