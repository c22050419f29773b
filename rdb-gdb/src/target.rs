//! The replay as gdbstub's target: registers, memory, threads, breakpoints and watchpoints,
//! resume and step, the `qXfer` objects gdb needs to find its way (target description, auxv,
//! libraries, exec file) and host I/O for reading the program's files.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::num::NonZeroUsize;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};

use gdbstub::common::{Signal, Tid as GdbTid};
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::reverse_exec::{ReverseCont, ReverseContOps, ReverseStep, ReverseStepOps};
use gdbstub::target::ext::base::single_register_access::{SingleRegisterAccess, SingleRegisterAccessOps};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, HwWatchpoint, HwWatchpointOps, SwBreakpoint, SwBreakpointOps, WatchKind,
};
use gdbstub::target::ext::host_io::{
    FsKind, HostIo, HostIoClose, HostIoCloseOps, HostIoErrno, HostIoError, HostIoFstat, HostIoFstatOps, HostIoOpen,
    HostIoOpenFlags, HostIoOpenMode, HostIoOpenOps, HostIoOps, HostIoPread, HostIoPreadOps, HostIoReadlink,
    HostIoReadlinkOps, HostIoResult, HostIoSetfs, HostIoSetfsOps, HostIoStat,
};
use gdbstub::target::{Target, TargetError, TargetResult};
use rdb_runtime::trace::Tid;
use rdb_runtime::{Resume, Session, SessionStop};
use rdb_tracee::debugreg::{self, Watchpoint};
use rdb_tracee::{Memory as _, Target as _};

use crate::arch::{LinuxRegs, Reg, X86_64Linux};
use crate::svr4;

/// What goes wrong serving gdb that ends the session.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Replay(#[from] rdb_runtime::Error),
    #[error("connection to gdb: {0}")]
    Io(#[from] io::Error),
    #[error("gdb protocol: {0}")]
    Protocol(String),
}

/// The stop reply type gdbstub sends.
pub type StopReason = MultiThreadStopReason<u64>;

/// A gdb watchpoint as the CPU carries it: one to four aligned debug-register slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct GdbWatch {
    addr: u64,
    len: u64,
    kind: WatchKind,
}

/// The replay seen by gdb (see the module docs).
pub struct ReplayTarget<'o> {
    pub(crate) session: Session<'o>,
    /// What gdb's last resume request asked.
    requested: Option<Resume>,
    /// gdb asked to go backwards: continue (`bc`, `None`) or step a thread (`bs`).
    reverse: Option<Option<Tid>>,
    /// The signal gdb asked to deliver with it (honoured in a diversion only: the replay
    /// delivers what the trace says).
    requested_signal: i32,
    /// gdb's watchpoints by the debug-register slots they use.
    watches: [Option<GdbWatch>; debugreg::SLOTS],
    /// Files gdb opened through host I/O.
    files: HashMap<u32, File>,
    next_fd: u32,
    /// The debugged process is gone (nothing to read or run).
    pub(crate) exited: bool,
    /// Where glibc keeps TLS facts in its `link_map`s (read once from the program's libc).
    tls_layout: Option<crate::tls::LinkMapLayout>,
    /// gdb's inferior calls (see `diversion`).
    pub(crate) calls: crate::diversion::Calls,
    /// Where gdb started (`run` comes back there).
    start: Option<rdb_runtime::Position>,
}

/// A gdb thread id for a recorded one.
pub fn gdb_tid(tid: Tid) -> GdbTid {
    NonZeroUsize::new(tid.0 as usize).unwrap_or(NonZeroUsize::MIN)
}

fn recorded(tid: GdbTid) -> Tid {
    Tid(tid.get() as u32)
}

/// The message for a write gdb asked for on the replay.
pub const REFUSED_WRITE: &str = "rdb: the replay cannot be changed (it must stay the recorded execution): \
to compute with the program's state, add a region (rdb_begin!/rdb_end!) and replay with --debug; \
to call a function, use gdb's `print f(x)` / `call f(x)`, which runs in a disposable copy of the process";

