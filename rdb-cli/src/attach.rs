//! `rdb attach --remote`: run debug regions on a program stopped in a GDB stub.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use rdb_debugger::{run_on_target, AttachOptions};
use rdb_host::HostOptions;
use rdb_remote::{RemoteOptions, RemoteTarget};

use crate::replay::region_timeout;

/// Run the debug regions of a rebuilt binary on a program stopped in a GDB stub (gdbserver,
/// `qemu-x86_64 -g`, rr, `rdb replay --gdbserver`), until the program exits.
#[derive(clap::Args)]
pub struct Args {
    /// The stub's address, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    remote: String,
    /// The rebuilt binary (from `cargo rdb build` or `rdb-clang`; its `.rdb.so` and descriptor
    /// files sit beside it). It must be byte-identical to the executable the stub runs.
    #[arg(long, value_name = "BINARY")]
    debug: PathBuf,
    /// A local copy of the executable the stub runs, for the identity check (default: the
    /// path the stub names, if this machine has it; else the stub's loaded code is compared).
    #[arg(long, value_name = "PATH")]
    exe: Option<PathBuf>,
    /// Seconds one region call may run before it is stopped and reported.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    region_timeout: f64,
    /// Seconds the stub may take to answer one request (the program itself may run as long as
    /// it runs; the stub closing the connection ends the wait at once).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
}

pub fn run(a: Args) -> Result<i32> {
    let timeout = Duration::try_from_secs_f64(a.timeout).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    let options = RemoteOptions { address: a.remote.clone(), timeout, binary: a.debug.clone() };
    let mut target = RemoteTarget::connect(&options)?;
    let exe = match a.exe {
        Some(exe) => Some(exe),
        // The stub's path, when this machine has that file.
        None => target.exec_file().filter(|p| p.is_file()).map(|p| p.to_path_buf()),
    };
    let host = HostOptions { timeout: region_timeout(a.region_timeout)?, pages_per_fill: 1, ..HostOptions::default() };
    let result = run_on_target(&mut target, AttachOptions { binary: a.debug, exe, host });
    for note in target.take_notes() {
        eprintln!("rdb: note: {note}");
    }
    let out = result.with_context(|| format!("running regions on the program of the stub at {}", a.remote))?;
    Ok(out.report.print("run"))
}
