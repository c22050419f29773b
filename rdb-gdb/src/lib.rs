//! gdb on a replay: a GDB remote protocol server over [`rdb_runtime::Session`].
//!
//! `rdb replay --gdbserver` and `rdb gdb` (the latter also starts gdb attached) serve one gdb
//! connection with [`serve`]. gdb debugs one process of the recording (the root process, or
//! the one `--pid` names); the other processes replay alongside. The replay is never changed:
//! writes are refused with a message saying what to do instead (see [`target::REFUSED_WRITE`]).
//!
//! Module guide:
//! - [`arch`]: the x86-64 Linux registers and target description (`fs_base` included);
//! - [`target`]: gdbstub's target over the session (registers, memory, threads, breakpoints,
//!   watchpoints, resume and step, auxv, libraries, exec file, host I/O);
//! - [`svr4`]: the library list from the program's own `link_map`; [`tls`]: thread-locals;
//! - [`conn`]: the socket between gdb and gdbstub (interrupts, packets rdb answers itself);
//! - [`diversion`]: gdb's inferior calls, run in a disposable copy of the process;
//! - [`commands`]: `monitor` commands (`when`, ...).

pub mod arch;
pub mod commands;
pub mod conn;
pub mod diversion;
pub mod svr4;
pub mod target;
pub mod tls;

use std::net::TcpStream;

use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::{DisconnectReason, GdbStub, MultiThreadStopReason};
use rdb_runtime::trace::Tid;
use rdb_runtime::{Resume, Session, SessionStop};

pub use target::{ReplayTarget, ServeError};

use conn::{Incoming, Writer};

/// Where gdb starts.
#[derive(Debug, Clone)]
pub struct StartAt {
    /// The recorded process to debug (default: the root process).
    pub process: Option<Tid>,
    /// Replay up to this event index first (`rdb info --events` lists them).
    pub event: Option<u64>,
    /// How often (in replay time) a checkpoint is taken for going back; `None`: at the start
    /// only (and where `monitor checkpoint` asks).
    pub checkpoint_interval: Option<std::time::Duration>,
}

/// The default time between automatic checkpoints.
pub const DEFAULT_CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Replay up to where gdb starts: the debugged process's first instruction after its first
/// exec, or the first halt at or after `--goto`'s event. The session is halted there.
pub fn start_debugging(session: &mut Session<'_>, at: Option<&StartAt>) -> Result<(), ServeError> {
    let process = at.and_then(|a| a.process).unwrap_or(session.root());
    session.set_focus(Some(process));
    // History for going back: a checkpoint here, at the start, and more as the replay goes.
    let interval = at.map_or(Some(DEFAULT_CHECKPOINT_INTERVAL), |a| a.checkpoint_interval);
    session.enable_history(interval)?;
    if !session.has_process(process) {
        // Not there yet: halt at its first point of its own.
        session.goto(0);
        match session.resume(Resume::Continue)? {
            SessionStop::Reached { .. } => {}
            SessionStop::End => {
                return Err(ServeError::Protocol(format!(
                    "process {process} never ran an executable in this recording (see `rdb info --events` for the processes)"
                )))
            }
            other => return Err(ServeError::Protocol(format!("unexpected halt before process {process} started: {other:?}"))),
        }
    }
    if let Some(event) = at.and_then(|a| a.event) {
        session.goto(event);
        match session.resume(Resume::Continue)? {
            SessionStop::Reached { .. } => {}
            SessionStop::ProcessExited { .. } | SessionStop::End => {
                return Err(ServeError::Protocol(format!(
                    "process {process} has no event at or after event {event} (it exited before)"
                )))
            }
            other => return Err(ServeError::Protocol(format!("unexpected halt before event {event}: {other:?}"))),
        }
    }
    session.stop_at_faults(true);
    Ok(())
}

/// How a gdb session ended.
#[derive(Debug)]
pub enum Ended {
    /// gdb detached or disconnected.
    Disconnected,
    /// gdb killed the program (`kill`, or quit).
    Killed,
}