impl<'o> ReplayTarget<'o> {
    pub fn new(mut session: Session<'o>) -> Self {
        let start = session.position().ok().flatten();
        ReplayTarget {
            session,
            requested: None,
            reverse: None,
            requested_signal: 0,
            watches: [None; debugreg::SLOTS],
            files: HashMap::new(),
            next_fd: 100,
            exited: false,
            tls_layout: None,
            calls: Default::default(),
            start,
        }
    }

    /// The halted thread for gdb (or the debugged process's first one).
    pub fn current_thread(&self) -> Option<Tid> {
        self.session.halted_thread().or_else(|| self.session.threads().first().map(|t| t.tid))
    }

    /// Run the replay as gdb's last resume request asked, until a halt, and say it gdb's way.
    pub fn run(&mut self) -> Result<StopReason, ServeError> {
        let how = self.requested.take().unwrap_or(Resume::Continue);
        let sig = std::mem::take(&mut self.requested_signal);
        let reverse = self.reverse.take();
        if self.diversion_runs() {
            if reverse.is_some() {
                eprintln!("rdb: a function called from gdb cannot run backwards");
                let tid = self.current_thread().unwrap_or(Tid(1));
                return Ok(MultiThreadStopReason::SignalWithThread { tid: gdb_tid(tid), signal: Signal::SIGTRAP });
            }
            return self.run_diversion(matches!(how, Resume::Step(_)), sig);
        }
        let stop = match reverse {
            Some(None) => self.session.reverse_continue(),
            Some(Some(tid)) => self.session.reverse_step(tid),
            None => self.session.resume(how),
        };
        let stop = match stop {
            Ok(stop) => stop,
            Err(e) if reverse.is_some() => {
                // Going back failed: say why and stay where the replay is.
                eprintln!("rdb: {e}");
                let tid = self.current_thread().unwrap_or(Tid(1));
                return Ok(MultiThreadStopReason::SignalWithThread { tid: gdb_tid(tid), signal: Signal::SIGTRAP });
            }
            Err(e) => return Err(e.into()),
        };
        // A trace cut short ends where the recording stopped, not where the program exited:
        // an error (exit status 4), never a normal exit shown to gdb.
        if let (SessionStop::End, Some(e)) = (&stop, self.session.end_error()) {
            return Err(e.into());
        }
        self.exited = false;
        Ok(self.stop_reason(stop))
    }

    /// A halt as a gdb stop reply.
    pub fn stop_reason(&mut self, stop: SessionStop) -> StopReason {
        match stop {
            SessionStop::Breakpoint { tid, .. } => MultiThreadStopReason::SwBreak(gdb_tid(tid)),
            SessionStop::Watchpoint { tid, slots, addr } => {
                let slot = (0..debugreg::SLOTS).find(|s| slots & (1 << s) != 0).unwrap_or(0);
                let (kind, addr) = match self.watches[slot] {
                    Some(w) => (w.kind, w.addr.max(addr.min(w.addr + w.len - 1)).min(addr.max(w.addr))),
                    None => (WatchKind::Write, addr),
                };
                MultiThreadStopReason::Watch { tid: gdb_tid(tid), kind, addr }
            }
            SessionStop::Stepped { tid } | SessionStop::Reached { tid } => {
                MultiThreadStopReason::SignalWithThread { tid: gdb_tid(tid), signal: Signal::SIGTRAP }
            }
            SessionStop::Signal { tid, sig } => {
                MultiThreadStopReason::SignalWithThread { tid: gdb_tid(tid), signal: Signal(sig as u8) }
            }
            SessionStop::Interrupted { tid } => {
                MultiThreadStopReason::SignalWithThread { tid: gdb_tid(tid), signal: Signal::SIGINT }
            }
            SessionStop::Syscall { tid, nr, exit } => MultiThreadStopReason::CatchSyscall {
                tid: Some(gdb_tid(tid)),
                number: nr,
                position: if exit {
                    gdbstub::target::ext::catch_syscalls::CatchSyscallPosition::Return
                } else {
                    gdbstub::target::ext::catch_syscalls::CatchSyscallPosition::Entry
                },
            },
            SessionStop::ProcessExited { status, .. } => {
                self.exited = true;
                if status & 0x7f == 0 {
                    MultiThreadStopReason::Exited(((status >> 8) & 0xff) as u8)
                } else {
                    MultiThreadStopReason::Terminated(Signal((status & 0x7f) as u8))
                }
            }
            SessionStop::End => {
                self.exited = true;
                MultiThreadStopReason::Exited(0)
            }
            SessionStop::HistoryStart { tid } => MultiThreadStopReason::ReplayLog {
                tid: Some(gdb_tid(tid)),
                pos: gdbstub::target::ext::base::reverse_exec::ReplayLogPosition::Begin,
            },
        }
    }

