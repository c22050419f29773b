//! Checkpoints: the whole replay saved at a halt, to go back to later without replaying from
//! the start.
//!
//! A checkpoint holds, for each replayed process, a *frozen* fork of it (see `fork`: a single
//! thread, never run again; its memory copy-on-write, so a checkpoint costs the pages the
//! replay writes afterwards) and the state of each of its threads that a fork does not carry:
//! registers and the whole `XSAVE` state, the signal mask, the alternate signal stack, the
//! robust futex list, the `set_tid_address` word, and the siginfo of a signal about to be
//! delivered. It also holds the replayer's own state: the trace position (an event index: the
//! reader seeks there), each thread's replay state (its parked stop, its syscall in progress,
//! its stretch), the breakpoint tables, the counters.
//!
//! Going back to a checkpoint forks each frozen process again and re-creates its other threads
//! in the new copy as rr does: the first thread injects a `clone` per thread, then each thread
//! gets its registers and runs the syscalls that restore its kernel state. Every thread then
//! stands where the replayer expects it: a thread that was stopped for a signal is brought to
//! a signal-delivery stop again with the saved siginfo; a thread that was stopped at a syscall
//! entry comes back just before its `syscall` instruction and is run to that entry again; a thread
//! that was running user code in another process (stopped with `SIGSTOP` for the checkpoint)
//! runs on.
//!
//! Not taken (an error saying why): while a process is being created (a fork event not handled
//! yet), while two processes share an address space (a `vfork` child before its exec), while a
//! thread waits in `rt_sigsuspend` under a temporary signal mask.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use rdb_tracee::ptrace::{self, Regs, SigInfo, Wait};
use rdb_tracee::{mem, procfs, Pid};

use crate::fork::{self, StoppedAt};
use crate::position::Position;
use crate::process::inject_syscall;
use crate::replay::{Breakpoint, Proc, Replayer, Stop};
use crate::session::{Ctx, Halt, HaltKind, SessionStop};
use crate::syscalls::Sysno;
use crate::trace::Tid;
use crate::Error;

/// What a fork does not carry over to a thread made again with `clone`.
#[derive(Clone)]
struct ThreadState {
    regs: Regs,
    xstate: Vec<u8>,
    sigmask: u64,
    altstack: Option<[u8; 24]>,
    robust: (u64, u64),
    clear_tid: u64,
    /// The siginfo of a signal the replay is about to deliver to the thread.
    siginfo: Option<SigInfo>,
}

/// One process of a checkpoint.
struct Frozen {
    /// A single-thread fork of the process, never run again.
    copy: Pid,
    /// The recorded thread the copy's thread stands for.
    first: Tid,
    /// Every thread of the process, `first` included.
    threads: Vec<(Tid, ThreadState)>,
}

/// The replayer's own state at a checkpoint: everything but the processes' real ids.
struct Saved {
    index: u64,
    last_events: HashMap<Tid, u64>,
    procs: Vec<(Tid, Proc)>,
    /// Breakpoint tables by thread group.
    tables: HashMap<Tid, BTreeMap<u64, Breakpoint>>,
    parked: HashMap<Tid, Stop>,
    /// Threads stopped in user code for the checkpoint: they run on after a restore.
    interrupted: HashSet<Tid>,
    root_status: Option<i32>,
    hits: u64,
    steps: u64,
    halted: Option<Halt>,
    /// The halts waiting to be delivered, with their threads' places in their stretches.
    queued: Vec<(Halt, SessionStop, Option<Ctx>)>,
    reported: HashSet<Tid>,
    /// Where the replay was halted, as a point of the debugged process.
    position: Option<Position>,
}

/// The replay saved at a halt (see the module docs).
pub struct Checkpoint {
    frozen: Vec<Frozen>,
    saved: Saved,
}

impl Checkpoint {
    /// The number of events replayed at the checkpoint.
    pub fn events(&self) -> u64 {
        self.saved.index
    }

    /// The recorded thread halted at the checkpoint, if the replay was halted for a debugger.
    pub fn halted_thread(&self) -> Option<Tid> {
        self.saved.halted.map(|h| h.tid)
    }

