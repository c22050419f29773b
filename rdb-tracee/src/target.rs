//! The stopped-target traits: what a debugger needs from a stopped thread, whoever drives it.
//!
//! - [`Memory`]: read memory of the target's address space (the syscall table's effect
//!   decoder needs no more).
//! - [`Target`]: one stopped thread, read-only: identity, registers (`fs_base` included, FP/SSE
//!   on demand), memory, mappings and the load bias of its main binary. The debug host runs
//!   region code against a `&dyn Target`; the replayer's breakpoint stop implements it, and
//!   so do [`Thread`] (a live thread stopped under ptrace by the caller) and, later, a
//!   GDB-remote client (`g`/`p` for registers, `m`/`x` for memory).
//! - [`Control`]: what a gdb server or event callbacks do with a target: software
//!   breakpoints, hardware watchpoints (the debug registers), resume and single-step, each
//!   reporting why the thread stopped ([`Stop`]).
//!
//! See `docs/ARCHITECTURE.md` (the tracee layer) for how the users fit.

use std::collections::BTreeMap;
use std::io;

use crate::debugreg::{self, Watchpoint};
use crate::procfs::{self, Mapping};
use crate::ptrace::{self, Regs, Wait};
use crate::{mem, Pid};

/// Read access to a target's memory.
pub trait Memory {
    /// Read up to `buf.len()` bytes at `addr`; returns how many were readable (short at an
    /// unmapped page).
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// Read exactly `buf.len()` bytes at `addr`, or fail.
    fn read_exact(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let n = self.read_memory(addr, buf)?;
        if n != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("only {n} of {} bytes readable at {addr:#x}", buf.len()),
            ));
        }
        Ok(())
    }
}

/// The memory of a process, read with `process_vm_readv` (the caller needs ptrace rights).
impl Memory for Pid {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        mem::read(*self, addr, buf)
    }
}

/// A stopped thread, seen read-only. Nothing here resumes or writes the target.
pub trait Target: Memory {
    /// The stopped thread (ptrace requests such as reading FP registers go to it).
    fn tid(&self) -> Pid;
    /// The process (thread group) whose address space the thread runs in. Defaults to
    /// [`Target::tid`], which names the same address space.
    fn pid(&self) -> Pid {
        self.tid()
    }
    /// The general-purpose registers at the stop (`fs_base` included).
    fn regs(&self) -> &Regs;
    /// The 16 bytes of `xmm{n}` at the stop. The default reads them with `PTRACE_GETFPREGS`,
    /// which works when the caller is the tracer.
    fn xmm(&self, n: u16) -> io::Result<[u8; 16]> {
        ptrace::xmm(&ptrace::get_fpregs(self.tid())?, n)
    }
    /// Load bias of the main binary (0 for a non-PIE executable).
    fn load_bias(&self) -> u64;
    /// The process's mappings. The default parses `/proc/PID/maps`.
    fn mappings(&self) -> io::Result<Vec<Mapping>> {
        procfs::maps(self.pid())
    }
    /// The mapping holding `addr`, `None` if nothing is mapped there. The default looks it up
    /// in [`Target::mappings`]; a target that cannot list every mapping (a GDB stub without
    /// file access) finds it by probing which memory around `addr` is readable.
    fn mapping_at(&self, addr: u64) -> io::Result<Option<Mapping>> {
        Ok(self.mappings()?.into_iter().find(|m| m.contains(addr)))
    }
}

/// Why a controlled thread stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// At a software breakpoint, before the instruction at `addr` (= `rip`).
    Breakpoint { addr: u64 },
    /// A hardware watchpoint fired: `slots` is the set of debug-register slots (bit n = slot
    /// n); data watchpoints stop after the access.
    Watchpoint { slots: u8 },
    /// One instruction was executed.
    Stepped,
    /// At a syscall entry (`exit` false) or exit, for targets that stop there (the replayer).
    Syscall { nr: u64, exit: bool },
    /// A signal arrived; it is delivered when the thread is resumed.
    Signal(i32),
    /// The thread is gone, with this raw wait status.
    Exited(i32),
}

