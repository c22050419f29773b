//! Page protection for watched memory that does not fit the debug registers (more than four
//! watched pieces, ranges longer than 8 bytes): the observer asks for ranges
//! ([`ReplayObserver::take_page_watches`]); the replayer makes the pages holding them read-only
//! in the replayed process with an injected `mprotect`, and each write there faults.
//!
//! - **A fault of ours** is a `SIGSEGV` with `SEGV_ACCERR` at an address in a page rdb made
//!   read-only, unless the trace's next event of the thread is that fault (a `SIGSEGV` with
//!   the same code and address: the program's own). The program never sees it: the page gets the program's protection
//!   back, the faulting instruction is single-stepped (a write spanning two protected pages
//!   lifts both), the pages are protected again, and the observer is told
//!   ([`ReplayObserver::on_page_write`]) standing after the instruction, like a debug-register
//!   hit. Instructions run displaced or stepped over a breakpoint are handled the same way.
//! - **The program's own protection** is what the program sees: after each `mmap`, `mprotect`,
//!   `munmap`, `mremap` or `brk`, the watched pages are read from `/proc/PID/maps` again, the
//!   program's protection of a page it changed is noted, and pages still writable for the
//!   program are protected again. A page the program itself makes read-only is left alone
//!   (its writes fault for the program, as recorded).
//! - **The replayer's writes** (recorded effects of emulated system calls, thread ids) go
//!   through `PTRACE_POKEDATA` or `/proc/PID/mem`, which write through page protections
//!   (`rdb_tracee::mem::write`); the debug host's mirror reads with `process_vm_readv`, which
//!   read-only pages allow.
//! - **System calls the replay runs again in the kernel** that write into a protected page
//!   (see `kernel_writes`): one that reports old state there (an old signal action or mask,
//!   alternate stack, `arch_prctl`'s get) is swapped at its entry for an `mprotect` giving the
//!   page back, and runs injected at the exit, the page protected again after. Refused, loudly
//!   (the kernel's write would fail where the recorded one succeeded): `madvise`, `mremap` and
//!   a thread-exit id there.
//! - **Signals** are delivered with the pages unprotected, by a single step into the handler
//!   (see [`Replayer::deliver_past_protection`]): the kernel writes the frame onto the stack.
//!
//! Threads share the protection (one address space); a forked process inherits it and is
//! tracked like its parent.

use std::collections::BTreeMap;

use rdb_tracee::procfs;
use rdb_tracee::ptrace::{self, SigInfo, Wait};

use super::{Replayer, Stepped, Stop};
use crate::displace::StepOver;
use crate::observer::BreakpointStop;
use crate::process::inject_syscall;
use crate::syscalls::{self, Policy, Sysno};
use crate::trace::{Event, Tid};
use crate::Error;

const PAGE: u64 = 4096;
const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;
const SEGV_ACCERR: i32 = 2;
const MREMAP_FIXED: u64 = 2;

/// One process's protected pages.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pages {
    /// Watched ranges `[start, end)`.
    ranges: Vec<(u64, u64)>,
    /// Page -> the program's own protection, for the pages rdb made read-only.
    protected: BTreeMap<u64, u64>,
    /// Threads whose system call (number, arguments, page) was swapped at its entry for an
    /// `mprotect` giving a page back its protection, to be run at the exit (see
    /// [`Replayer::check_protected_entry`]).
    swapped: BTreeMap<Tid, (u64, [u64; 6], u64)>,
    /// Ranges were added and are not protected yet.
    pending: bool,
    /// Pages given back their program protection for the instruction being stepped.
    lifted: Vec<u64>,
}

/// The pages of `[start, end)`.
fn pages_of(start: u64, end: u64) -> impl Iterator<Item = u64> {
    (start & !(PAGE - 1)..end).step_by(PAGE as usize)
}