    /// Where the replay was halted, as a point of the debugged process.
    pub fn position(&self) -> Option<&Position> {
        self.saved.position.as_ref()
    }

    /// The real ids of the frozen copies.
    pub fn copies(&self) -> Vec<Pid> {
        self.frozen.iter().map(|f| f.copy).collect()
    }
}

impl Drop for Checkpoint {
    fn drop(&mut self) {
        for f in &self.frozen {
            fork::discard(f.copy);
        }
    }
}

impl Replayer<'_> {
    /// Stop every thread of every replayed process (a thread running user code gets a
    /// `SIGSTOP`, noted in `interrupted`), parking their stops for their turn.
    fn stop_everything(&mut self) -> Result<(), Error> {
        let mut signalled = HashSet::new();
        for _ in 0..100_000 {
            let running: Vec<(Tid, Pid)> =
                self.procs.iter().filter(|(_, p)| p.running).map(|(t, p)| (*t, p.pid)).collect();
            let Some(&(tid, pid)) = running.first() else { return Ok(()) };
            for (t, p) in &running {
                if signalled.insert(*t) {
                    let group = procfs::thread_group(*p).map_err(Error::ptrace(*p, "finding the process"))?;
                    ptrace::tgkill(group, *p, libc::SIGSTOP).map_err(Error::ptrace(*p, "stopping a thread"))?;
                }
            }
            let w = ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "stopping a thread"))?;
            match w {
                Wait::Stopped { sig: libc::SIGSTOP, event: 0 } if self.procs[&tid].entry_is_none() => {
                    // Stopped in user code: it runs on (without the SIGSTOP) after the checkpoint.
                    self.procs.get_mut(&tid).expect("known").running = false;
                    self.interrupted.insert(tid);
                }
                Wait::Stopped { sig: libc::SIGSTOP, event: 0 } => {
                    // Inside a syscall: let it finish, it stops at the syscall's exit.
                    self.go_raw(tid, 0)?;
                }
                w => {
                    if let Some(stop) = self.classify(pid, w)? {
                        self.parked.insert(tid, stop);
                    }
                }
            }
        }
        Err(Error::Observer("the replayed processes did not stop for a checkpoint".into()))
    }

    /// Why no checkpoint can be taken now, if so.
    fn cannot_checkpoint(&self) -> Option<String> {
        if !self.early_children_is_empty() || self.parked.values().any(|s| matches!(s, Stop::Fork { .. })) {
            return Some("a process is being created".into());
        }
        if self.units.holds_shared_memory() {
            return Some(
                "a process holds memory mapped MAP_SHARED: copies of it would share that memory with the original"
                    .into(),
            );
        }
        let mut tables: Vec<(Tid, &crate::replay::Breakpoints)> = Vec::new();
        for p in self.procs.values() {
            if p.is_suspended() {
                return Some("a thread waits under a temporary signal mask (rt_sigsuspend)".into());
            }
            if let Some((g, _)) = tables.iter().find(|(g, t)| Rc::ptr_eq(t, &p.breakpoints) && *g != p.group) {
                return Some(format!("processes {g} and {} share their memory (vfork)", p.group));
            }
            tables.push((p.group, &p.breakpoints));
        }
        None
    }

    /// Save the replay (see the module docs). Every process is stopped for it and goes on as
    /// it was afterwards.
    pub(crate) fn checkpoint(&mut self) -> Result<Checkpoint, Error> {
        self.stop_everything()?;
        let result = match self.cannot_checkpoint() {
            Some(why) => Err(Error::Observer(format!("no checkpoint can be taken here: {why}"))),
            None => self.save(),
        };
        // Threads stopped in user code for the checkpoint run on.
        for tid in std::mem::take(&mut self.interrupted) {
            self.go_raw(tid, 0)?;
        }
        result
    }

    fn thread_state(&self, tid: Tid) -> Result<ThreadState, Error> {
        let p = &self.procs[&tid];
        let pid = p.pid;
        let e = |what| Error::ptrace(pid, what);
        let mut regs = ptrace::get_regs(pid).map_err(e("reading registers"))?;
        if let Some(Stop::Entry { .. }) = self.parked.get(&tid) {
            // Just before its `syscall` instruction: run, it stops at the same entry again.
            regs.rip -= 2;
            regs.rax = regs.orig_rax;
        }
        let siginfo = match self.parked.get(&tid) {
            Some(Stop::Signal { tsc: None, .. }) => Some(ptrace::get_siginfo(pid).map_err(e("reading siginfo"))?),
            _ => None,
        };
        Ok(ThreadState {
            regs,
            xstate: ptrace::get_xstate(pid).map_err(e("reading the extended state"))?,
            sigmask: procfs::signal_mask(pid).map_err(e("reading the signal mask"))?,
            altstack: p.altstack,
            robust: ptrace::robust_list(pid).map_err(e("reading the robust list"))?,
            clear_tid: p.clear_tid,
            siginfo,
        })
    }

    fn save(&mut self) -> Result<Checkpoint, Error> {
        let position = self.here()?;
        let mut groups: BTreeMap<Tid, Vec<Tid>> = BTreeMap::new();
        for (&tid, p) in &self.procs {
            groups.entry(p.group).or_default().push(tid);
        }
        let mut frozen = Vec::new();
        let mut tables = HashMap::new();
        let discard = |frozen: &Vec<Frozen>| frozen.iter().for_each(|f: &Frozen| fork::discard(f.copy));
        for (group, mut threads) in groups {
            threads.sort();
            let states: Result<Vec<(Tid, ThreadState)>, Error> =
                threads.iter().map(|&t| self.thread_state(t).map(|s| (t, s))).collect();
            let states = match states {
                Ok(s) => s,
                Err(e) => {
                    discard(&frozen);
                    return Err(e);
                }
            };
            // Fork from a thread stopped anywhere but at a syscall entry or for a signal, if
            // there is one (the simplest stops to come back to).
            let plain = |t: &Tid| !matches!(self.parked.get(t), Some(Stop::Entry { .. } | Stop::Signal { .. }));
            let first = threads.iter().copied().find(plain).unwrap_or(threads[0]);
            match self.fork_thread(first) {
                Ok((copy, _)) => frozen.push(Frozen { copy, first, threads: states }),
                Err(e) => {
                    discard(&frozen);
                    return Err(e);
                }
            }
            tables.insert(group, self.procs[&first].breakpoints.borrow().clone());
        }
        // Threads stopped at a syscall entry come back before their syscall instruction, and
        // are run to that entry again by `restore`.
        let parked = self.parked.clone();
        let procs = self
            .procs
            .iter()
            .map(|(&t, p)| {
                let mut p = p.clone();
                p.running = false;
                (t, p)
            })
            .collect();
        Ok(Checkpoint {
            frozen,
            saved: Saved {
                index: self.ev.index,
                last_events: self.ev.last.clone(),
                procs,
                tables,
                parked,
                interrupted: self.interrupted.clone(),
                root_status: self.root_status(),
                hits: self.hits,
                steps: self.steps,
                halted: self.dbg.halted,
                queued: self.dbg.queued.iter().map(|&(h, stop)| (h, stop, self.dbg.ctx.get(&h.tid).cloned())).collect(),
                reported: self.dbg.reported.clone(),
                position,
            },
        })
    }

    /// Replace the replay by the one saved in `cp` (the current processes are killed).
    pub(crate) fn restore(&mut self, cp: &Checkpoint) -> Result<(), Error> {
        self.kill_all();
        // No process held shared memory at the checkpoint (see `cannot_checkpoint`).
        self.units = Default::default();
        self.shared_files = Default::default();
        let mut pids: HashMap<Tid, Pid> = HashMap::new();
        let mut made: Vec<Pid> = Vec::new();
        let result = (|| {
            for f in &cp.frozen {
                let first = fork::fork_stopped(f.copy, StoppedAt::Elsewhere)
                    .map_err(Error::ptrace(f.copy, "forking a checkpoint"))?;
                made.push(first);
                for (tid, state) in &f.threads {
                    let pid = if *tid == f.first {
                        first
                    } else {
                        let t = fork::clone_thread(first).map_err(Error::ptrace(first, "re-creating a thread"))?;
                        made.push(t);
                        t
                    };
                    apply(pid, state).map_err(Error::ptrace(pid, "restoring a thread's state"))?;
                    pids.insert(*tid, pid);
                }
            }
            Ok::<(), Error>(())
        })();
        if let Err(e) = result {
            for pid in made {
                fork::discard(pid);
            }
            return Err(e);
        }
        let s = &cp.saved;
        let tables: HashMap<Tid, crate::replay::Breakpoints> =
            s.tables.iter().map(|(g, t)| (*g, Rc::new(RefCell::new(t.clone())))).collect();
        self.procs.clear();
        self.by_pid.clear();
        for (tid, p) in &s.procs {
            let mut p = p.clone();
            p.pid = pids[tid];
            p.breakpoints = tables[&p.group].clone();
            if let Some(image) = p.image.as_mut() {
                image.pid = pids.get(&p.group).copied().unwrap_or(p.pid);
            }
            self.by_pid.insert(p.pid, *tid);
            self.procs.insert(*tid, p);
        }
        self.parked = s.parked.clone();
        // A thread parked at a syscall entry stands just before its `syscall` instruction: run,
        // it stops at the same entry at once, and is parked there as it was (left standing, it
        // was neither parked nor running, and the replay waited for it forever).
        let entries: Vec<Tid> =
            self.parked.iter().filter(|(_, stop)| matches!(stop, Stop::Entry { .. })).map(|(t, _)| *t).collect();
        for tid in entries {
            let saved = self.parked.remove(&tid).expect("parked");
            let pid = self.procs[&tid].pid;
            self.go_raw(tid, 0)?;
            let w = ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "running a thread to its syscall entry"))?;
            let again = self.classify(pid, w)?;
            match (&again, &saved) {
                (Some(Stop::Entry { nr, args, pc }), Stop::Entry { nr: n, args: a, pc: p })
                    if (nr, args, pc) == (n, a, p) =>
                {
                    self.parked.insert(tid, saved);
                }
                _ => {
                    return Err(Error::Observer(format!(
                        "restoring a checkpoint: thread {tid} was to stop at its syscall entry ({saved:?}) again, and stopped with {again:?}"
                    )))
                }
            }
        }
        self.ev.reset_to(s.index, s.last_events.clone())?;
        self.restore_counters(s.root_status, s.hits, s.steps);
        self.dbg.halted = s.halted;
        self.dbg.reported = s.reported.clone();
        self.dbg.pending = None;
        self.dbg.stepping = None;
        self.dbg.single_stepping = None;
        // The halted thread's place in its stretch; counting starts there again. A thread
        // with a halt still to deliver has its place too.
        self.dbg.ctx.clear();
        self.dbg.queued = s.queued.iter().map(|&(h, stop, _)| (h, stop)).collect();
        for (h, _, ctx) in &s.queued {
            if let Some(ctx) = ctx {
                self.dbg.ctx.insert(h.tid, Ctx { log: None, ..ctx.clone() });
            }
        }
        if let (Some(Position::InStretch { tid, stretch, moves }), Some(h)) = (&s.position, s.halted) {
            if h.kind == HaltKind::InCode || moves.is_empty() {
                let ctx = Ctx { stretch: *stretch, moves: moves.clone(), ..Ctx::default() };
                self.dbg.ctx.insert(*tid, ctx);
            }
        }
        // Each thread where the replayer expects it.
        for f in &cp.frozen {
            for (tid, state) in &f.threads {
                if let Some(Stop::Signal { sig, tsc: None }) = self.parked.get(tid) {
                    let pid = pids[tid];
                    to_signal_stop(pid, *sig, state.siginfo.as_ref())
                        .map_err(Error::ptrace(pid, "bringing a thread back to its signal"))?;
                }
            }
        }
        for tid in &s.interrupted {
            self.go_raw(*tid, 0)?;
        }
        // Interruption points being run to, and the debugged process's watchpoints (debug
        // registers are not inherited).
        for p in self.procs.values() {
            if let (Some(key), None) = (&p.point, &p.stub) {
                let watch = rdb_tracee::Watchpoint { addr: key.pc(), len: 1, kind: rdb_tracee::WatchKind::Execute };
                rdb_tracee::debugreg::set_watchpoint(p.pid, crate::interrupt::REPLAY_SLOT, watch)
                    .map_err(Error::ptrace(p.pid, "arming an interruption point"))?;
            }
        }
        // The debugged process's watchpoints (debug registers are not inherited).
        if let Some(group) = self.dbg.focus {
            for p in self.procs.values().filter(|p| p.group == group) {
                for (slot, w) in self.dbg.watch.iter().enumerate() {
                    if let Some(w) = w {
                        rdb_tracee::debugreg::set_watchpoint(p.pid, slot, *w)
                            .map_err(Error::ptrace(p.pid, "arming a watchpoint"))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Give a re-created (or re-forked) thread `state`: registers and extended state, then the
/// kernel state it restores with its own syscalls (arguments placed below its stack, put back
/// afterwards).
fn apply(pid: Pid, state: &ThreadState) -> std::io::Result<()> {
    ptrace::set_regs(pid, &state.regs)?;
    ptrace::set_xstate(pid, &state.xstate)?;
    let scratch = (state.regs.rsp.wrapping_sub(1024)) & !15;
    let mut saved = [0u8; 64];
    mem::read_exact(pid, scratch, &mut saved)?;
    let check = |what: &str, r: i64| {
        if r < 0 {
            Err(std::io::Error::other(format!("{what} failed with {r}")))
        } else {
            Ok(())
        }
    };
    let result = (|| {
        mem::write(pid, scratch, &state.sigmask.to_le_bytes())?;
        const SIG_SETMASK: u64 = 2;
        check(
            "rt_sigprocmask",
            inject_syscall(pid, Sysno::rt_sigprocmask as u64, [SIG_SETMASK, scratch, 0, 8, 0, 0])?,
        )?;
        let ss = state.altstack.unwrap_or_else(|| {
            // SS_DISABLE
            let mut ss = [0u8; 24];
            ss[8..12].copy_from_slice(&2i32.to_le_bytes());
            ss
        });
        mem::write(pid, scratch + 16, &ss)?;
        check("sigaltstack", inject_syscall(pid, Sysno::sigaltstack as u64, [scratch + 16, 0, 0, 0, 0, 0])?)?;
        if state.robust.0 != 0 {
            check(
                "set_robust_list",
                inject_syscall(pid, Sysno::set_robust_list as u64, [state.robust.0, state.robust.1, 0, 0, 0, 0])?,
            )?;
        }
        inject_syscall(pid, Sysno::set_tid_address as u64, [state.clear_tid, 0, 0, 0, 0, 0])?;
        Ok(())
    })();
    mem::write(pid, scratch, &saved)?;
    result
}

/// Bring a thread that stands anywhere (not at a syscall entry) to a signal-delivery stop of
/// `sig` with `siginfo`, as it was when it was saved.
fn to_signal_stop(pid: Pid, sig: i32, siginfo: Option<&SigInfo>) -> std::io::Result<()> {
    let group = procfs::thread_group(pid)?;
    ptrace::tgkill(group, pid, libc::SIGSTOP)?;
    ptrace::resume_syscall(pid, 0)?;
    match ptrace::wait_pid(pid)? {
        Wait::Stopped { sig: libc::SIGSTOP, event: 0 } => {}
        other => return Err(std::io::Error::other(format!("unexpected stop {other:?}"))),
    }
    // The stop's signal becomes `sig` with its siginfo (a resume with `sig` then keeps it).
    let mut info = match siginfo {
        Some(i) => *i,
        None => [0u8; 128],
    };
    info[..4].copy_from_slice(&sig.to_le_bytes());
    ptrace::set_siginfo(pid, &info)
}