/// Control over a stopped thread: what a gdb server or event callbacks need beyond reading.
pub trait Control: Target {
    /// Stop before the instruction at `addr` from now on (an `int3` the target never sees).
    fn set_breakpoint(&mut self, addr: u64) -> io::Result<()>;
    fn remove_breakpoint(&mut self, addr: u64) -> io::Result<()>;
    /// Arm a hardware watchpoint in debug-register `slot` (0-3).
    fn set_watchpoint(&mut self, slot: usize, watch: Watchpoint) -> io::Result<()>;
    fn remove_watchpoint(&mut self, slot: usize) -> io::Result<()>;
    /// Run until the next stop.
    fn resume(&mut self) -> io::Result<Stop>;
    /// Execute one instruction.
    fn step(&mut self) -> io::Result<Stop>;
    /// The threads of the target's process.
    fn threads(&self) -> io::Result<Vec<Pid>> {
        procfs::threads(self.pid())
    }
}

/// A live thread that the calling thread traces, in a ptrace stop: a [`Target`] (registers
/// read when made and after each stop) and a [`Control`] (breakpoints as `int3` bytes lifted
/// and single-stepped over on resume; watchpoints in the debug registers).
#[derive(Debug)]
pub struct Thread {
    tid: Pid,
    pid: Pid,
    regs: Regs,
    load_bias: u64,
    /// Planted breakpoints: address -> the byte the `int3` replaced.
    breakpoints: BTreeMap<u64, u8>,
    /// A signal that stopped the thread, delivered when it is resumed.
    pending: i32,
    exited: Option<i32>,
    /// Stop at syscall entries ([`Thread::trap_syscalls`]).
    trap_syscalls: bool,
}

impl Thread {
    /// Thread `tid` of process `pid`, which the calling thread traces and which is in a ptrace
    /// stop. The load bias is the difference between the entry point in memory (`AT_ENTRY`)
    /// and in the ELF header of `/proc/PID/exe`.
    pub fn new(tid: Pid, pid: Pid) -> io::Result<Thread> {
        let regs = ptrace::get_regs(tid).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot read the registers of thread {tid} (is it ptrace-stopped by this thread?): {e}"),
            )
        })?;
        let load_bias = procfs::process_load_bias(pid)?;
        Ok(Thread {
            tid,
            pid,
            regs,
            load_bias,
            breakpoints: BTreeMap::new(),
            pending: 0,
            exited: None,
            trap_syscalls: false,
        })
    }

    /// From now on, [`Control::resume`] stops at every syscall entry ([`Stop::Syscall`]), the
    /// syscall not run yet: the thread stays there until the caller resumes it (the syscall
    /// then runs) or changes its registers (`orig_rax` -1 skips it).
    pub fn trap_syscalls(&mut self) {
        self.trap_syscalls = true;
    }

    /// The signal delivered at the next resume or step (0: none): by default the one that
    /// stopped the thread last.
    pub fn set_pending_signal(&mut self, sig: i32) {
        self.pending = sig;
    }

    /// Replace the thread's general-purpose registers.
    pub fn write_regs(&mut self, regs: &Regs) -> io::Result<()> {
        self.alive()?;
        ptrace::set_regs(self.tid, regs)?;
        self.regs = *regs;
        Ok(())
    }

    /// Replace the thread's x87/SSE state.
    pub fn write_fpregs(&mut self, fp: &ptrace::FpRegs) -> io::Result<()> {
        self.alive()?;
        ptrace::set_fpregs(self.tid, fp)
    }

    /// Write the thread's memory (where a breakpoint is planted, the byte under it).
    pub fn write_memory(&mut self, addr: u64, data: &[u8]) -> io::Result<()> {
        self.alive()?;
        let mut data = data.to_vec();
        for (&at, orig) in self.breakpoints.range_mut(addr..addr.saturating_add(data.len() as u64)) {
            let i = (at - addr) as usize;
            *orig = data[i];
            data[i] = 0xcc;
        }
        mem::write(self.tid, addr, &data)
    }

    fn alive(&self) -> io::Result<()> {
        match self.exited {
            Some(status) => Err(io::Error::other(format!("thread {} has exited (status {status:#x})", self.tid))),
            None => Ok(()),
        }
    }

    /// Runs the instruction under a breakpoint at the current pc with the original byte in
    /// place: `None` when there is no breakpoint there, else how the step ended.
    fn step_off_breakpoint(&mut self) -> io::Result<Option<Stop>> {
        let Some(&orig) = self.breakpoints.get(&self.regs.rip) else { return Ok(None) };
        let addr = self.regs.rip;
        mem::write(self.tid, addr, &[orig])?;
        ptrace::single_step(self.tid, std::mem::take(&mut self.pending))?;
        let stop = self.wait(true)?;
        if self.exited.is_none() {
            mem::write(self.tid, addr, &[0xcc])?;
        }
        Ok(Some(stop))
    }

    /// Waits for the thread's next stop and says what it is.
    fn wait(&mut self, stepping: bool) -> io::Result<Stop> {
        let w = ptrace::wait_pid(self.tid)?;
        let sig = match w {
            Wait::Exited(_) | Wait::Signaled(_) => {
                self.exited = Some(w.raw_exit_status());
                return Ok(Stop::Exited(w.raw_exit_status()));
            }
            Wait::Stopped { sig, .. } => sig,
        };
        self.regs = ptrace::get_regs(self.tid)?;
        if sig == libc::SIGTRAP | 0x80 {
            if let ptrace::SyscallStop::Entry { nr, .. } = ptrace::syscall_info(self.tid)?.stop {
                return Ok(Stop::Syscall { nr, exit: false });
            }
            return Ok(Stop::Syscall { nr: self.regs.orig_rax, exit: true });
        }
        if sig != libc::SIGTRAP {
            self.pending = sig;
            return Ok(Stop::Signal(sig));
        }
        let slots = debugreg::take_hits(self.tid)?;
        if slots != 0 {
            return Ok(Stop::Watchpoint { slots });
        }
        let addr = self.regs.rip.wrapping_sub(1);
        if !stepping && self.breakpoints.contains_key(&addr) {
            self.regs.rip = addr;
            ptrace::set_regs(self.tid, &self.regs)?;
            return Ok(Stop::Breakpoint { addr });
        }
        Ok(if stepping { Stop::Stepped } else { Stop::Signal(libc::SIGTRAP) })
    }
}