/// Serve one gdb connection on `stream` until gdb goes away. The session must be halted where
/// gdb is to start (see [`start_debugging`]). A replay error met on the way (gdb is told the
/// program was killed and may still look around) is returned once gdb goes away.
pub fn serve(session: Session<'_>, stream: TcpStream) -> Result<Ended, ServeError> {
    stream.set_nodelay(true)?;
    let mut target = ReplayTarget::new(session);
    let interrupt = target.session.interrupter();
    let mut reader = conn::spawn_reader(stream.try_clone()?, interrupt.clone())?;
    let writer = Writer::new(stream);
    let stub = GdbStub::builder(writer).build().map_err(|e| ServeError::Protocol(e.to_string()))?;
    let mut gdb = stub.run_state_machine(&mut target).map_err(|e| ServeError::Protocol(e.to_string()))?;
    let protocol = |e: gdbstub::stub::GdbStubError<ServeError, std::io::Error>| ServeError::Protocol(e.to_string());
    // The first replay error (a divergence, a trace that ends early): what the session ends with.
    let mut failure: Option<rdb_runtime::Error> = None;
    let ended = |how: Ended, failure: Option<rdb_runtime::Error>| match failure {
        Some(e) => Err(ServeError::Replay(e)),
        None => Ok(how),
    };
    loop {
        gdb = match gdb {
            GdbStubStateMachine::Idle(mut g) => match reader.next(true) {
                None => return ended(Ended::Disconnected, failure),
                Some(Incoming::Own(body)) => {
                    let reply = commands::own_packet(&mut target, &body);
                    g.borrow_conn().send_own(&reply)?;
                    GdbStubStateMachine::Idle(g)
                }
                Some(Incoming::Bytes(bytes)) => {
                    note_packets(g.borrow_conn(), &bytes);
                    let mut state = GdbStubStateMachine::Idle(g);
                    for b in bytes {
                        state = feed(state, &mut target, b).map_err(protocol)?;
                    }
                    state
                }
            },
            GdbStubStateMachine::Running(g) => {
                // The replay runs here; gdb's Ctrl-C reaches it through the reader's flag.
                let reason = match target.run() {
                    Ok(reason) => reason,
                    Err(e) => {
                        eprintln!("rdb: error: {e}");
                        target.exited = true;
                        // gdb may still look at the stopped state; the error is the session's
                        // outcome once gdb goes away (a divergence must not end with status 0).
                        if let (None, ServeError::Replay(e)) = (&failure, e) {
                            failure = Some(e);
                        }
                        MultiThreadStopReason::Terminated(gdbstub::common::Signal::SIGKILL)
                    }
                };
                interrupt.store(false, std::sync::atomic::Ordering::SeqCst);
                let mut state = GdbStubStateMachine::Running(g);
                // A Ctrl-C that came meanwhile is answered by this stop.
                while let Some(Incoming::Bytes(bytes)) = reader.next(false) {
                    if bytes.is_empty() {
                        break;
                    }
                    for b in bytes {
                        state = feed(state, &mut target, b).map_err(protocol)?;
                    }
                }
                match state {
                    GdbStubStateMachine::Running(g) => g.report_stop(&mut target, reason).map_err(protocol)?,
                    GdbStubStateMachine::CtrlCInterrupt(g) => {
                        g.interrupt_handled(&mut target, Some(reason)).map_err(protocol)?
                    }
                    other => other,
                }
            }
            GdbStubStateMachine::CtrlCInterrupt(g) => {
                // Interrupted while halted: report the halt as an interrupt.
                let tid = target.current_thread().unwrap_or(Tid(1));
                let reason = target.stop_reason(SessionStop::Interrupted { tid });
                g.interrupt_handled(&mut target, Some(reason)).map_err(protocol)?
            }
            GdbStubStateMachine::Disconnected(g) => match g.get_reason() {
                // The debugged process exited: gdb stays connected (extended mode) and may
                // `run` it again.
                DisconnectReason::TargetExited(_) | DisconnectReason::TargetTerminated(_) => g.return_to_idle(),
                DisconnectReason::Kill => return ended(Ended::Killed, failure),
                DisconnectReason::Disconnect => return ended(Ended::Disconnected, failure),
            },
        };
    }
}

/// Feed one byte to gdbstub in whatever state it is.
fn feed<'a, 'o>(
    state: GdbStubStateMachine<'a, ReplayTarget<'o>, Writer>,
    target: &mut ReplayTarget<'o>,
    byte: u8,
) -> Result<GdbStubStateMachine<'a, ReplayTarget<'o>, Writer>, gdbstub::stub::GdbStubError<ServeError, std::io::Error>>
{
    match state {
        GdbStubStateMachine::Idle(g) => g.incoming_data(target, byte),
        GdbStubStateMachine::Running(g) => g.incoming_data(target, byte),
        other => Ok(other),
    }
}

/// The connection's bookkeeping of packets gdbstub is about to get.
fn note_packets(writer: &mut Writer, bytes: &[u8]) {
    for body in conn::packets_in(bytes) {
        if body.starts_with(b"qSupported") {
            writer.supported_reply = true;
        }
        if body.starts_with(b"QStartNoAckMode") {
            writer.acks = false;
        }
    }
}
