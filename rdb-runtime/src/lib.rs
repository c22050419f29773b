//! Software-only ptrace record/replay engine and trace format.
//!
//! Module guide:
//! - [`record`] runs a program under ptrace and writes a trace directory; [`replay`] re-runs it
//!   from the trace, checking every syscall. They mirror each other.
//! - [`syscalls`] is the syscall table (policy + memory effects per number, as data);
//!   [`effects`] turns it into concrete memory ranges.
//! - [`trace`] is the on-disk format (versioned header, checksummed zstd chunks of events).
//! - [`process`] holds tracee operations both sides need (syscall injection, initial stack,
//!   `rdtsc` emulation); [`sys`] holds every `unsafe` call.
//! - [`observer`] is the hook a debugger uses during replay: learn each exec'ed image, set
//!   breakpoints, get called with the tracee stopped.
//!
//! Linux x86-64 only. No hardware performance counters are used.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

pub mod effects;
mod location;
pub mod observer;
pub mod process;
pub mod record;
pub mod replay;
pub mod sys;
pub mod syscalls;
pub mod trace;

use std::io;
use std::path::PathBuf;

pub use effects::TargetMemory;
pub use observer::{BreakpointStop, NoObserver, ProcessImage, ReplayObserver, StoppedTarget};
pub use record::{record, record_with, RecordOptions, RecordOutcome, Schedule};
pub use replay::{replay, Divergence, ReplayOptions, ReplayOutcome};
pub use trace::{TraceError, TraceReader};

/// Errors of recording and replaying.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("cannot start {program}")]
    Spawn { program: String, source: io::Error },
    #[error("tracing pid {pid} failed ({what})")]
    Ptrace { pid: i32, what: &'static str, source: io::Error },
    #[error("unsupported syscall `{name}` (number {nr}) in pid {pid}: rdb cannot record it yet")]
    UnsupportedSyscall { pid: i32, nr: u64, name: String },
    #[error("unsupported in pid {pid}: {what}")]
    Unsupported { pid: i32, what: String },
    #[error("thread {tid} ran user code for {secs} s without a syscall at pc {pc:#x}{} while {waiting} other thread(s) waited for their turn: rdb switches threads only at syscalls, so a thread spinning until another one acts never ends under rdb (add a syscall such as sched_yield to the spin loop)", location.as_ref().map(|l| format!(" ({l})")).unwrap_or_default())]
    Spinning { tid: i32, pc: u64, location: Option<String>, waiting: usize, secs: u64 },
    #[error("{path} changed since it was recorded (blake3 {recorded} then, {now} now); replay needs the same file")]
    FileChanged { path: PathBuf, recorded: String, now: String },
    #[error("{path} is needed but cannot be read")]
    FileMissing { path: PathBuf, source: io::Error },
    #[error("{0}")]
    Divergence(Box<Divergence>),
    #[error("the trace ends early after {events} events (the recording was cut short); replayed up to there")]
    EndsEarly { events: u64 },
    #[error("replay observer failed: {0}")]
    Observer(String),
}

impl Error {
    pub(crate) fn ptrace(pid: i32, what: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Ptrace { pid, what, source }
    }
}
