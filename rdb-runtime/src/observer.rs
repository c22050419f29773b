//! The hook a debugger uses to run code at chosen places of a replay without perturbing it.
//!
//! The replayer calls [`ReplayObserver::on_exec`] after every process image is set up (initial
//! start included) and plants a software breakpoint at each returned address. When a process
//! reaches one, [`ReplayObserver::on_breakpoint`] runs with the tracee stopped *before* the
//! instruction at that address (registers as the program has them, memory readable); afterwards
//! the replayer steps over the original instruction and goes on. The program never sees the
//! breakpoint.
//!
//! System calls need no breakpoint: the replayer stops at every syscall's entry and exit anyway.
//! At each it asks [`ReplayObserver::wants_syscall`] and, when wanted, calls
//! [`ReplayObserver::on_syscall`] with the thread stopped there: at the entry before the call is
//! replayed (after it was checked against the trace), at the exit once the recorded result and
//! memory are in place and recorded output was re-emitted. Calls that never return (`exit`,
//! `exit_group`, a successful `execve`'s old image) have no exit stop.

use std::io;
use std::path::PathBuf;

use rdb_tracee::{Memory, Pid, Regs, Target, Watchpoint};

use crate::trace::{MemWrite, Tid};

/// A process image right after exec.
#[derive(Debug, Clone)]
pub struct ProcessImage {
    /// Recorded id of the process (of the thread that exec'ed or forked it): the same in all
    /// its threads.
    pub tid: Tid,
    /// Real pid during this replay (of the thread the image is handed with).
    pub pid: Pid,
    /// Absolute path of the executable, as recorded (what the program was started as).
    pub exe: PathBuf,
    /// Where the image's bytes are read from: during replay the trace's kept copy of the
    /// recorded executable (the original may have been rebuilt since), else `exe`.
    pub file: PathBuf,
    /// Load bias: run-time address minus link-time address (0x555555554000 for a PIE with ASLR
    /// off, 0 for a non-PIE executable).
    pub load_bias: u64,
}

/// A thread stopped at a breakpoint: a [`Target`] (registers, memory, mappings, load bias).
/// "Stop at address" is [`ReplayObserver::on_exec`] returning addresses; "resume" is returning
/// from [`ReplayObserver::on_breakpoint`].
pub struct BreakpointStop<'a> {
    pub tid: Tid,
    /// The real thread id during this replay.
    pub pid: Pid,
    /// The breakpoint address (equals `regs.rip`).
    pub addr: u64,
    /// The thread's stretch: the index of the event after which it last left the kernel (with
    /// `tid`, where a point of the replay is named from: see `position`).
    pub stretch: u64,
    pub regs: Regs,
    /// The image this process runs.
    pub image: &'a ProcessImage,
    /// At a counting site while the replay counts (see [`ReplayObserver::counts_hits`]): the
    /// hit's number among the image's hits at its counting sites, from 1.
    pub hit: Option<u64>,
}

impl BreakpointStop<'_> {
    /// Read the stopped process's memory as the tracee has it (possibly `0xcc` at other
    /// breakpoint addresses). The same as [`Memory::read_memory`], without importing it.
    pub fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.pid.read_memory(addr, buf)
    }
}

impl Memory for BreakpointStop<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        BreakpointStop::read_memory(self, addr, buf)
    }
}

impl Target for BreakpointStop<'_> {
    fn tid(&self) -> Pid {
        self.pid
    }
    fn pid(&self) -> Pid {
        self.image.pid
    }
    fn regs(&self) -> &Regs {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.image.load_bias
    }
}

/// A thread stopped at a system call the observer asked for: a [`Target`] (registers as the
/// program has them there, memory readable).
pub struct SyscallStop<'a> {
    pub tid: Tid,
    /// The real thread id during this replay.
    pub pid: Pid,
    /// Recorded id of the thread's process (its thread group).
    pub process: Tid,
    pub nr: u64,
    pub args: [u64; 6],
    /// The trace index of the call's recorded event (`rdb info --events` numbering).
    pub event: u64,
    /// At the exit: the call completed, its recorded result is in `rax` and its recorded
    /// memory effects are in place. At the entry: it has not run yet.
    pub exit: bool,
    /// The recorded result (the trace knows it at the entry too); 0 for calls that do not
    /// return (`exit_group`, `execve`).
    pub result: i64,
    /// The memory the call writes, as recorded (already in place at the exit).
    pub writes: &'a [MemWrite],
    /// For an `mmap` of a file: the file (replay maps anonymous memory holding its bytes, so
    /// `/proc` does not name it).
    pub mapped_file: Option<PathBuf>,
    pub regs: Regs,
    /// The image this process runs.
    pub image: &'a ProcessImage,
}

impl Memory for SyscallStop<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.pid.read_memory(addr, buf)
    }
}

impl Target for SyscallStop<'_> {
    fn tid(&self) -> Pid {
        self.pid
    }
    fn pid(&self) -> Pid {
        self.image.pid
    }
    fn regs(&self) -> &Regs {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.image.load_bias
    }
}

