//! `rdb gdb` (gdb started attached to a replay, like `rr replay`) and `rdb replay
//! --gdbserver` (a replay waiting for gdb, for IDEs and `target extended-remote`).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rdb_debugger::RegionObserver;
use rdb_gdb::{start_debugging, Ended, ServeError, StartAt};
use rdb_host::HostOptions;
use rdb_runtime::trace::Tid;
use rdb_runtime::{NoObserver, ReplayObserver, ReplayOptions, Session};

use crate::traces;

/// Debug a replay with gdb: gdb starts attached to the recorded execution, with breakpoints,
/// watchpoints, stepping and `print f(x)`; the debug regions of `--debug BINARY` run too.
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory (default: the latest recording).
    trace: Option<PathBuf>,
    /// Run the debug regions of this rebuilt binary during the replay (see `rdb replay --debug`).
    #[arg(long, value_name = "BINARY")]
    debug: Option<PathBuf>,
    /// Start at this event index (`rdb info --events` lists them) instead of the first
    /// instruction.
    #[arg(long, value_name = "EVENT")]
    goto: Option<u64>,
    /// Debug this recorded process (default: the one the recording started); the others replay
    /// alongside.
    #[arg(long, value_name = "RECORDED-PID")]
    pid: Option<u32>,
    /// Do not pin the replayer and the program to one CPU.
    #[arg(long)]
    no_pin: bool,
    /// Milliseconds of replay between automatic checkpoints (0: none, going back replays from
    /// the start).
    #[arg(long, value_name = "MS", default_value_t = 50)]
    checkpoint_interval: u64,
    /// Arguments for gdb (after `--`).
    #[arg(last = true, value_name = "GDB-ARGS")]
    gdb_args: Vec<String>,
}

/// Where a `--gdbserver` replay listens, and how it starts (used by `rdb replay`).
pub struct ServerArgs {
    pub trace: Option<PathBuf>,
    pub listen: String,
    pub debug: Option<PathBuf>,
    pub goto: Option<u64>,
    pub pid: Option<u32>,
    pub no_pin: bool,
    pub checkpoint_interval: u64,
}

/// The replay of the trace named on the command line; the resolved trace must outlive it (a
/// packed trace is unpacked into a directory that goes away with it).
fn replay_options(trace: Option<PathBuf>, no_pin: bool) -> Result<(ReplayOptions, traces::Resolved)> {
    let resolved = traces::resolve(trace)?;
    let opts = ReplayOptions {
        trace_dir: resolved.dir.clone(),
        pin_cpu: !no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
        echo_output: true,
    };
    Ok((opts, resolved))
}

/// The regions of `--debug BINARY`, or none.
fn observer(opts: &ReplayOptions, debug: Option<&PathBuf>) -> Result<Box<dyn ReplayObserver>> {
    Ok(match debug {
        Some(binary) => Box::new(RegionObserver::new(opts, binary, HostOptions::default())?),
        None => Box::new(NoObserver),
    })
}

/// Start the replay and run it to where gdb starts.
fn prepare<'o>(
    opts: &ReplayOptions,
    observer: Box<dyn ReplayObserver + 'o>,
    pid: Option<u32>,
    goto: Option<u64>,
    interval_ms: u64,
) -> Result<Session<'o>> {
    let mut session = Session::start(opts, observer)?;
    let checkpoint_interval = (interval_ms > 0).then(|| Duration::from_millis(interval_ms));
    start_debugging(&mut session, Some(&StartAt { process: pid.map(Tid), event: goto, checkpoint_interval }))?;
    Ok(session)
}

/// gdb's Ctrl-C reaches the whole foreground process group; rdb hears of it from gdb (an
/// interrupt packet) and must not die of it.
fn ignore_sigint() {
    // SAFETY: sets the disposition of one signal to "ignore"; no handler runs.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
}

fn finish(ended: Ended) -> i32 {
    match ended {
        Ended::Disconnected | Ended::Killed => 0,
    }
}

pub fn run(a: Args) -> Result<i32> {
    let (opts, _trace) = replay_options(a.trace, a.no_pin)?;
    let session = prepare(&opts, observer(&opts, a.debug.as_ref())?, a.pid, a.goto, a.checkpoint_interval)?;
    run_gdb(session, &a.gdb_args)
}

/// Start gdb on a session halted where gdb is to start, and serve it until it goes away.
pub fn run_gdb(session: Session<'_>, gdb_args: &[String]) -> Result<i32> {
    let exe = session.image().map(|i| i.exe).context("the debugged process runs no executable")?;
    let listener = TcpListener::bind("127.0.0.1:0").context("listening for gdb")?;
    let port = listener.local_addr()?.port();
    ignore_sigint();
    let mut gdb = Command::new(std::env::var_os("RDB_GDB").unwrap_or_else(|| "gdb".into()));
    gdb.arg("-q")
        // Files are read where the replay reads them, not through the connection.
        .args(["-ex", "set sysroot /"])
        // A signal inside a function called from gdb (a system call in a diversion) unwinds
        // the call, which ends the diversion (see rdb-gdb's diversion module).
        .args(["-ex", "set unwindonsignal on"])
        .arg("-ex")
        .arg(format!("target extended-remote 127.0.0.1:{port}"))
        .args(gdb_args)
        .arg(&exe);
    let mut child = session.with_tsc(|| gdb.spawn()).context("starting gdb (set RDB_GDB to use another one)")?;
    let stream = accept_from(&listener, &mut child)?;
    let served = serve(session, stream);
    // gdb ends by itself once the connection is gone; the replay may already have reaped it.
    let status = child.wait().ok().and_then(|s| s.code()).unwrap_or(0);
    let ended = served?;
    Ok(if status != 0 { status } else { finish(ended) })
}

/// The connection of the gdb we started, or an error if it exits without connecting.
fn accept_from(listener: &TcpListener, child: &mut std::process::Child) -> Result<TcpStream> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(status) = child.try_wait()? {
                    bail!("gdb exited ({status}) without connecting to the replay");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e).context("accepting gdb's connection"),
        }
    }
}

/// `rdb replay --gdbserver [HOST:]PORT`.
pub fn serve_replay(a: ServerArgs) -> Result<i32> {
    let (opts, _trace) = replay_options(a.trace, a.no_pin)?;
    let session = prepare(&opts, observer(&opts, a.debug.as_ref())?, a.pid, a.goto, a.checkpoint_interval)?;
    let listen = if a.listen.contains(':') { a.listen.clone() } else { format!("127.0.0.1:{}", a.listen) };
    let listener = TcpListener::bind(&listen).with_context(|| format!("listening on {listen}"))?;
    let addr = listener.local_addr()?;
    let exe = session.image().map(|i| i.exe.display().to_string()).unwrap_or_default();
    eprintln!("rdb: waiting for gdb on {addr}: gdb {exe} -ex 'target extended-remote {addr}'");
    ignore_sigint();
    let (stream, _) = listener.accept().context("accepting gdb's connection")?;
    Ok(finish(serve(session, stream)?))
}

/// Serve gdb; a replay error gdb met (a divergence, a trace that ends early) is the engine's
/// own, so that its exit status applies (`rdb gdb` then exits 3 or 4, not 0).
fn serve(session: Session<'_>, stream: TcpStream) -> Result<Ended> {
    match rdb_gdb::serve(session, stream) {
        Err(ServeError::Replay(e)) => Err(e.into()),
        other => Ok(other?),
    }
}