    fn thread_regs(&self, tid: Tid) -> io::Result<LinuxRegs> {
        if let Some(regs) = self.diversion_regs(tid) {
            return regs;
        }
        let view = self.session.thread(tid)?;
        let fp = rdb_tracee::ptrace::get_fpregs(view.tid())?;
        Ok(LinuxRegs::from_thread(view.regs(), &fp))
    }

    /// The address of a thread-local for `qGetTLSAddr:THREAD,OFFSET,LM`.
    pub fn tls_address(&mut self, args: &str) -> Result<u64, String> {
        let parts: Vec<&str> = args.split(',').collect();
        let [thread, offset, lm] = parts.as_slice() else { return Err(format!("malformed request {args}")) };
        let thread = thread.rsplit('.').next().unwrap_or(thread).trim_start_matches('p');
        let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|e| format!("{s}: {e}"));
        let (tid, offset, lm) = (Tid(hex(thread)? as u32), hex(offset)?, hex(lm)?);
        let fs_base = self.session.thread(tid).map_err(|e| e.to_string())?.regs().fs_base;
        let layout = match self.tls_layout {
            Some(l) => l,
            None => {
                let auxv = self.session.auxv().unwrap_or_default();
                let (_, libraries) = svr4::libraries(&self.session, &auxv);
                let libc = libraries
                    .iter()
                    .find(|l| l.name.windows(7).any(|w| w == b"libc.so"))
                    .ok_or("the program has not loaded libc (yet)")?;
                let l = crate::tls::layout_from_libc(std::path::Path::new(std::ffi::OsStr::from_bytes(&libc.name)))?;
                self.tls_layout = Some(l);
                l
            }
        };
        crate::tls::address(&self.session, layout, fs_base, lm, offset)
    }

    /// Split a gdb watch into aligned debug-register ranges.
    fn ranges(addr: u64, len: u64) -> Vec<(u64, u8)> {
        let mut out = Vec::new();
        let (mut at, end) = (addr, addr.saturating_add(len));
        while at < end && out.len() <= debugreg::SLOTS {
            let size = [8u64, 4, 2, 1].into_iter().find(|s| at.is_multiple_of(*s) && at + s <= end).unwrap_or(1);
            out.push((at, size as u8));
            at += size;
        }
        out
    }
}

fn io_error<T>(e: io::Error) -> TargetResult<T, ReplayTarget<'static>> {
    Err(TargetError::Io(e))
}

impl<'o> Target for ReplayTarget<'o> {
    type Arch = X86_64Linux;
    type Error = ServeError;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_target_description_xml_override(
        &mut self,
    ) -> Option<gdbstub::target::ext::target_description_xml_override::TargetDescriptionXmlOverrideOps<'_, Self>> {
        None
    }

    fn support_auxv(&mut self) -> Option<gdbstub::target::ext::auxv::AuxvOps<'_, Self>> {
        Some(self)
    }

    fn support_exec_file(&mut self) -> Option<gdbstub::target::ext::exec_file::ExecFileOps<'_, Self>> {
        Some(self)
    }

    fn support_libraries_svr4(&mut self) -> Option<gdbstub::target::ext::libraries::LibrariesSvr4Ops<'_, Self>> {
        Some(self)
    }

    fn support_host_io(&mut self) -> Option<HostIoOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<gdbstub::target::ext::monitor_cmd::MonitorCmdOps<'_, Self>> {
        Some(self)
    }

    fn support_extended_mode(&mut self) -> Option<gdbstub::target::ext::extended_mode::ExtendedModeOps<'_, Self>> {
        Some(self)
    }

    fn support_catch_syscalls(&mut self) -> Option<gdbstub::target::ext::catch_syscalls::CatchSyscallsOps<'_, Self>> {
        Some(self)
    }

    // Our breakpoints are the replayer's own `int3`s (Z0), never bytes gdb writes.
    fn guard_rail_implicit_sw_breakpoints(&self) -> bool {
        true
    }
}

