//! `rdb record`.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Result;
use rdb_runtime::{record, RecordOptions};

use crate::traces;

/// Record PROG running with ARGS (stdio passed through); exit with its status.
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory to create (default: $RDB_TRACE_DIR/<prog>-<n> or ~/.local/share/rdb/<prog>-<n>).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Do not pin the recorder and the program to one CPU.
    #[arg(long)]
    no_pin: bool,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

pub fn run(a: Args) -> Result<i32> {
    let program = a.command[0].clone();
    let (dir, default_place) = match a.output {
        Some(d) => (d, false),
        None => (traces::new_trace_dir(&program.to_string_lossy())?, true),
    };
    let opts = RecordOptions {
        program,
        args: a.command[1..].to_vec(),
        trace_dir: dir.clone(),
        pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
    };
    let out = match record(&opts) {
        Ok(out) => out,
        Err(e) => {
            // Leave no empty trace directory behind (a partial trace stays: it replays).
            let _ = std::fs::remove_dir(&dir);
            return Err(e.into());
        }
    };
    if default_place {
        traces::set_latest(&dir)?;
    }
    eprintln!(
        "rdb: recorded {} events ({} syscalls, {} processes, {} bytes) to {}",
        out.events,
        out.syscalls,
        out.processes,
        out.event_bytes,
        out.trace_dir.display()
    );
    let s = out.exit_status;
    Ok(if s & 0x7f == 0 { (s >> 8) & 0xff } else { 128 + (s & 0x7f) })
}
