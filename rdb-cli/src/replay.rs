//! `rdb replay`.

use std::path::PathBuf;

use anyhow::Result;
use rdb_runtime::{replay, NoObserver, ReplayOptions};

use crate::traces;

/// Re-run a recorded execution exactly (its stdout/stderr output is shown again).
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory (default: the latest recording).
    trace: Option<PathBuf>,
    /// Do not pin the replayer and the program to one CPU.
    #[arg(long)]
    no_pin: bool,
    /// Do not re-emit the recorded output.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(a: Args) -> Result<i32> {
    let dir = traces::resolve(a.trace)?;
    let opts = ReplayOptions {
        trace_dir: dir,
        pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
        echo_output: !a.quiet,
    };
    let out = replay(&opts, &mut NoObserver)?;
    if a.quiet {
        eprintln!("rdb: replayed {} events", out.events);
    }
    Ok(0)
}