/// Copy `data[offset..]` into `buf` the way qXfer reads want.
pub(crate) fn copy_range(data: &[u8], offset: u64, length: usize, buf: &mut [u8]) -> usize {
    let start = (offset as usize).min(data.len());
    let n = (data.len() - start).min(length).min(buf.len());
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

impl MultiThreadBase for ReplayTarget<'_> {
    fn read_registers(&mut self, regs: &mut LinuxRegs, tid: GdbTid) -> TargetResult<(), Self> {
        match self.thread_regs(recorded(tid)) {
            Ok(r) => {
                *regs = r;
                Ok(())
            }
            Err(e) => Err(TargetError::Io(e)),
        }
    }

    fn write_registers(&mut self, regs: &LinuxRegs, tid: GdbTid) -> TargetResult<(), Self> {
        // Writing what is there already changes nothing (gdb does so when it restores state;
        // `orig_rax` -1: see `write_register`).
        if self.calls.diversion.is_none() {
            if let Ok(mut now) = self.thread_regs(recorded(tid)) {
                if regs.bytes[crate::arch::ORIG_RAX] == u64::MAX.to_le_bytes() {
                    now.bytes[crate::arch::ORIG_RAX] = regs.bytes[crate::arch::ORIG_RAX].clone();
                }
                if now == *regs {
                    return Ok(());
                }
            }
        }
        match self.write_diversion_regs(recorded(tid), regs) {
            Ok(true) => Ok(()),
            Ok(false) => {
                eprintln!("{REFUSED_WRITE}");
                Err(TargetError::Errno(libc::EPERM as u8))
            }
            Err(e) => Err(TargetError::Io(e)),
        }
    }

    fn support_single_register_access(&mut self) -> Option<SingleRegisterAccessOps<'_, GdbTid, Self>> {
        Some(self)
    }

    fn read_addrs(&mut self, start_addr: u64, data: &mut [u8], _tid: GdbTid) -> TargetResult<usize, Self> {
        let read = match &self.calls.diversion {
            Some(d) => d.read_memory(start_addr, data),
            None => self.session.read_memory(start_addr, data),
        };
        match read {
            Ok(n) => Ok(n),
            Err(e) => Err(TargetError::Io(e)),
        }
    }

    fn write_addrs(&mut self, start_addr: u64, data: &[u8], tid: GdbTid) -> TargetResult<(), Self> {
        if data.is_empty() {
            return Ok(());
        }
        if let Some(d) = self.diversion_for_write(recorded(tid)) {
            return d.write_memory(start_addr, data).map_err(TargetError::Io);
        }
        let mut now = vec![0u8; data.len()];
        if self.session.read_memory(start_addr, &mut now).is_ok_and(|n| n == data.len() && now == data) {
            return Ok(());
        }
        eprintln!("{REFUSED_WRITE}");
        Err(TargetError::Errno(libc::EPERM as u8))
    }

    fn list_active_threads(&mut self, thread_is_active: &mut dyn FnMut(GdbTid)) -> Result<(), Self::Error> {
        if self.exited {
            return Ok(());
        }
        for t in self.session.threads() {
            thread_is_active(gdb_tid(t.tid));
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleRegisterAccess<GdbTid> for ReplayTarget<'_> {
    fn read_register(&mut self, tid: GdbTid, reg: Reg, buf: &mut [u8]) -> TargetResult<usize, Self> {
        let regs = match self.thread_regs(recorded(tid)) {
            Ok(r) => r,
            Err(e) => return io_error(e).map_err(|_| TargetError::NonFatal),
        };
        let bytes = &regs.bytes[reg.0];
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }

    fn write_register(&mut self, tid: GdbTid, reg: Reg, val: &[u8]) -> TargetResult<(), Self> {
        if self.thread_regs(recorded(tid)).is_ok_and(|now| now.bytes[reg.0] == val) {
            return Ok(());
        }
        if let Ok(mut regs) = self.thread_regs(recorded(tid)) {
            regs.bytes[reg.0] = val.to_vec();
            match self.write_diversion_regs(recorded(tid), &regs) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => return Err(TargetError::Io(e)),
            }
        }
        // gdb sets `orig_rax` to -1 whenever it sets the pc (so that the kernel restarts no
        // syscall), also to the value it has: that changes nothing of the replay, which
        // restarts syscalls as recorded.
        if reg.0 == crate::arch::ORIG_RAX && val == u64::MAX.to_le_bytes() {
            return Ok(());
        }
        eprintln!("{REFUSED_WRITE}");
        Err(TargetError::Errno(libc::EPERM as u8))
    }
}

