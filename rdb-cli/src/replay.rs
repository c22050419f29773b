//! `rdb replay`.

use std::path::PathBuf;

use anyhow::Result;
use std::time::Duration;

use rdb_debugger::{replay_with_regions, DebugError, DebugReplayOptions};
use rdb_host::HostOptions;
use rdb_runtime::trace::Trace;
use rdb_runtime::{replay, NoObserver, ReplayOptions};

use crate::progress::Progress;
use crate::traces;

/// Replay a recorded run exactly, showing its output again
///
/// The program runs again, every system call answered as it was when recording, so it takes
/// the same path with the same data. What it wrote to the standard output and error of `rdb
/// record` is shown again (not what it sent to /dev/null or to files; replay writes no files).
/// With --debug, debug code added to the source since runs at its places (see `cargo rdb
/// replay` for Rust, `rdb-clang` for C).
///
/// Exit status: 0 the replay completed; 1 an error (a bad trace, a file that changed since
/// the recording, a binary that is not the recorded one: each said); 3 the replay diverged
/// from the recording (with a report); 4 the trace was cut short (replayed to its end); 5
/// with --debug, some region calls did not complete (each reported).
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory, trace name in the trace root (`rdb ls`), or packed trace (`rdb pack`;
    /// unpacked into a private temporary directory first) (default: the latest recording).
    trace: Option<PathBuf>,
    /// Do not pin the replayer and the program to one CPU (pinning makes replay faster).
    #[arg(long)]
    no_pin: bool,
    /// Do not show the recorded output again.
    #[arg(long, short)]
    quiet: bool,
    /// Run the debug regions of BINARY: the program rebuilt with them by `cargo rdb build`
    /// (target/rdb/<profile>/<name>) or `rdb-clang`, its `.rdb.so` and descriptor files beside
    /// it. It must be byte-identical to the recorded program; when it is not, rdb says what
    /// differs.
    #[arg(long, value_name = "BINARY")]
    debug: Option<PathBuf>,
    /// With --debug: seconds one region call may run before it is stopped and reported.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    region_timeout: f64,
    /// Wait for gdb on this port (`[HOST:]PORT`; 127.0.0.1 by default) and let it drive the
    /// replay (`target extended-remote HOST:PORT`).
    #[arg(long, value_name = "[HOST:]PORT")]
    gdbserver: Option<String>,
    /// With --gdbserver: start at this event index.
    #[arg(long, value_name = "EVENT", requires = "gdbserver")]
    goto: Option<u64>,
    /// With --gdbserver: debug this recorded process (default: the one the recording started).
    #[arg(long, value_name = "RECORDED-PID", requires = "gdbserver")]
    pid: Option<u32>,
    /// With --gdbserver: milliseconds of replay between automatic checkpoints for going back
    /// (0: none).
    #[arg(long, value_name = "MS", default_value_t = 50, requires = "gdbserver")]
    checkpoint_interval: u64,
}

pub fn run(a: Args) -> Result<i32> {
    if let Some(listen) = a.gdbserver {
        return crate::gdb::serve_replay(crate::gdb::ServerArgs {
            trace: a.trace,
            listen,
            debug: a.debug,
            goto: a.goto,
            pid: a.pid,
            no_pin: a.no_pin,
            checkpoint_interval: a.checkpoint_interval,
        });
    }
    let resolved = traces::resolve(a.trace)?;
    let total = Trace::peek(&resolved.dir).ok().and_then(|(_, s)| s).map(|s| s.events);
    let _progress = Progress::start("replayed", total);
    let opts = ReplayOptions {
        trace_dir: resolved.dir.clone(),
        pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
        echo_output: !a.quiet,
    };
    if let Some(binary) = a.debug {
        return replay_debug(opts, binary, a.region_timeout);
    }
    let out = replay(&opts, &mut NoObserver)?;
    if a.quiet {
        eprintln!("rdb: replayed {} events", out.events);
    }
    Ok(0)
}

fn replay_debug(replay: ReplayOptions, binary: PathBuf, timeout: f64) -> Result<i32> {
    let host = HostOptions { timeout: region_timeout(timeout)?, ..HostOptions::default() };
    let trace_dir = replay.trace_dir.clone();
    let out = match replay_with_regions(DebugReplayOptions { replay, binary: binary.clone(), host }) {
        Ok(out) => out,
        Err(e @ DebugError::BinaryMismatch { .. }) => return Err(crate::why::explain_mismatch(e, &trace_dir, &binary)),
        // Keep the engine's error as is so its exit code (divergence, ends early) applies.
        Err(DebugError::Replay(e)) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    };
    Ok(out.report.print("replay"))
}

/// `--region-timeout SECS` as a duration.
pub fn region_timeout(secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs).map_err(|e| anyhow::anyhow!("--region-timeout: {e}"))
}