/// Callbacks from the replayer.
pub trait ReplayObserver {
    /// A process image is ready; return absolute addresses to break at in it.
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64>;
    /// A breakpoint was hit. An error stops the replay.
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String>;
    /// Whether [`ReplayObserver::on_exec`]'s breakpoints are *counting sites*: where each
    /// instruction can carry a `jmp` to a stub, the process counts their hits itself, and
    /// while the session counts (`Session::set_counting`) only the hit it asks for
    /// (`Session::set_hit_target`) stops, with [`BreakpointStop::hit`] set; else each is a
    /// breakpoint as usual. Asked at each exec.
    fn counts_hits(&self) -> bool {
        false
    }
    /// Whether [`ReplayObserver::on_syscall`] wants syscall `nr` at its entry (`exit` false)
    /// or exit. Asked at every syscall stop: keep it cheap.
    fn wants_syscall(&self, _nr: u64, _exit: bool) -> bool {
        false
    }
    /// A syscall it wants was reached (see the module docs). An error stops the replay.
    fn on_syscall(&mut self, _stop: &SyscallStop<'_>) -> Result<(), String> {
        Ok(())
    }
    /// More addresses to break at, in the address space of the thread the observer was just
    /// called for (absolute; planted like `on_exec`'s, until that image goes): asked after each
    /// [`ReplayObserver::on_breakpoint`] and [`ReplayObserver::on_syscall`].
    fn take_breakpoints(&mut self) -> Vec<u64> {
        Vec::new()
    }
    /// A thread stopped right after an instruction that accessed memory the observer watches
    /// with debug registers: `slots` (bit n = slot n) fired; `stop.addr` is `rip`, the
    /// instruction after the access. An error stops the replay.
    fn on_watchpoint(&mut self, _stop: &BreakpointStop<'_>, _slots: u8) -> Result<(), String> {
        Ok(())
    }
    /// Debug-register slots to arm (`Some`) or disarm (`None`) in every thread of the process
    /// of the thread the observer was just called for (and its threads created later): asked
    /// after each call into the observer (`on_exec` included). The slots a debugger driving the
    /// replay uses are refused with an error.
    fn take_watchpoints(&mut self) -> Vec<(usize, Option<Watchpoint>)> {
        Vec::new()
    }
    /// Ranges to watch for writes with page protection in the process of the thread the
    /// observer was just called for (for what does not fit the debug registers): the replayer
    /// makes their pages read-only in the tracee, single-steps each write that faults there
    /// and calls [`ReplayObserver::on_page_write`] (see `pages`). Asked with
    /// [`ReplayObserver::take_watchpoints`].
    fn take_page_watches(&mut self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// A thread stopped right after an instruction that wrote to a page protected for
    /// [`ReplayObserver::take_page_watches`]: `addr` is where the write began (the fault
    /// address; its length is unknown), `stop.addr` is `rip`, the instruction after it. The
    /// write may have missed the watched ranges (another part of the page). `addr` 0: an
    /// instruction ran with the pages unprotected (a signal's delivery) and may have written
    /// anywhere in them. An error stops the replay.
    fn on_page_write(&mut self, _stop: &BreakpointStop<'_>, _addr: u64) -> Result<(), String> {
        Ok(())
    }
    /// A process forked: `child` (its image a copy of `parent`'s, `tid` the new process's
    /// recorded id) runs the same code in a copy of the parent's memory, with the parent's
    /// breakpoints and no debug registers; the observer may ask for some
    /// ([`ReplayObserver::take_watchpoints`] is asked next, for the child).
    fn on_fork(&mut self, _parent: &ProcessImage, _child: &ProcessImage) {}
    /// Whether the replay may go back (restore a checkpoint, start again) with this observer:
    /// `Err(why)` when state it keeps about the program (breakpoints and debug registers it
    /// asked for while the program ran, copies of watched memory) would not follow the program
    /// back. Asked before every restore; the session refuses with `why`.
    fn can_go_back(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `&mut O` and `Box<O>` observe as `O` does.
macro_rules! forward_observer {
    ($($ty:ty),*) => {$(
        impl<O: ReplayObserver + ?Sized> ReplayObserver for $ty {
            fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
                (**self).on_exec(image)
            }
            fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
                (**self).on_breakpoint(stop)
            }
            fn counts_hits(&self) -> bool {
                (**self).counts_hits()
            }
            fn wants_syscall(&self, nr: u64, exit: bool) -> bool {
                (**self).wants_syscall(nr, exit)
            }
            fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<(), String> {
                (**self).on_syscall(stop)
            }
            fn take_breakpoints(&mut self) -> Vec<u64> {
                (**self).take_breakpoints()
            }
            fn on_watchpoint(&mut self, stop: &BreakpointStop<'_>, slots: u8) -> Result<(), String> {
                (**self).on_watchpoint(stop, slots)
            }
            fn take_watchpoints(&mut self) -> Vec<(usize, Option<Watchpoint>)> {
                (**self).take_watchpoints()
            }
            fn take_page_watches(&mut self) -> Vec<(u64, u64)> {
                (**self).take_page_watches()
            }
            fn on_page_write(&mut self, stop: &BreakpointStop<'_>, addr: u64) -> Result<(), String> {
                (**self).on_page_write(stop, addr)
            }
            fn on_fork(&mut self, parent: &ProcessImage, child: &ProcessImage) {
                (**self).on_fork(parent, child)
            }
            fn can_go_back(&self) -> Result<(), String> {
                (**self).can_go_back()
            }
        }
    )*};
}

forward_observer!(&mut O, Box<O>);

/// An observer that sets no breakpoints.
pub struct NoObserver;

impl ReplayObserver for NoObserver {
    fn on_exec(&mut self, _image: &ProcessImage) -> Vec<u64> {
        Vec::new()
    }
    fn on_breakpoint(&mut self, _stop: &BreakpointStop<'_>) -> Result<(), String> {
        Ok(())
    }
}