impl MultiThreadResume for ReplayTarget<'_> {
    fn resume(&mut self) -> Result<(), Self::Error> {
        // The replay runs in the serving loop, where an interrupt from gdb can reach it.
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        self.requested = None;
        self.reverse = None;
        self.requested_signal = 0;
        Ok(())
    }

    fn set_resume_action_continue(&mut self, _tid: GdbTid, signal: Option<Signal>) -> Result<(), Self::Error> {
        // In the replay, signals are the trace's to deliver: gdb's choice cannot change the
        // recorded run.
        if self.requested.is_none() {
            self.requested = Some(Resume::Continue);
            self.requested_signal = signal.map_or(0, |s| s.0 as i32);
        }
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }

    fn support_reverse_cont(&mut self) -> Option<ReverseContOps<'_, GdbTid, Self>> {
        Some(self)
    }

    fn support_reverse_step(&mut self) -> Option<ReverseStepOps<'_, GdbTid, Self>> {
        Some(self)
    }
}

impl ReverseCont<GdbTid> for ReplayTarget<'_> {
    fn reverse_cont(&mut self) -> Result<(), Self::Error> {
        self.reverse = Some(None);
        Ok(())
    }
}

impl ReverseStep<GdbTid> for ReplayTarget<'_> {
    fn reverse_step(&mut self, tid: GdbTid) -> Result<(), Self::Error> {
        self.reverse = Some(Some(recorded(tid)));
        Ok(())
    }
}

impl MultiThreadSchedulerLocking for ReplayTarget<'_> {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        // Only the stepped thread runs user code anyway: one thread of a process runs at a time
        // (threads in the kernel may finish their recorded syscalls meanwhile, which changes
        // nothing gdb sees of them).
        Ok(())
    }
}

impl MultiThreadSingleStep for ReplayTarget<'_> {
    fn set_resume_action_step(&mut self, tid: GdbTid, signal: Option<Signal>) -> Result<(), Self::Error> {
        self.requested = Some(Resume::Step(recorded(tid)));
        self.requested_signal = signal.map_or(0, |s| s.0 as i32);
        Ok(())
    }
}

impl Breakpoints for ReplayTarget<'_> {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
    fn support_hw_watchpoint(&mut self) -> Option<HwWatchpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for ReplayTarget<'_> {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        if let Some(d) = self.calls.diversion.as_mut() {
            // gdb inserts its breakpoints before each resume and takes them out at each stop:
            // while a diversion runs, they are the diversion's only (the dummy frame's may be on
            // the stack, where the replay must never get an `int3`).
            return match d.set_breakpoint(addr) {
                Ok(()) => {
                    self.calls.breakpoints.insert(addr);
                    Ok(true)
                }
                Err(e) => {
                    eprintln!("rdb: cannot set a breakpoint at {addr:#x} in the diversion: {e}");
                    Ok(false)
                }
            };
        }
        match self.session.set_breakpoint(addr) {
            Ok(()) => Ok(true),
            Err(e) => {
                eprintln!("rdb: cannot set a breakpoint at {addr:#x}: {e}");
                Ok(false)
            }
        }
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        if let Some(d) = self.calls.diversion.as_mut() {
            self.calls.breakpoints.remove(&addr);
            return d.remove_breakpoint(addr).map(|()| true).map_err(TargetError::Io);
        }
        match self.session.remove_breakpoint(addr) {
            Ok(()) => Ok(true),
            Err(e) => io_error(e).map_err(|_| TargetError::NonFatal),
        }
    }
}

