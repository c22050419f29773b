//! Software-only ptrace record/replay engine and trace format.
//!
//! Module guide:
//! - [`record`] runs a program under ptrace and writes a trace directory; [`replay`] re-runs it
//!   from the trace, checking every syscall. They mirror each other.
//! - [`syscalls`] is the syscall table (policy + memory effects per number, as data);
//!   [`effects`] turns it into concrete memory ranges.
//! - [`trace`] is the on-disk format and its one codec (versioned header, zstd chunks of events
//!   bound together by a digest chain, kept files, packs).
//! - [`process`] holds tracee operations both sides need (syscall injection, initial stack,
//!   `rdtsc` emulation). Every system call on a tracee goes through the tracee layer,
//!   `rdb_tracee` (ptrace, `/proc`, memory, the stopped-target traits); the engine itself has
//!   no `unsafe` code beyond handing `rdb_tracee::ptrace::child_prepare_for_trace` to
//!   `pre_exec`.
//! - [`observer`] is the hook a debugger uses during replay: learn each exec'ed image, set
//!   breakpoints, get called with the tracee stopped (at breakpoints, and at the system calls
//!   it asks for, served from the stops the replayer makes anyway); [`payload`] says what a
//!   system call moved (event callbacks' data).
//! - [`session`] is the replay a debugger drives ([`Session`]): halts, every thread readable,
//!   breakpoints and watchpoints; [`replay()`] runs on it. [`position`] names points without
//!   counters, [`checkpoint`] saves the whole replay (fork-based), going back (`reverse`) uses
//!   both, and [`diversion`] runs debugger code in a disposable copy of a process. See
//!   `docs/ARCHITECTURE.md` (the replay session, gdb and time travel).
//!
//! Linux x86-64 only. No hardware performance counters are used.
//!
//! # Threads: serialized, syscall-boundary scheduling
//!
//! Without instruction counters a thread cannot be preempted at a chosen instruction, so the
//! engine does what Jockey does: within a process (thread group) **one thread runs user code
//! at a time**, and the recorder switches threads **at syscall boundaries**, or, for a thread
//! that spins waiting for another one, at an *interruption point* that replay finds again by
//! registers and stack (module [`interrupt`]; asynchronous signals use such points too). The trace is
//! the schedule: every event names its (recorded) thread, and the order of events is the order
//! in which threads had their turns.
//!
//! Recording ([`record()`]): a thread's turn starts when the recorder logs the event that lets it
//! run (the exit of its syscall, or `ThreadStart` for a new thread) and ends at its next
//! syscall entry where it gives the turn up, or at a syscall exit where it is switched out.
//! - Calls that may wait for another thread or the outside world (futex waits, reads, poll,
//!   sleeps, `wait4`, `sched_yield`, ...) give the turn up at entry: the call really runs in the
//!   kernel while another thread runs; its exit waits for a turn, and its result and memory
//!   effects are logged then. Any other call that has not returned after 2 ms is treated the
//!   same way, unless replay re-executes it (mmap, clone, ...): those keep the turn so that
//!   address-space changes happen in the same order at replay. A thread's `exit` keeps the turn
//!   until the thread is gone (its `CLONE_CHILD_CLEARTID` word is cleared before a joiner runs).
//! - Time slice: at a syscall exit, a thread that has had the turn longer than
//!   [`Schedule::slice`] (1 ms) is switched out when another thread is ready, so that
//!   load/syscall/store races lose updates as they do natively. With [`Schedule::chaos`]
//!   (`rdb record --chaos [--seed N]`, seed stored in the trace header) each syscall exit is a
//!   switch point with probability 1/4 and the next thread is picked at random (xorshift64).
//! - Waiting with timeouts: a helper thread blocks in `waitid(WNOWAIT)` and only signals that a
//!   status is ready; the tracer thread collects it with `WNOHANG`, so its own synchronous waits
//!   (syscall injection) are never robbed. With no deadline pending it simply blocks in
//!   `waitpid`.
//! - Preemption in user code: a thread that runs user code for [`Schedule::preempt`] (20 ms)
//!   without a syscall while others of its process wait is switched out at an interruption
//!   point when its loop is one that waits (see [`interrupt`]).
//! - Watchdog: a thread that runs user code for [`Schedule::watchdog`] (10 s) without a
//!   syscall while others of its process wait is stopped with SIGSTOP to read its pc; rdb warns
//!   (thread, pc, `file:line` from DWARF), and after a second period stops the recording with
//!   [`Error::Spinning`]. **Limit**: a thread that spins on memory until another thread acts,
//!   where no exact interruption point is found (its loop changes more memory than a point's
//!   key holds), cannot progress under this scheduler; long pure computations only get the
//!   warning.
//!
//! Replay ([`replay()`]): stops are handled strictly in trace order. A thread that reaches its
//! next event early waits, stopped. A thread is only resumed into user code (exit, signal,
//! `rdtsc`, `ThreadStart`) when no other thread of its process is running user code or a
//! re-executed syscall; syscall entries are handled at once (they run nothing of the program).
//! Emulated calls, futexes included, are skipped and get their recorded results: the recorded
//! order already says who woke whom, so nothing blocks at replay and no kernel futex state has
//! to be rebuilt (re-executing them would need the waiters parked in the kernel in the recorded
//! order; not implemented, not needed by any program tested).
//! Processes that share memory (`MAP_SHARED` mappings of one file, or anonymous shared memory
//! inherited across `fork`) are scheduled the same way, as one *unit* (module `share`): the
//! recorder and the replayer decide from the same calls which processes form a unit, and replay
//! maps one copy of each shared file into every process that maps it (module `shared_map`).
//! Thread ids are virtualised: the program sees recorded ids (gettid, clone and
//! set_tid_address results come from the trace; the `CLONE_PARENT_SETTID`/`CHILD_SETTID`
//! words are rewritten with the recorded id when the thread is created; `tgkill`/`tkill` are
//! emulated and their signals delivered from the trace). Not yet translated: PI/robust futex
//! owner words written by the kernel (robust mutexes whose owner dies), `/proc/self/task`
//! listings.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

