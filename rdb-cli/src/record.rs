//! `rdb record`.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Result;
use rdb_runtime::{record_with, RecordOptions, Schedule};

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
    /// Randomise the thread schedule (switch points and which thread runs next) to expose
    /// rare interleavings; the seed is stored in the trace.
    #[arg(long)]
    chaos: bool,
    /// Seed for --chaos (default: from the clock; printed).
    #[arg(long, requires = "chaos")]
    seed: Option<u64>,
    /// Time slice in microseconds: a thread that has had its turn this long is switched out at
    /// its next syscall when another thread is ready.
    #[arg(long, default_value_t = 1000)]
    slice_us: u64,
    /// Stop the recording when a thread runs user code this many seconds without a syscall
    /// while other threads wait (it warns after one period, stops after two).
    #[arg(long, default_value_t = 10)]
    watchdog: u64,
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
    let chaos = a.chaos.then(|| {
        a.seed.unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
        })
    });
    if let Some(seed) = chaos {
        eprintln!("rdb: chaos schedule, seed {seed}");
    }
    let schedule = Schedule {
        slice: std::time::Duration::from_micros(a.slice_us),
        chaos,
        watchdog: std::time::Duration::from_secs(a.watchdog.max(1)),
    };
    let out = match record_with(&opts, &schedule) {
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