impl HwWatchpoint for ReplayTarget<'_> {
    fn add_hw_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> TargetResult<bool, Self> {
        let ranges = Self::ranges(addr, len);
        let free: Vec<usize> = (0..debugreg::SLOTS)
            .filter(|s| self.watches[*s].is_none() && !self.session.watch_slot_held_by_observer(*s))
            .collect();
        if ranges.len() > free.len() {
            return Ok(false);
        }
        let cpu_kind = match kind {
            WatchKind::Write => rdb_tracee::WatchKind::Write,
            // x86 has no read-only watchpoints: reads and writes fire, gdb sorts them out.
            WatchKind::Read | WatchKind::ReadWrite => rdb_tracee::WatchKind::ReadWrite,
        };
        for ((at, size), slot) in ranges.iter().zip(&free) {
            if let Err(e) = self.session.set_watchpoint(*slot, Watchpoint { addr: *at, len: *size, kind: cpu_kind }) {
                eprintln!("rdb: cannot set a hardware watchpoint at {at:#x}: {e}");
                for s in &free {
                    if self.watches[*s].is_none() {
                        let _ = self.session.remove_watchpoint(*s);
                    }
                }
                return Ok(false);
            }
            self.watches[*slot] = Some(GdbWatch { addr, len, kind });
        }
        Ok(true)
    }

    fn remove_hw_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> TargetResult<bool, Self> {
        let mut found = false;
        for slot in 0..debugreg::SLOTS {
            if self.watches[slot] == Some(GdbWatch { addr, len, kind }) {
                self.watches[slot] = None;
                found = true;
                if let Err(e) = self.session.remove_watchpoint(slot) {
                    return io_error(e).map_err(|_| TargetError::NonFatal);
                }
            }
        }
        Ok(found)
    }
}

impl gdbstub::target::ext::auxv::Auxv for ReplayTarget<'_> {
    fn get_auxv(&self, offset: u64, length: usize, buf: &mut [u8]) -> TargetResult<usize, Self> {
        let auxv = self.session.auxv().unwrap_or_default();
        Ok(copy_range(&auxv, offset, length, buf))
    }
}

impl gdbstub::target::ext::exec_file::ExecFile for ReplayTarget<'_> {
    fn get_exec_file(
        &self,
        _pid: Option<gdbstub::common::Pid>,
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        let exe = self.session.image().map(|i| i.exe.as_os_str().as_bytes().to_vec()).unwrap_or_default();
        Ok(copy_range(&exe, offset, length, buf))
    }
}

impl gdbstub::target::ext::libraries::LibrariesSvr4 for ReplayTarget<'_> {
    fn get_libraries_svr4(&self, offset: u64, length: usize, buf: &mut [u8]) -> TargetResult<usize, Self> {
        let auxv = self.session.auxv().unwrap_or_default();
        let list = svr4::library_list(&self.session, &auxv);
        Ok(copy_range(list.as_bytes(), offset, length, buf))
    }
}

impl gdbstub::target::ext::catch_syscalls::CatchSyscalls for ReplayTarget<'_> {
    fn enable_catch_syscalls(
        &mut self,
        _filter: Option<gdbstub::target::ext::catch_syscalls::SyscallNumbers<'_, u64>>,
    ) -> TargetResult<(), Self> {
        // gdb filters the numbers it asked for itself.
        self.session.catch_syscalls(true);
        Ok(())
    }

    fn disable_catch_syscalls(&mut self) -> TargetResult<(), Self> {
        self.session.catch_syscalls(false);
        Ok(())
    }
}