impl Replayer<'_> {
    /// The ranges the observer asked for, for `tid`'s process (protected at the next point
    /// where code can be injected into it: [`Replayer::protect_pending`]).
    pub(super) fn take_page_watches(&mut self, tid: Tid) {
        let ranges = self.observer.take_page_watches();
        if ranges.is_empty() {
            return;
        }
        let group = self.proc(tid).group;
        let pages = self.pages.entry(group).or_default();
        pages.ranges.extend(ranges.into_iter().map(|(a, len)| (a, a.saturating_add(len))));
        pages.pending = true;
    }

    /// Protects what was asked for since, with `tid` stopped where a syscall can be injected
    /// (not at a syscall entry).
    pub(super) fn protect_pending(&mut self, tid: Tid) -> Result<(), Error> {
        let group = self.proc(tid).group;
        if self.pages.get(&group).is_some_and(|p| p.pending) {
            self.protect_ranges(tid)?;
        }
        Ok(())
    }

    /// Makes every page of the watched ranges that the program can write read-only.
    fn protect_ranges(&mut self, tid: Tid) -> Result<(), Error> {
        let (pid, group) = (self.proc(tid).pid, self.proc(tid).group);
        let Some(pages) = self.pages.get_mut(&group) else { return Ok(()) };
        pages.pending = false;
        let maps = procfs::maps(pid).map_err(Error::ptrace(pid, "reading the memory map"))?;
        let mut wanted: BTreeMap<u64, u64> = BTreeMap::new();
        for &(start, end) in &pages.ranges {
            for page in pages_of(start, end) {
                if pages.protected.contains_key(&page) {
                    continue;
                }
                let Some(m) = maps.iter().find(|m| m.contains(page)) else { continue };
                if !m.writable {
                    continue; // the program cannot write it either: its faults are its own
                }
                let prot =
                    PROT_WRITE | if m.readable { PROT_READ } else { 0 } | if m.executable { PROT_EXEC } else { 0 };
                wanted.insert(page, prot);
            }
        }
        for (page, prot) in wanted {
            mprotect(pid, page, prot & !PROT_WRITE | PROT_READ)?;
            pages.protected.insert(page, prot);
        }
        Ok(())
    }

    /// The first page rdb protected in `tid`'s process (a diversion, a fork of it, would
    /// fault there).
    pub(crate) fn first_protected_page(&self, tid: Tid) -> Option<u64> {
        self.pages.get(&self.proc(tid).group).and_then(|p| p.protected.keys().next().copied())
    }

    /// Whether `tid`'s process has pages rdb protected.
    fn has_protected(&self, tid: Tid) -> bool {
        self.pages.get(&self.proc(tid).group).is_some_and(|p| !p.protected.is_empty())
    }

    /// At the entry of system call `nr`: a call the kernel runs again in replay that writes
    /// into a protected page. One that only reports old state (signal action or mask, alternate
    /// stack, `arch_prctl`'s get) into one page is swapped for an `mprotect` giving that page the
    /// program's protection, and runs at the exit ([`Replayer::finish_swapped`]); others are
    /// refused (see the module docs).
    pub(super) fn check_protected_entry(&mut self, tid: Tid, nr: u64, args: &[u64; 6]) -> Result<(), Error> {
        if !self.has_protected(tid) {
            return Ok(());
        }
        let protected = &self.pages[&self.proc(tid).group].protected;
        let found = kernel_writes(nr, args).into_iter().find_map(|(start, len)| {
            pages_of(start, start.saturating_add(len.max(1))).find(|p| protected.contains_key(p))
        });
        let swappable = [Sysno::rt_sigaction, Sysno::rt_sigprocmask, Sysno::sigaltstack, Sysno::arch_prctl]
            .iter()
            .any(|&c| c as u64 == nr);
        let pages: Vec<u64> = kernel_writes(nr, args)
            .into_iter()
            .flat_map(|(start, len)| pages_of(start, start.saturating_add(len.max(1))))
            .filter(|p| protected.contains_key(p))
            .collect();
        if let (Some(&page), true, 1) = (pages.first(), swappable, pages.len()) {
            let prot = protected[&page];
            let pid = self.proc(tid).pid;
            let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            (regs.orig_rax, regs.rdi, regs.rsi, regs.rdx) = (Sysno::mprotect as u64, page, PAGE, prot);
            ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "swapping a system call"))?;
            let group = self.proc(tid).group;
            self.pages.get_mut(&group).expect("present").swapped.insert(tid, (nr, *args, page));
            return Ok(());
        }
        match found {
            None => Ok(()),
            Some(page) => Err(Error::Unsupported {
                pid: self.proc(tid).pid,
                what: format!(
                    "`{}` (run again by the replay) writes to page {page:#x}, which rdb made read-only for a watch that uses page protection: the kernel writes there in replay and its write would fail where the recorded one succeeded; watch at most 4 values of up to 8 bytes each (debug registers) in this program",
                    syscalls::name(nr)
                ),
            }),
        }
    }

    /// At the exit of a call swapped at its entry (the page has the program's protection):
    /// the call runs, the page is protected again; its result (else `ret`, the exit's).
    pub(super) fn finish_swapped(&mut self, tid: Tid, ret: i64) -> Result<i64, Error> {
        let group = self.proc(tid).group;
        let Some((nr, args, page)) = self.pages.get_mut(&group).and_then(|p| p.swapped.remove(&tid)) else {
            return Ok(ret);
        };
        let pid = self.proc(tid).pid;
        if ret != 0 {
            return Err(Error::Unsupported {
                pid,
                what: format!("giving page {page:#x} its protection back failed ({ret})"),
            });
        }
        let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        (regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9) =
            (args[0], args[1], args[2], args[3], args[4], args[5]);
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "restoring a swapped call's arguments"))?;
        let result = inject_syscall(pid, nr, args).map_err(Error::ptrace(pid, "running a swapped system call"))?;
        if let Some(&prot) = self.pages.get(&group).and_then(|p| p.protected.get(&page)) {
            mprotect(pid, page, prot & !PROT_WRITE | PROT_READ)?;
        }
        regs.rax = result as u64;
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "setting a swapped call's result"))?;
        Ok(result)
    }

    /// After system call `nr` of `tid` completed (its result `ret` in place): the address
    /// space calls' changes reconciled, ranges asked for meanwhile protected.
    pub(super) fn after_syscall(&mut self, tid: Tid, nr: u64, args: &[u64; 6], ret: i64) -> Result<(), Error> {
        let group = self.proc(tid).group;
        let Some(pages) = self.pages.get(&group) else { return Ok(()) };
        if syscalls::policy(nr) != Policy::AddressSpace || pages.ranges.is_empty() {
            return self.protect_pending(tid);
        }
        let pid = self.proc(tid).pid;
        let maps = procfs::maps(pid).map_err(Error::ptrace(pid, "reading the memory map"))?;
        let pages = self.pages.get_mut(&group).expect("present");
        let changed: Option<(u64, u64)> = if ret < 0 {
            None // it may have changed part of its range
        } else if nr == Sysno::mprotect as u64 || nr == Sysno::munmap as u64 {
            Some((args[0], args[0].saturating_add(args[1])))
        } else if nr == Sysno::mmap as u64 {
            Some((ret as u64, (ret as u64).saturating_add(args[1])))
        } else {
            None // brk, mremap: pages whose mapping no longer looks like ours
        };
        pages.protected.retain(|&page, prot| {
            let ours = *prot & !PROT_WRITE | PROT_READ;
            let Some(m) = maps.iter().find(|m| m.contains(page)) else { return false };
            match changed {
                Some((start, end)) => !(page < end && start < page + PAGE),
                None => {
                    let now = if m.readable { PROT_READ } else { 0 }
                        | if m.writable { PROT_WRITE } else { 0 }
                        | if m.executable { PROT_EXEC } else { 0 };
                    now == ours
                }
            }
        });
        self.protect_ranges(tid)
    }

    /// A `SIGSEGV` stop of `tid` (siginfo `info`): when it is a write to a page rdb protected,
    /// the write is done (see the module docs) and the thread left stopped after it:
    /// `Some(None)`; `Some(Some(stop))` when the instruction then faulted for its own reasons
    /// (the program's recorded fault); `None` when the fault is not rdb's.
    pub(super) fn protected_write(&mut self, tid: Tid, info: &SigInfo) -> Result<Option<Option<Stop>>, Error> {
        if !self.has_protected(tid) {
            return Ok(None);
        }
        let recorded_fault = self.recorded_fault(tid, info)?;
        if ptrace::si_code(info) == libc::SI_KERNEL && !recorded_fault {
            return Err(Error::Unsupported {
                pid: self.proc(tid).pid,
                what: "the kernel could not write a signal frame (SIGSEGV from the kernel where the recording had none): a signal stack page is likely read-only for a watch that uses page protection; watch at most 4 values of up to 8 bytes each (debug registers) in this program".into(),
            });
        }
        let Some(addr) = self.lift_for_fault(tid, info, recorded_fault)? else { return Ok(None) };
        let pid = self.proc(tid).pid;
        let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        let displaced = self.proc(tid).breakpoints.borrow().iter().find_map(|(&at, bp)| {
            matches!(bp.over, StepOver::Displaced(slot) if slot == regs.rip).then_some((at, bp.orig))
        });
        if let Some((at, orig)) = displaced {
            // A displaced copy (see `displace`): the instruction runs in its place instead, so
            // that the thread stands after it there (the write's place names the program's
            // code).
            regs.rip = at;
            match self.step_lifted(tid, at, regs, orig)? {
                Stepped::Done => {}
                Stepped::Fault(stop) => return Ok(Some(Some(stop))),
                Stepped::Gone => return Ok(Some(None)),
            }
            self.after_protected_write(tid, addr)?;
            return Ok(Some(None));
        }
        loop {
            ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "stepping a write to a protected page"))?;
            match ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "stepping a write to a protected page"))? {
                Wait::Stopped { sig: libc::SIGTRAP, .. } => break,
                Wait::Stopped { sig, event: 0 } => {
                    let Ok(info) = ptrace::get_siginfo(pid) else { continue };
                    if !ptrace::is_synchronous(sig, ptrace::si_code(&info)) {
                        continue; // a stray signal of the replay world: dropped, as elsewhere
                    }
                    let recorded = self.recorded_fault(tid, &info)?;
                    if sig == libc::SIGSEGV && self.lift_for_fault(tid, &info, recorded)?.is_some() {
                        continue; // the write spans a second protected page
                    }
                    self.reprotect_lifted(tid)?;
                    return Ok(Some(Some(Stop::Signal { sig, tsc: None })));
                }
                Wait::Stopped { .. } => continue,
                w => {
                    self.on_gone(tid, w.raw_exit_status())?;
                    return Ok(Some(None));
                }
            }
        }
        self.after_protected_write(tid, addr)?;
        Ok(Some(None))
    }

    /// A signal stop of `tid` while it steps an instruction: when it is a write fault in a
    /// page rdb protected, the page is lifted (see [`Replayer::lift_for_fault`]).
    pub(super) fn lift_for_page_write(&mut self, tid: Tid, sig: i32) -> Result<Option<u64>, Error> {
        if sig != libc::SIGSEGV || !self.has_protected(tid) {
            return Ok(None);
        }
        let pid = self.proc(tid).pid;
        let Ok(info) = ptrace::get_siginfo(pid) else { return Ok(None) };
        let recorded = self.recorded_fault(tid, &info)?;
        self.lift_for_fault(tid, &info, recorded)
    }

    /// Whether the trace's next event of `tid` is this fault (`SIGSEGV` with the same code
    /// and address): the program's own.
    fn recorded_fault(&mut self, tid: Tid, info: &SigInfo) -> Result<bool, Error> {
        Ok(match self.ev.next_of(tid)? {
            Some(Event::Signal { sig: libc::SIGSEGV, siginfo, .. }) => match <SigInfo>::try_from(siginfo.as_slice()) {
                Ok(recorded) => {
                    ptrace::si_code(&recorded) == ptrace::si_code(info)
                        && ptrace::si_addr(&recorded) == ptrace::si_addr(info)
                }
                Err(_) => true, // no siginfo kept: take it as the program's (never hide a fault)
            },
            _ => false,
        })
    }

    /// When `info` is a write fault of `tid` in a page rdb protected: gives the page back its
    /// program protection until [`Replayer::reprotect_lifted`]; the fault address.
    pub(super) fn lift_for_fault(&mut self, tid: Tid, info: &SigInfo, recorded: bool) -> Result<Option<u64>, Error> {
        if recorded || ptrace::si_code(info) != SEGV_ACCERR {
            return Ok(None);
        }
        let (pid, group) = (self.proc(tid).pid, self.proc(tid).group);
        let addr = ptrace::si_addr(info);
        let page = addr & !(PAGE - 1);
        let Some(pages) = self.pages.get_mut(&group) else { return Ok(None) };
        let Some(&prot) = pages.protected.get(&page) else { return Ok(None) };
        if pages.lifted.contains(&page) {
            return Ok(None);
        }
        mprotect(pid, page, prot)?;
        pages.lifted.push(page);
        Ok(Some(addr))
    }

    /// Protects the lifted pages again.
    pub(super) fn reprotect_lifted(&mut self, tid: Tid) -> Result<(), Error> {
        let (pid, group) = (self.proc(tid).pid, self.proc(tid).group);
        let Some(pages) = self.pages.get_mut(&group) else { return Ok(()) };
        for page in std::mem::take(&mut pages.lifted) {
            if let Some(&prot) = pages.protected.get(&page) {
                mprotect(pid, page, prot & !PROT_WRITE | PROT_READ)?;
            }
        }
        Ok(())
    }

    /// After the instruction that wrote at `addr` ran (the thread stands after it): protection
    /// back, and the observer told (and the debug registers the same instruction fired);
    /// `addr` 0: a write anywhere in the protected pages.
    pub(super) fn after_protected_write(&mut self, tid: Tid, addr: u64) -> Result<(), Error> {
        self.reprotect_lifted(tid)?;
        let pid = self.proc(tid).pid;
        let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        if self.observer_watch.contains_key(&self.proc(tid).group) {
            self.observer_watch_hits(tid, &regs)?;
        }
        let image = self.image_of(tid);
        let stretch = self.proc(tid).stretch;
        let stop = BreakpointStop { tid, pid, addr: regs.rip, regs, image: &image, stretch, hit: None };
        self.observer.on_page_write(&stop, addr).map_err(Error::Observer)?;
        self.plant_requested(tid)?;
        self.arm_requested(tid)?;
        self.protect_pending(tid)
    }

    /// Resuming thread `pid` with signal `sig` while its process has protected pages: the
    /// kernel writes the signal frame on the thread's stack, which may be a protected page. The
    /// pages get the program's protection for the delivery: the thread single-steps into the
    /// handler (or, for a signal without one, one instruction, whose write the observer then
    /// sees as a change), the pages are protected again and the thread goes on. Whether it
    /// did (else the caller resumes it).
    pub(super) fn deliver_past_protection(&mut self, pid: rdb_tracee::Pid, sig: i32) -> Result<bool, Error> {
        let Some(&tid) = self.by_pid.get(&pid) else { return Ok(false) };
        if sig == 0 || !self.has_protected(tid) {
            return Ok(false);
        }
        // Only at the signal's delivery stop: from a system call's stop the kernel queues it,
        // and it comes back as a delivery stop.
        let Some(info) = ptrace::get_siginfo(pid).ok().filter(|info| ptrace::si_signo(info) == sig) else {
            return Ok(false);
        };
        let group = self.proc(tid).group;
        let pages: Vec<(u64, u64)> = self.pages[&group].protected.iter().map(|(&p, &prot)| (p, prot)).collect();
        for &(page, prot) in &pages {
            mprotect(pid, page, prot)?;
        }
        self.pages.get_mut(&group).expect("present").lifted = pages.iter().map(|&(p, _)| p).collect();
        // The injected calls left the delivery stop: resumed with the signal, the thread stops
        // for it again, where it is delivered with its siginfo.
        ptrace::single_step(pid, sig).map_err(Error::ptrace(pid, "delivering a signal"))?;
        let mut delivered = false;
        loop {
            let w = ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "delivering a signal"))?;
            if self.debug {
                let rip = ptrace::get_regs(pid).map(|r| r.rip).unwrap_or(0);
                eprintln!("rdb-debug: delivering signal {sig} past protected pages: {w:?} at {rip:#x}");
            }
            match w {
                Wait::Stopped { sig: libc::SIGTRAP, .. } => break,
                Wait::Stopped { sig: s, event: 0 } if s == sig && !delivered => {
                    delivered = true;
                    ptrace::set_siginfo(pid, &info).map_err(Error::ptrace(pid, "setting siginfo"))?;
                    ptrace::single_step(pid, sig).map_err(Error::ptrace(pid, "delivering a signal"))?;
                }
                Wait::Stopped { .. } => {
                    // A stray signal of the replay world: dropped, the step goes on.
                    ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "delivering a signal"))?;
                }
                w => {
                    // The signal ended the process.
                    self.pages.get_mut(&group).expect("present").lifted.clear();
                    self.proc_mut(tid).running = false;
                    self.parked.insert(tid, Stop::Gone { status: w.raw_exit_status() });
                    return Ok(true);
                }
            }
        }
        self.after_protected_write(tid, 0)?;
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
        self.proc_mut(tid).running = true;
        Ok(true)
    }

    /// A forked copy of `parent`'s process inherited its protected pages.
    pub(super) fn pages_forked(&mut self, parent: Tid, child: Tid) {
        if let Some(p) = self.pages.get(&parent).cloned() {
            self.pages.insert(child, Pages { lifted: Vec::new(), swapped: BTreeMap::new(), ..p });
        }
    }
}