pub mod checkpoint;
pub mod clock;
mod count_stub;
pub mod cpuid;
mod displace;
pub mod diversion;
pub mod effects;
mod fork;
pub mod interrupt;
mod location;
pub mod observer;
pub mod payload;
mod point_stub;
pub mod position;
pub mod process;
pub mod record;
pub mod replay;
mod reverse;
pub mod session;
mod share;
mod shared_map;
mod stall;
pub mod syscalls;
pub mod trace;

use std::io;
use std::path::PathBuf;

use rdb_tracee::Pid;

/// The calling process's CPU placement, TSC switch and clocks (`rdb_tracee::this_process`).
pub use rdb_tracee::this_process as sys;

pub use diversion::{Diversion, DiversionStop};
pub use observer::{BreakpointStop, NoObserver, ProcessImage, ReplayObserver, SyscallStop};
pub use position::{Move, Position};
pub use record::{record, record_with, RecordOptions, RecordOutcome, Schedule};
pub use replay::{replay, Divergence, ReplayOptions, ReplayOutcome};
pub use session::{Resume, Session, SessionStop, ThreadInfo, ThreadView};
pub use trace::{Trace, TraceError};

/// Errors of recording and replaying.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("cannot start {program}")]
    Spawn { program: String, source: io::Error },
    #[error("tracing pid {pid} failed ({what})")]
    Ptrace { pid: Pid, what: &'static str, source: io::Error },
    #[error("unsupported syscall `{name}` (number {nr}) in pid {pid}: {why}")]
    UnsupportedSyscall { pid: Pid, nr: u64, name: String, why: &'static str },
    #[error("unsupported in pid {pid}: {what}")]
    Unsupported { pid: Pid, what: String },
    #[error("thread {tid} ran user code for {secs} s without a syscall at pc {pc:#x}{} while {waiting} other thread(s) waited for their turn: rdb switches threads at syscalls, or in user code at a point replay can find again, and found none here, so a thread spinning until another one acts never ends under rdb (add a syscall such as sched_yield to the spin loop)", location.as_ref().map(|l| format!(" ({l})")).unwrap_or_default())]
    Spinning { tid: Pid, pc: u64, location: Option<String>, waiting: usize, secs: u64 },
    /// The current hash is never shown: a crafted trace must not make replay an oracle for
    /// the contents of files.
    #[error("{path} changed since it was recorded (blake3 {recorded} then); replay needs the same file")]
    FileChanged { path: PathBuf, recorded: String },
    #[error("the trace's copy of {path} ({kept}) changed since it was recorded (blake3 {recorded} then): it is a hard link to the original, which was rewritten in place since; record with `--keep-files copy` to be safe from that")]
    KeptFileChanged { path: PathBuf, kept: PathBuf, recorded: String },
    #[error("{path} changed since it was recorded (blake3 {recorded} then); the kernel loads it by its path (a script's interpreter or the dynamic loader), so replay needs the same file there: replay on a machine where it is the recorded one")]
    LoadedFileChanged { path: PathBuf, recorded: String },
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
    pub(crate) fn ptrace(pid: Pid, what: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Ptrace { pid, what, source }
    }
}
