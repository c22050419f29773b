//! gdb's inferior calls (`print f(x)`, `call f(x)`) in a diversion: a disposable copy of the
//! debugged process (see `rdb_runtime::diversion`), never in the replay.
//!
//! What gdb 13 sends around an inferior call (seen with `set debug remote 1` against
//! gdbserver and against rdb): it reads `$_siginfo` (`qXfer:siginfo:read`) to save it, writes
//! the call's registers (`G`/`P`) and memory (the return address and, for an on-stack dummy
//! frame, an `int3` byte below the stack pointer), inserts its breakpoints (`Z0`, the dummy
//! frame's included), resumes, gets the stop at the dummy frame (a `SIGTRAP`, or a `SIGSEGV` when
//! the dummy frame is on a non-executable stack), reads the return value, writes `$_siginfo`
//! back (`qXfer:siginfo:write`) and then writes back every register it changed.
//!
//! So, as rr does: reading `$_siginfo` arms a call (calls nest: gdb calls `malloc` to place a
//! string argument while it sets up the call that uses it, so reads and writes are counted);
//! the first write after it makes the copy (of
//! the process, for the thread gdb writes to), and from then on every write, read of that
//! thread and of memory, and run goes to the copy. Writing `$_siginfo` back disarms the call but
//! keeps the copy: gdb may go on with it (a string argument is written into memory a first call,
//! to `malloc`, returned, before the call that uses it), and what the calls changed stays
//! visible. The next resume that is not part of a call ends the diversion and runs the replay
//! from where it was. Writes without a diversion are refused (`set var`, `set $pc`): they would
//! change the recorded execution.

use rdb_runtime::trace::Tid;
use rdb_runtime::{Diversion, DiversionStop};

use crate::arch::LinuxRegs;
use crate::target::{gdb_tid, ReplayTarget, ServeError, StopReason};

/// The diversion state of a gdb connection.
#[derive(Default)]
pub struct Calls {
    /// Inferior calls being set up or running: `$_siginfo` reads not matched by a write yet
    /// (gdb nests calls: a string argument is put in memory by a call to `malloc` made while
    /// setting up the call that uses it).
    pub armed: u32,
    pub diversion: Option<Diversion>,
    /// gdb's breakpoints inserted while the diversion exists: the replay gets them when the
    /// diversion ends at a resume.
    pub breakpoints: std::collections::BTreeSet<u64>,
}

impl ReplayTarget<'_> {
    /// The diversion for a write to thread `tid`, made now if a call is armed.
    pub(crate) fn diversion_for_write(&mut self, tid: Tid) -> Option<&mut Diversion> {
        if self.calls.diversion.as_ref().is_some_and(|d| d.tid() == tid) {
            return self.calls.diversion.as_mut();
        }
        if self.calls.armed == 0 || self.calls.diversion.is_some() {
            return None;
        }
        match self.session.divert(tid) {
            Ok(d) => {
                self.calls.diversion = Some(d);
                self.calls.diversion.as_mut()
            }
            Err(e) => {
                eprintln!("rdb: {e}");
                None
            }
        }
    }

    /// The registers gdb sees for `tid` in the running diversion, if it stands for it.
    pub(crate) fn diversion_regs(&self, tid: Tid) -> Option<std::io::Result<LinuxRegs>> {
        let d = self.calls.diversion.as_ref().filter(|d| d.tid() == tid)?;
        Some(d.fpregs().map(|fp| LinuxRegs::from_thread(d.regs(), &fp)))
    }

    /// Write gdb's registers into the diversion of `tid`; false when there is none.
    pub(crate) fn write_diversion_regs(&mut self, tid: Tid, regs: &LinuxRegs) -> std::io::Result<bool> {
        let Some(d) = self.diversion_for_write(tid) else { return Ok(false) };
        let gp = regs.to_regs(d.regs());
        let fp = regs.to_fpregs(&d.fpregs()?);
        d.write_regs(&gp)?;
        d.write_fpregs(&fp)?;
        Ok(true)
    }

    /// gdb is about to call a function (it saves `$_siginfo` first).
    pub fn begin_infcall(&mut self) {
        if self.calls.armed == 0 && self.calls.diversion.as_ref().is_some_and(|d| d.abandoned()) {
            // A copy stuck at a syscall cannot run another call: the next one gets a new copy.
            self.calls.diversion = None;
        }
        self.calls.armed += 1;
    }

    /// gdb restored `$_siginfo` after a call (the registers come next).
    pub fn siginfo_written(&mut self) {
        self.calls.armed = self.calls.armed.saturating_sub(1);
    }

    /// At a resume: the diversion runs while a call is armed; otherwise it is over and the
    /// replay runs.
    pub(crate) fn diversion_runs(&mut self) -> bool {
        if self.calls.armed == 0 && self.calls.diversion.take().is_some() {
            for addr in std::mem::take(&mut self.calls.breakpoints) {
                if let Err(e) = self.session.set_breakpoint(addr) {
                    eprintln!("rdb: cannot set a breakpoint at {addr:#x}: {e}");
                }
            }
        }
        self.calls.diversion.is_some()
    }

    /// Run the diversion as gdb asked, and say why it stopped gdb's way.
    pub(crate) fn run_diversion(&mut self, step: bool, sig: i32) -> Result<StopReason, ServeError> {
        let d = self.calls.diversion.as_mut().expect("a running diversion");
        let tid = gdb_tid(d.tid());
        let stop = d.resume(step, sig)?;
        use gdbstub::common::Signal;
        use gdbstub::stub::MultiThreadStopReason as R;
        Ok(match stop {
            DiversionStop::Breakpoint(_) => R::SwBreak(tid),
            DiversionStop::Stepped => R::SignalWithThread { tid, signal: Signal::SIGTRAP },
            DiversionStop::Signal(sig) => R::SignalWithThread { tid, signal: Signal(sig as u8) },
            DiversionStop::Syscall(nr) => {
                let pc = d.regs().rip;
                eprintln!(
                    "rdb: the function called from gdb made a system call ({}) at {pc:#x}: code that gdb runs in the \
                     replay's copy cannot make system calls (the recording has no result for them); the call is \
                     abandoned (with `set unwindonsignal on`, as `rdb gdb` sets it, gdb restores the state by itself)",
                    rdb_runtime::syscalls::name(nr)
                );
                R::SignalWithThread { tid, signal: Signal::SIGSYS }
            }
            DiversionStop::Exited(status) => {
                eprintln!("rdb: the process copy running the function called from gdb ended (status {status:#x})");
                self.calls.diversion = None;
                R::SignalWithThread { tid, signal: Signal::SIGKILL }
            }
        })
    }
}
