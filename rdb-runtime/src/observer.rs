//! The hook a debugger uses to run code at chosen places of a replay without perturbing it.
//!
//! The replayer calls [`ReplayObserver::on_exec`] after every process image is set up (initial
//! start included) and plants a software breakpoint at each returned address. When a process
//! reaches one, [`ReplayObserver::on_breakpoint`] runs with the tracee stopped *before* the
//! instruction at that address (registers as the program has them, memory readable); afterwards
//! the replayer steps over the original instruction and goes on. The program never sees the
//! breakpoint.

use std::io;
use std::path::PathBuf;

use rdb_tracee::{Memory, Pid, Regs, Target};

use crate::trace::Tid;

/// A process image right after exec.
#[derive(Debug, Clone)]
pub struct ProcessImage {
    /// Recorded thread id of the process.
    pub tid: Tid,
    /// Real pid during this replay.
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
    pub regs: Regs,
    /// The image this process runs.
    pub image: &'a ProcessImage,
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

/// Callbacks from the replayer.
pub trait ReplayObserver {
    /// A process image is ready; return absolute addresses to break at in it.
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64>;
    /// A breakpoint was hit. An error stops the replay.
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String>;
}

impl<O: ReplayObserver + ?Sized> ReplayObserver for &mut O {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        (**self).on_exec(image)
    }
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        (**self).on_breakpoint(stop)
    }
}

impl<O: ReplayObserver + ?Sized> ReplayObserver for Box<O> {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        (**self).on_exec(image)
    }
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        (**self).on_breakpoint(stop)
    }
}

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
