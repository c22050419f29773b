//! `rdb replay`.

use std::path::PathBuf;

use anyhow::Result;
use std::time::Duration;

use rdb_debugger::{replay_with_regions, DebugError, DebugReplayOptions};
use rdb_host::HostOptions;
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
    /// Run the debug regions of this rebuilt binary (from `cargo rdb build` or `rdb-clang`; its
    /// `.rdb.so` and descriptor files sit beside it). It must be byte-identical to the recorded
    /// executable.
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
    let dir = traces::resolve(a.trace)?;
    let opts = ReplayOptions {
        trace_dir: dir,
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

/// Exit code of a replay that completed but some region calls did not (each was reported).
pub const EXIT_REGION_PROBLEMS: i32 = 5;

fn replay_debug(replay: ReplayOptions, binary: PathBuf, timeout: f64) -> Result<i32> {
    let host = HostOptions {
        timeout: Duration::try_from_secs_f64(timeout).map_err(|e| anyhow::anyhow!("--region-timeout: {e}"))?,
        ..HostOptions::default()
    };
    let out = match replay_with_regions(DebugReplayOptions { replay, binary, host }) {
        Ok(out) => out,
        // Keep the engine's error as is so its exit code (divergence, ends early) applies.
        Err(DebugError::Replay(e)) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    };
    for (region, why) in &out.regions_without_location {
        eprintln!("rdb: warning: region {region} cannot run: {why}");
    }
    for region in &out.regions_never_hit {
        eprintln!("rdb: note: region {region} was never reached in this replay");
    }
    for callback in &out.callbacks_never_called {
        eprintln!("rdb: note: callback {callback} was never called in this replay");
    }
    if out.problems > 0 {
        eprintln!(
            "rdb: {} of {} debug calls (regions and callbacks) did not complete cleanly (see the warnings above)",
            out.problems, out.calls
        );
        return Ok(EXIT_REGION_PROBLEMS);
    }
    Ok(0)
}