impl Memory for Thread {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = mem::read(self.pid, addr, buf)?;
        // The program's own bytes where breakpoints are planted.
        for (&at, &orig) in self.breakpoints.range(addr..addr.saturating_add(n as u64)) {
            buf[(at - addr) as usize] = orig;
        }
        Ok(n)
    }
}

impl Target for Thread {
    fn tid(&self) -> Pid {
        self.tid
    }
    fn pid(&self) -> Pid {
        self.pid
    }
    fn regs(&self) -> &Regs {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.load_bias
    }
}

impl Control for Thread {
    fn set_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        self.alive()?;
        if self.breakpoints.contains_key(&addr) {
            return Ok(());
        }
        let mut orig = [0u8; 1];
        mem::read_exact(self.pid, addr, &mut orig)?;
        mem::write(self.tid, addr, &[0xcc])?;
        self.breakpoints.insert(addr, orig[0]);
        Ok(())
    }

    fn remove_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        self.alive()?;
        match self.breakpoints.remove(&addr) {
            Some(orig) => mem::write(self.tid, addr, &[orig]),
            None => Ok(()),
        }
    }

    fn set_watchpoint(&mut self, slot: usize, watch: Watchpoint) -> io::Result<()> {
        self.alive()?;
        debugreg::set_watchpoint(self.tid, slot, watch)
    }

    fn remove_watchpoint(&mut self, slot: usize) -> io::Result<()> {
        self.alive()?;
        debugreg::clear_watchpoint(self.tid, slot)
    }

    fn resume(&mut self) -> io::Result<Stop> {
        self.alive()?;
        match self.step_off_breakpoint()? {
            Some(Stop::Stepped) | None => {}
            Some(stop) => return Ok(stop),
        }
        let sig = std::mem::take(&mut self.pending);
        if self.trap_syscalls {
            ptrace::resume_syscall(self.tid, sig)?;
        } else {
            ptrace::resume(self.tid, sig)?;
        }
        self.wait(false)
    }

    fn step(&mut self) -> io::Result<Stop> {
        self.alive()?;
        if self.trap_syscalls {
            // A single step runs a `syscall` instruction without a syscall stop: trap it.
            let mut code = [0u8; 2];
            if self.read_memory(self.regs.rip, &mut code).is_ok_and(|n| n == 2) && code == [0x0f, 0x05] {
                ptrace::resume_syscall(self.tid, std::mem::take(&mut self.pending))?;
                return self.wait(false);
            }
        }
        if let Some(stop) = self.step_off_breakpoint()? {
            return Ok(stop);
        }
        ptrace::single_step(self.tid, std::mem::take(&mut self.pending))?;
        self.wait(true)
    }
}