impl HostIo for ReplayTarget<'_> {
    fn support_open(&mut self) -> Option<HostIoOpenOps<'_, Self>> {
        Some(self)
    }
    fn support_close(&mut self) -> Option<HostIoCloseOps<'_, Self>> {
        Some(self)
    }
    fn support_pread(&mut self) -> Option<HostIoPreadOps<'_, Self>> {
        Some(self)
    }
    fn support_fstat(&mut self) -> Option<HostIoFstatOps<'_, Self>> {
        Some(self)
    }
    fn support_readlink(&mut self) -> Option<HostIoReadlinkOps<'_, Self>> {
        Some(self)
    }
    fn support_setfs(&mut self) -> Option<HostIoSetfsOps<'_, Self>> {
        Some(self)
    }
}

fn path(bytes: &[u8]) -> &std::path::Path {
    std::path::Path::new(std::ffi::OsStr::from_bytes(bytes))
}

impl ReplayTarget<'_> {
    /// The file a client names, read on this machine. `/proc/PID/...` of the debugged process,
    /// as a client names it (pid 1, gdbstub's default process id, or its recorded id; gdb's
    /// `info proc mappings`, `rdb attach --remote` reading the mappings), is that file of the
    /// process replaying it; any other `/proc` entry of a process (`self`, other ids) is not
    /// the program's, since ids on this machine are not the recorded ones: refused (ENOENT).
    fn host_path(&self, filename: &[u8]) -> Result<std::path::PathBuf, HostIoError<ServeError>> {
        let named = path(filename);
        let Ok(rest) = named.strip_prefix("/proc") else { return Ok(named.to_path_buf()) };
        let mut parts = rest.components();
        let Some(first) = parts.next().and_then(|c| c.as_os_str().to_str()) else { return Ok(named.to_path_buf()) };
        let id: Option<u64> = first.parse().ok();
        if id.is_none() && first != "self" && first != "thread-self" {
            // `/proc/cpuinfo` and the like: this machine's.
            return Ok(named.to_path_buf());
        }
        let debugged = self.session.focus().map(|t| t.0 as u64);
        let image = self.session.image();
        match (id, image) {
            (Some(id), Some(image)) if id == 1 || Some(id) == debugged => {
                Ok(std::path::Path::new("/proc").join(image.pid.0.to_string()).join(parts.as_path()))
            }
            _ => Err(HostIoError::Errno(HostIoErrno::ENOENT)),
        }
    }
}

impl HostIoOpen for ReplayTarget<'_> {
    fn open(&mut self, filename: &[u8], flags: HostIoOpenFlags, _mode: HostIoOpenMode) -> HostIoResult<u32, Self> {
        // gdb reads the program's files; nothing is written through rdb.
        if flags.bits() & 0x3 != 0 {
            return Err(HostIoError::Errno(HostIoErrno::EACCES));
        }
        let file = File::open(self.host_path(filename)?)?;
        let fd = self.next_fd;
        self.next_fd += 1;
        self.files.insert(fd, file);
        Ok(fd)
    }
}

impl HostIoClose for ReplayTarget<'_> {
    fn close(&mut self, fd: u32) -> HostIoResult<(), Self> {
        self.files.remove(&fd).map(|_| ()).ok_or(HostIoError::Errno(HostIoErrno::EBADF))
    }
}

impl HostIoPread for ReplayTarget<'_> {
    fn pread(&mut self, fd: u32, count: usize, offset: u64, buf: &mut [u8]) -> HostIoResult<usize, Self> {
        let file = self.files.get(&fd).ok_or(HostIoError::Errno(HostIoErrno::EBADF))?;
        let n = count.min(buf.len());
        Ok(file.read_at(&mut buf[..n], offset)?)
    }
}

