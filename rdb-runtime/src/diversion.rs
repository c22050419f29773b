//! Diversions: a disposable copy of the debugged process, made at a halt, where a debugger may
//! change registers and memory and run code (gdb's `print f(x)`), then thrown away. The replay
//! itself is untouched, so it goes on exactly as recorded afterwards.
//!
//! The copy is a fork of the process (see `fork`): one thread, standing for the recorded
//! thread the debugger chose, with its registers; memory copy-on-write. It runs under ptrace
//! with every syscall trapped: a syscall would reach the world outside the replay (files,
//! other processes) or need the trace, which has nothing for code the recording never ran, so
//! it is never run; the diversion reports it and runs no further.
//!
//! Writable shared memory (`MAP_SHARED`) is shared with the copy too, where a write would
//! change the replay: a process with such mappings gets no diversion.

use std::io;

use rdb_tracee::ptrace::{self, FpRegs, Regs};
use rdb_tracee::{Control, Memory, Pid, Stop, Target, Thread};

use crate::trace::Tid;
use crate::Error;

/// Why a diversion stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiversionStop {
    /// At one of its breakpoints, before the instruction at `addr`.
    Breakpoint(u64),
    /// One instruction was run.
    Stepped,
    /// A signal stopped it (a fault; a return to a non-executable address).
    Signal(i32),
    /// It tried this syscall, which was not run: the diversion cannot go further.
    Syscall(u64),
    /// The copy is gone, with this raw wait status.
    Exited(i32),
}

/// A disposable copy of the debugged process (see the module docs).
pub struct Diversion {
    thread: Thread,
    copy: Pid,
    /// The recorded thread the copy's thread stands for.
    tid: Tid,
    /// It ran code at least once.
    ran: bool,
    /// The syscall it stopped at, after which it runs no further.
    syscall: Option<u64>,
}

impl Diversion {
    /// Take over `copy`, a fork of the process of the replay's thread `tid` (see
    /// `Session::divert`).
    pub(crate) fn new(tid: Tid, copy: Pid) -> Result<Diversion, Error> {
        let thread = match Thread::new(copy, copy) {
            Ok(t) => t,
            Err(e) => {
                crate::fork::discard(copy);
                return Err(Error::ptrace(copy, "taking the diversion's thread")(e));
            }
        };
        let mut d = Diversion { thread, copy, tid, ran: false, syscall: None };
        d.thread.trap_syscalls();
        Ok(d)
    }

    /// The recorded thread the copy stands for.
    pub fn tid(&self) -> Tid {
        self.tid
    }

    /// The copy's real process id.
    pub fn pid(&self) -> Pid {
        self.copy
    }

    /// The copy's registers.
    pub fn regs(&self) -> &Regs {
        self.thread.regs()
    }

    /// The copy's x87/SSE state.
    pub fn fpregs(&self) -> io::Result<FpRegs> {
        ptrace::get_fpregs(self.copy)
    }

    pub fn write_regs(&mut self, regs: &Regs) -> io::Result<()> {
        self.thread.write_regs(regs)
    }

    pub fn write_fpregs(&mut self, fp: &FpRegs) -> io::Result<()> {
        self.thread.write_fpregs(fp)
    }

    pub fn write_memory(&mut self, addr: u64, data: &[u8]) -> io::Result<()> {
        self.thread.write_memory(addr, data)
    }

    pub fn set_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        self.thread.set_breakpoint(addr)
    }

    pub fn remove_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        self.thread.remove_breakpoint(addr)
    }

    /// Whether the copy ran code.
    pub fn ran(&self) -> bool {
        self.ran
    }

    /// It stopped at a syscall and runs no further.
    pub fn abandoned(&self) -> bool {
        self.syscall.is_some()
    }

    /// Run the copy until its next stop (one instruction with `step`), delivering `sig` (0:
    /// none) first.
    pub fn resume(&mut self, step: bool, sig: i32) -> io::Result<DiversionStop> {
        if let Some(nr) = self.syscall {
            return Ok(DiversionStop::Syscall(nr));
        }
        self.ran = true;
        self.thread.set_pending_signal(sig);
        let stop = if step { self.thread.step()? } else { self.thread.resume()? };
        Ok(match stop {
            Stop::Breakpoint { addr } => DiversionStop::Breakpoint(addr),
            Stop::Stepped | Stop::Watchpoint { .. } => DiversionStop::Stepped,
            Stop::Signal(sig) => DiversionStop::Signal(sig),
            Stop::Syscall { nr, .. } => {
                // Never run: the thread stays at the entry stop, the call abandoned.
                self.syscall = Some(nr);
                DiversionStop::Syscall(nr)
            }
            Stop::Exited(status) => DiversionStop::Exited(status),
        })
    }
}

impl Memory for Diversion {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.thread.read_memory(addr, buf)
    }
}

impl Drop for Diversion {
    fn drop(&mut self) {
        crate::fork::discard(self.copy);
    }
}