/// The memory the kernel writes (or clears, or moves) when the replay runs system call `nr`
/// again (calls it emulates are written by the replayer, through any protection): `(address,
/// length)` each. The kernel's own writes of thread ids at `clone` are redone by the replayer;
/// the one at a thread's exit (`set_tid_address`, `CLONE_CHILD_CLEARTID`) is not.
fn kernel_writes(nr: u64, args: &[u64; 6]) -> Vec<(u64, u64)> {
    const ARCH_GET_FS: u64 = 0x1003;
    const ARCH_GET_GS: u64 = 0x1004;
    let Some(call) = Sysno::new(nr as usize) else { return Vec::new() };
    let ranges = match call {
        Sysno::rt_sigaction => vec![(args[2], 32)],
        Sysno::rt_sigprocmask => vec![(args[2], args[3])],
        Sysno::sigaltstack => vec![(args[1], 24)],
        Sysno::arch_prctl if matches!(args[0], ARCH_GET_FS | ARCH_GET_GS) => vec![(args[1], 8)],
        Sysno::madvise => vec![(args[0], args[1])],
        Sysno::set_tid_address => vec![(args[0], 4)],
        Sysno::clone if args[0] & libc::CLONE_CHILD_CLEARTID as u64 != 0 => vec![(args[3], 4)],
        Sysno::mremap if args[3] & MREMAP_FIXED != 0 => vec![(args[0], args[1]), (args[4], args[2])],
        Sysno::mremap => vec![(args[0], args[1])],
        _ => Vec::new(),
    };
    ranges.into_iter().filter(|&(address, _)| address != 0).collect()
}