impl HostIoFstat for ReplayTarget<'_> {
    fn fstat(&mut self, fd: u32) -> HostIoResult<HostIoStat, Self> {
        let file = self.files.get(&fd).ok_or(HostIoError::Errno(HostIoErrno::EBADF))?;
        let md = file.metadata()?;
        Ok(HostIoStat {
            st_dev: md.dev() as u32,
            st_ino: md.ino() as u32,
            st_mode: HostIoOpenMode::from_bits_truncate(md.mode()),
            st_nlink: md.nlink() as u32,
            st_uid: md.uid(),
            st_gid: md.gid(),
            st_rdev: md.rdev() as u32,
            st_size: md.size(),
            st_blksize: md.blksize(),
            st_blocks: md.blocks(),
            st_atime: md.atime() as u32,
            st_mtime: md.mtime() as u32,
            st_ctime: md.ctime() as u32,
        })
    }
}

impl HostIoReadlink for ReplayTarget<'_> {
    fn readlink(&mut self, filename: &[u8], buf: &mut [u8]) -> HostIoResult<usize, Self> {
        let target = std::fs::read_link(self.host_path(filename)?)?;
        let bytes = target.as_os_str().as_bytes();
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }
}

impl HostIoSetfs for ReplayTarget<'_> {
    fn setfs(&mut self, _fs: FsKind) -> HostIoResult<(), Self> {
        Ok(())
    }
}

impl gdbstub::target::ext::extended_mode::ExtendedMode for ReplayTarget<'_> {
    fn run(
        &mut self,
        _filename: Option<&[u8]>,
        _args: gdbstub::target::ext::extended_mode::Args<'_, '_>,
    ) -> TargetResult<gdbstub::common::Pid, Self> {
        // `run` replays the recording again from its start.
        self.restart().map_err(TargetError::Fatal)?;
        let pid = self.session.focus().map_or(1, |t| t.0 as usize);
        Ok(gdbstub::common::Pid::new(pid).unwrap_or(gdbstub::common::Pid::MIN))
    }

    fn attach(&mut self, _pid: gdbstub::common::Pid) -> TargetResult<(), Self> {
        Err(TargetError::NonFatal)
    }

    fn query_if_attached(
        &mut self,
        _pid: gdbstub::common::Pid,
    ) -> TargetResult<gdbstub::target::ext::extended_mode::AttachKind, Self> {
        // gdb kills a process it started and detaches from one it attached: the replay is
        // ended either way.
        Ok(gdbstub::target::ext::extended_mode::AttachKind::Run)
    }

    fn kill(
        &mut self,
        _pid: Option<gdbstub::common::Pid>,
    ) -> TargetResult<gdbstub::target::ext::extended_mode::ShouldTerminate, Self> {
        self.calls = Default::default();
        // gdb kills before it runs the program again (`run`); when it quits, it disconnects.
        self.exited = true;
        Ok(gdbstub::target::ext::extended_mode::ShouldTerminate::No)
    }

    fn restart(&mut self) -> Result<(), Self::Error> {
        ReplayTarget::restart(self)
    }
}

impl ReplayTarget<'_> {
    /// Go back to where gdb started (`run`): from the checkpoint at the start.
    pub fn restart(&mut self) -> Result<(), ServeError> {
        self.calls = Default::default();
        self.watches = [None; debugreg::SLOTS];
        for slot in 0..debugreg::SLOTS {
            let _ = self.session.remove_watchpoint(slot);
        }
        match self.start.clone() {
            Some(start) => self.session.seek(&start)?,
            None => self.session.restart()?,
        }
        self.exited = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_ranges_are_aligned_pieces() {
        assert_eq!(ReplayTarget::ranges(0x1000, 8), [(0x1000, 8)]);
        assert_eq!(ReplayTarget::ranges(0x1004, 4), [(0x1004, 4)]);
        assert_eq!(ReplayTarget::ranges(0x1003, 4), [(0x1003, 1), (0x1004, 2), (0x1006, 1)]);
        assert_eq!(ReplayTarget::ranges(0x1000, 16), [(0x1000, 8), (0x1008, 8)]);
        assert_eq!(crate::arch::COUNT, 60);
    }
}