/// `mprotect(page, PAGE, prot)` run by the stopped tracee `pid`.
fn mprotect(pid: rdb_tracee::Pid, page: u64, prot: u64) -> Result<(), Error> {
    let r = inject_syscall(pid, Sysno::mprotect as u64, [page, PAGE, prot, 0, 0, 0])
        .map_err(Error::ptrace(pid, "changing a watched page's protection"))?;
    if r != 0 {
        return Err(Error::Unsupported {
            pid,
            what: format!("mprotect({page:#x}, {PAGE}, {prot}) for a watch failed with {r}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{kernel_writes, pages_of};
    use crate::syscalls::Sysno;

    #[test]
    fn the_kernel_writes_of_re_executed_calls_are_their_output_arguments() {
        let call = |c: Sysno, args: [u64; 6]| kernel_writes(c as u64, &args);
        // rt_sigaction(sig, act, oldact, 8): only the old action is written; none without one.
        assert_eq!(call(Sysno::rt_sigaction, [10, 0x1000, 0x2000, 8, 0, 0]), [(0x2000, 32)]);
        assert_eq!(call(Sysno::rt_sigaction, [10, 0x1000, 0, 8, 0, 0]), []);
        assert_eq!(call(Sysno::rt_sigprocmask, [0, 0x1000, 0x3000, 8, 0, 0]), [(0x3000, 8)]);
        assert_eq!(call(Sysno::arch_prctl, [0x1002, 0x4000, 0, 0, 0, 0]), []); // ARCH_SET_FS
        assert_eq!(call(Sysno::arch_prctl, [0x1003, 0x4000, 0, 0, 0, 0]), [(0x4000, 8)]);
        assert_eq!(call(Sysno::mremap, [0x5000, 4096, 8192, 2, 0x9000, 0]), [(0x5000, 4096), (0x9000, 8192)]);
        assert_eq!(call(Sysno::write, [1, 0x1000, 10, 0, 0, 0]), []); // emulated: the replayer writes
    }

    #[test]
    fn a_range_covers_the_pages_it_touches() {
        assert_eq!(pages_of(0x1ff8, 0x2008).collect::<Vec<_>>(), [0x1000, 0x2000]);
        assert_eq!(pages_of(0x1000, 0x1040).collect::<Vec<_>>(), [0x1000]);
        assert_eq!(pages_of(0x1000, 0x1000).count(), 0);
    }
}
