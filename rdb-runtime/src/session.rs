//! A replay a debugger drives: run until something the debugger asked for, look at any thread,
//! go on.
//!
//! [`Session`] wraps the replayer. [`Session::resume`] runs the replay, in the recorded order
//! and checked against the trace as always, until a *halt*: a breakpoint or watchpoint the
//! debugger set, the end of a single step, a recorded fault, a syscall (when asked), an
//! interrupt, the debugged process exiting, or the end of the trace ([`SessionStop`]). While
//! halted, every thread of the debugged process is in a ptrace stop: [`Session::thread`] gives
//! any of them as a read-only [`Target`] (registers with `fs_base`, memory without the
//! replayer's `int3` bytes), and breakpoints ([`Session::set_breakpoint`]) and hardware
//! watchpoints ([`Session::set_watchpoint`], armed in every thread) may be added and removed.
//! The replay itself is never written to: a debugger that wants to change the program's state
//! runs the change in a disposable copy instead.
//!
//! The observer (regions) keeps running while a debugger drives the replay: a breakpoint
//! that is both a region's and the debugger's runs the region, then halts.
//!
//! # Where the replay halts
//!
//! One thread of a process runs user code at a time (see the crate docs); the user code a
//! thread runs from one of its events to the next is its *stretch*, named by the index of the
//! event that started it ([`ThreadInfo::stretch`]). A halt is at one of three kinds of points:
//!
//! - *in code*: inside a stretch, where a breakpoint, watchpoint or single step stopped it;
//! - *at a stretch start*: right after an event, before the thread runs user code again
//!   (after a step over a `syscall` instruction, at a syscall's exit when syscalls are caught,
//!   on an interrupt, at a `goto` target);
//! - *before an event*: the thread stopped for its next event (a syscall entry, a recorded
//!   fault) and waits, unhandled, until the replay goes on.
//!
//! # Several halts at once
//!
//! A thread may halt before an event (a caught syscall entry, say) while another thread of its
//! process runs user code (an entry consumes nothing, so it is handled while another thread's
//! stretch runs). Before the halt is reported that thread is stopped too (every thread is in a
//! ptrace stop at a halt), and it may stop at a watchpoint or breakpoint of the debugger on the
//! way: a second halt. Every halt is delivered, each once, in the order the replay met them
//! (which is the same in every replay): the later ones wait in a queue, and each
//! [`Session::resume`] delivers the next queued halt, without running anything, before the
//! replay goes on. Halts are queued only after a halt before an event, whose thread does not
//! run while it is left (its stop stays parked for its turn), so no thread runs while a queued
//! halt waits. Checkpoints keep the queue.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rdb_tracee::{debugreg, mem, procfs, Control, Mapping, Memory, Pid, Regs, Target, Watchpoint};

use crate::checkpoint::Checkpoint;
use crate::diversion::Diversion;
use crate::fork::StoppedAt;
use crate::observer::ReplayObserver;
use crate::position::{push_move, Move, Position};
use crate::replay::{Breakpoints, ReplayOptions, ReplayOutcome, Replayer, Stepped, Stop};
use crate::trace::{Event, Tid};
use crate::Error;

/// Why [`Session::resume`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStop {
    /// At a breakpoint the debugger set, before the instruction at `addr`.
    Breakpoint { tid: Tid, addr: u64 },
    /// Hardware watchpoints fired (bit n = slot n), after the access; `addr` is the watched
    /// address of the lowest slot that fired.
    Watchpoint { tid: Tid, slots: u8, addr: u64 },
    /// A single step of `tid` ended.
    Stepped { tid: Tid },
    /// A recorded fault is about to be delivered to `tid`.
    Signal { tid: Tid, sig: i32 },
    /// At a syscall's entry (`exit` false, before it runs) or exit (its recorded result in
    /// place), when syscalls are caught.
    Syscall { tid: Tid, nr: u64, exit: bool },
    /// [`Session::interrupter`] was set.
    Interrupted { tid: Tid },
    /// The [`Session::goto`] target was reached.
    Reached { tid: Tid },
    /// The last thread of the debugged process is gone, with this raw wait status.
    ProcessExited { process: Tid, status: i32 },
    /// The trace ended.
    End,
    /// Going back reached the start of the recorded history: the replay is halted there.
    HistoryStart { tid: Tid },
}

/// How to go on from a halt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Run until the next halt.
    Continue,
    /// Execute one instruction of this thread of the debugged process (when it is not the
    /// halted thread: run until it has done so). A `syscall` instruction is stepped over by
    /// replaying its event: the step ends when the thread is back in user code.
    Step(Tid),
}

/// How to go on from a halt, per kind of halt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HaltKind {
    /// In user code (at a breakpoint, its `int3` consumed and `rip` set back; or after a step
    /// or a watchpoint): resuming steps over a breakpoint under the pc, if any.
    InCode,
    /// At a stop of the trace that is parked, unhandled: resuming handles it in its turn.
    Parked,
    /// After an event, before user code: resuming delivers `sig` (0: none).
    StretchStart { sig: i32 },
}

/// Where the replay is halted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Halt {
    pub(crate) tid: Tid,
    pub(crate) kind: HaltKind,
}

/// What a debugger asked of the replayer (kept in the replayer, which halts for it).
#[derive(Default)]
pub(crate) struct Debugger {
    /// The debugged process (recorded id of its thread group): halts happen only there.
    pub(crate) focus: Option<Tid>,
    /// Hardware watchpoints armed in every thread of the debugged process, by slot.
    pub(crate) watch: [Option<Watchpoint>; debugreg::SLOTS],
    /// The thread being single-stepped.
    pub(crate) stepping: Option<Tid>,
    /// The stepped thread was resumed with `PTRACE_SINGLESTEP` (not through a syscall).
    pub(crate) single_stepping: Option<Tid>,
    pub(crate) catch_syscalls: bool,
    pub(crate) stop_at_faults: bool,
    /// Halt at the first point where the halted thread's next event is at least this index.
    pub(crate) goto: Option<u64>,
    pub(crate) interrupt: Option<Arc<AtomicBool>>,
    /// The halt to report, set where the replayer halted.
    pub(crate) pending: Option<SessionStop>,
    pub(crate) halted: Option<Halt>,
    /// Halts met while the replayer stopped the other threads for `pending`, in order: each is
    /// delivered by a later resume, before anything runs (see the module docs).
    pub(crate) queued: VecDeque<(Halt, SessionStop)>,
    /// The threads whose parked stop was reported: handled, not reported again, when the
    /// replay goes on (several: another thread's entry may halt before the first is handled).
    pub(crate) reported: HashSet<Tid>,
    /// The syscall whose exit the replayer just handled (for caught syscalls).
    pub(crate) exit_of: Option<u64>,
    /// A watchpoint slot armed for a goal, not by the debugger.
    pub(crate) internal_watch: Option<usize>,
    /// Where each thread of the debugged process is in its stretch (see `position`).
    pub(crate) ctx: HashMap<Tid, Ctx>,
    /// Going to a point (see `reverse`): the debugger's breakpoints and watchpoints do not
    /// halt.
    pub(crate) quiet: bool,
    /// While quiet: the points where they would have halted, in order.
    pub(crate) observed: Option<Vec<Position>>,
    /// The point to halt at, while going to a point.
    pub(crate) goal: Option<Goal>,
    /// The thread's log of traps and triggers up to the goal, when it kept one.
    pub(crate) goal_log: Option<Vec<u64>>,
    /// The watchpoint slots the last single step fired.
    pub(crate) last_step_slots: u8,
}

/// In a [`Ctx`] log, a trigger of watchpoint slot `n` is `TRIGGER_LOG + n` (addresses are
/// never that high).
pub(crate) const TRIGGER_LOG: u64 = u64::MAX - 16;

/// Where a thread of the debugged process is in its stretch: the chain of moves from the
/// stretch's start to its last halt, and what it met since (breakpoint traps by address,
/// watchpoint triggers by slot).
#[derive(Debug, Clone, Default)]
pub(crate) struct Ctx {
    pub(crate) stretch: u64,
    pub(crate) moves: Vec<Move>,
    pub(crate) traps: HashMap<u64, u64>,
    pub(crate) triggers: [u64; debugreg::SLOTS],
    /// Every trap address and trigger since the last halt, in order, while one is kept.
    pub(crate) log: Option<Vec<u64>>,
}

impl Ctx {
    fn position(&self, tid: Tid) -> Position {
        Position::InStretch { tid, stretch: self.stretch, moves: self.moves.clone() }
    }

    /// A halt here: the move that reached it ends the chain, counting starts again.
    fn arrived(&mut self, m: Move) {
        push_move(&mut self.moves, m);
        self.traps.clear();
        self.triggers = [0; debugreg::SLOTS];
    }
}

/// The point to halt at while going to a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Goal {
    StretchStart { tid: Tid, stretch: u64 },
    Before { tid: Tid, event: u64 },
    Arrival { tid: Tid, addr: u64, count: u64 },
    Trigger { tid: Tid, slot: usize, count: u64 },
}

impl Debugger {
    pub(crate) fn halt(&mut self, tid: Tid, kind: HaltKind, stop: SessionStop) {
        self.stepping = None;
        self.single_stepping = None;
        if self.pending.is_some() {
            // A halt is being reported (its process is being stopped): this one comes next.
            self.queued.push_back((Halt { tid, kind }, stop));
            return;
        }
        self.halted = Some(Halt { tid, kind });
        self.pending = Some(stop);
    }

    /// Stopping the other threads for a halt: what they meet on the way halts after it (see
    /// the module docs), even while going to a point quietly.
    fn stopping_for_halt(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether `tid` is halted in user code or at a stretch start, now or in the queue (it
    /// is then stopped where its halt left it, neither parked nor running).
    pub(crate) fn halted_in_place(&self, tid: Tid) -> bool {
        self.halted.iter().chain(self.queued.iter().map(|(h, _)| h)).any(|h| h.tid == tid && h.kind != HaltKind::Parked)
    }

    fn interrupted(&self) -> bool {
        self.interrupt.as_ref().is_some_and(|i| i.swap(false, Ordering::SeqCst))
    }
}

impl Replayer<'_> {
    /// A breakpoint trap of `tid` at `addr` (the debugger's breakpoint there or not): counted
    /// for positions; the halt it makes, if any.
    pub(crate) fn on_trap(&mut self, tid: Tid, addr: u64, user: bool) -> Option<SessionStop> {
        if self.dbg.focus != Some(self.procs[&tid].group) {
            return None;
        }
        let quiet = self.dbg.quiet && !self.dbg.stopping_for_halt();
        let ctx = self.dbg.ctx.entry(tid).or_default();
        if let Some(log) = ctx.log.as_mut() {
            log.push(addr);
        }
        let count = ctx.traps.entry(addr).or_default();
        *count += 1;
        let m = Move::Hit { addr, count: *count };
        if self.dbg.goal == Some(Goal::Arrival { tid, addr, count: *count }) {
            self.dbg.goal = None;
            self.dbg.goal_log = ctx.log.take();
            ctx.arrived(m);
            // A point on the way that is also the debugger's breakpoint.
            if user {
                if let Some(seen) = self.dbg.observed.as_mut() {
                    seen.push(ctx.position(tid));
                }
            }
            return Some(SessionStop::Reached { tid });
        }
        if !user {
            return None;
        }
        if quiet {
            let here = ctx.position(tid).then(m);
            if let Some(seen) = self.dbg.observed.as_mut() {
                seen.push(here);
            }
            return None;
        }
        ctx.arrived(m);
        Some(SessionStop::Breakpoint { tid, addr })
    }

    /// Watchpoints `slots` fired in `tid`: counted for positions; the halt it makes, if any.
    pub(crate) fn on_triggers(&mut self, tid: Tid, slots: u8) -> Option<SessionStop> {
        if self.dbg.focus != Some(self.procs[&tid].group) || slots == 0 {
            return None;
        }
        let quiet = self.dbg.quiet && !self.dbg.stopping_for_halt();
        let ctx = self.dbg.ctx.entry(tid).or_default();
        let mut halt = None;
        for slot in (0..debugreg::SLOTS).filter(|s| slots & (1 << s) != 0) {
            ctx.triggers[slot] += 1;
            if let Some(log) = ctx.log.as_mut() {
                log.push(TRIGGER_LOG + slot as u64);
            }
            let Some(watch) = self.dbg.watch[slot] else { continue };
            let m = Move::Watch { watch, count: ctx.triggers[slot] };
            if self.dbg.goal == Some(Goal::Trigger { tid, slot, count: ctx.triggers[slot] }) {
                self.dbg.goal = None;
                self.dbg.goal_log = ctx.log.take();
                ctx.arrived(m);
                if self.dbg.internal_watch != Some(slot) {
                    if let Some(seen) = self.dbg.observed.as_mut() {
                        seen.push(ctx.position(tid));
                    }
                }
                return Some(SessionStop::Reached { tid });
            }
            if self.dbg.internal_watch == Some(slot) {
                continue;
            }
            if quiet {
                let here = ctx.position(tid).then(m);
                if let Some(seen) = self.dbg.observed.as_mut() {
                    seen.push(here);
                }
            } else if halt.is_none() {
                ctx.arrived(m);
                halt = Some(SessionStop::Watchpoint { tid, slots, addr: watch.addr });
            }
        }
        halt
    }

    /// A single step of `tid` ended.
    pub(crate) fn on_step(&mut self, tid: Tid) {
        if self.dbg.focus == Some(self.procs[&tid].group) {
            self.dbg.ctx.entry(tid).or_default().arrived(Move::Step(1));
        }
    }

    /// Where the replay is halted, as a point of the debugged process.
    pub(crate) fn here(&mut self) -> Result<Option<Position>, Error> {
        let Some(h) = self.dbg.halted else { return Ok(None) };
        Ok(Some(match h.kind {
            HaltKind::Parked => Position::Before { tid: h.tid, event: self.next_event_index(h.tid)? },
            HaltKind::StretchStart { .. } => {
                Position::InStretch { tid: h.tid, stretch: self.procs[&h.tid].stretch, moves: Vec::new() }
            }
            HaltKind::InCode => match self.dbg.ctx.get(&h.tid) {
                Some(ctx) => ctx.position(h.tid),
                None => Position::InStretch { tid: h.tid, stretch: self.procs[&h.tid].stretch, moves: Vec::new() },
            },
        }))
    }

    /// The trace index of `tid`'s next event (`u64::MAX` when it has none in sight).
    pub(crate) fn next_event_index(&mut self, tid: Tid) -> Result<u64, Error> {
        Ok(self.ev.next_of_indexed(tid)?.map_or(u64::MAX, |(i, _)| i))
    }

    fn goto_reached(&mut self, tid: Tid) -> Result<bool, Error> {
        let Some(target) = self.dbg.goto else { return Ok(false) };
        if self.next_event_index(tid)? >= target {
            self.dbg.goto = None;
            return Ok(true);
        }
        Ok(false)
    }

    /// Whether a debugger halts the replay where `tid` is about to run user code again after
    /// an event (`sig`: the signal it is about to get).
    pub(crate) fn halt_at_stretch_start(&mut self, tid: Tid, sig: i32) -> Result<Option<SessionStop>, Error> {
        let exit_of = self.dbg.exit_of.take();
        if self.dbg.focus != Some(self.procs[&tid].group) {
            return Ok(None);
        }
        let stretch = self.procs[&tid].stretch;
        self.dbg.ctx.insert(tid, Ctx { stretch, ..Ctx::default() });
        if self.dbg.goal == Some(Goal::StretchStart { tid, stretch }) && sig == 0 {
            self.dbg.goal = None;
            return Ok(Some(SessionStop::Reached { tid }));
        }
        if self.dbg.quiet && self.dbg.stepping != Some(tid) {
            return Ok(None);
        }
        if self.dbg.stepping == Some(tid) && sig == 0 {
            return Ok(Some(SessionStop::Stepped { tid }));
        }
        if let (true, Some(nr)) = (self.dbg.catch_syscalls, exit_of) {
            return Ok(Some(SessionStop::Syscall { tid, nr, exit: true }));
        }
        if self.dbg.interrupted() {
            return Ok(Some(SessionStop::Interrupted { tid }));
        }
        if self.goto_reached(tid)? {
            return Ok(Some(SessionStop::Reached { tid }));
        }
        Ok(None)
    }

    /// Whether a debugger halts the replay before `tid`'s `stop` is handled.
    pub(crate) fn halt_before(&mut self, tid: Tid, stop: &Stop) -> Result<Option<SessionStop>, Error> {
        if self.dbg.focus != Some(self.procs[&tid].group) || matches!(stop, Stop::Gone { .. } | Stop::Fork { .. }) {
            return Ok(None);
        }
        if let Some(Goal::Before { tid: t, event }) = self.dbg.goal {
            if t == tid && self.next_event_index(tid)? == event {
                self.dbg.goal = None;
                self.dbg.goal_log = self.dbg.ctx.get_mut(&tid).and_then(|c| c.log.take());
                return Ok(Some(SessionStop::Reached { tid }));
            }
        }
        if self.dbg.quiet {
            return Ok(None);
        }
        match stop {
            Stop::Entry { nr, .. } if self.dbg.catch_syscalls => {
                return Ok(Some(SessionStop::Syscall { tid, nr: *nr, exit: false }))
            }
            Stop::Signal { sig, tsc: None } if self.dbg.stop_at_faults => {
                if let Some(Event::Signal { asynchronous: false, .. }) = self.ev.next_of(tid)? {
                    return Ok(Some(SessionStop::Signal { tid, sig: *sig }));
                }
            }
            _ => {}
        }
        if self.dbg.interrupted() {
            return Ok(Some(SessionStop::Interrupted { tid }));
        }
        if self.goto_reached(tid)? {
            return Ok(Some(SessionStop::Reached { tid }));
        }
        Ok(None)
    }
}

/// A thread of the debugged process, as [`Session::threads`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Recorded thread id (what the program saw).
    pub tid: Tid,
    /// Its real id in this replay.
    pub pid: Pid,
    /// Index of the event that last let it run user code.
    pub stretch: u64,
    /// Created but not started yet (waiting for its first turn).
    pub unstarted: bool,
}

/// A replay a debugger drives (see the module docs).
pub struct Session<'o> {
    pub(crate) r: Replayer<'o>,
    opts: ReplayOptions,
    /// The debugger's breakpoints in the debugged process (what a restored checkpoint gets).
    pub(crate) user_breakpoints: std::collections::BTreeSet<u64>,
    pub(crate) checkpoints: std::collections::BTreeMap<u32, Checkpoint>,
    next_checkpoint: u32,
    pub(crate) ended: bool,
    /// Registers of the halted thread (for [`Target::regs`]).
    regs: Regs,
    /// Automatic checkpoints (see `reverse`).
    pub(crate) history: crate::reverse::History,
}

impl<'o> Session<'o> {
    /// Start replaying `opts.trace_dir`: halted before the program's first instruction.
    pub fn start(opts: &ReplayOptions, observer: impl ReplayObserver + 'o) -> Result<Session<'o>, Error> {
        Self::start_inner(opts, Box::new(observer), false)
    }

    /// [`Session::start`] for a replay that runs to its end on its own: one that stops making
    /// progress is ended (see `stall`).
    pub(crate) fn start_watched(
        opts: &ReplayOptions,
        observer: impl ReplayObserver + 'o,
    ) -> Result<Session<'o>, Error> {
        Self::start_inner(opts, Box::new(observer), true)
    }

    fn start_inner(
        opts: &ReplayOptions,
        observer: Box<dyn ReplayObserver + 'o>,
        watch_stalls: bool,
    ) -> Result<Session<'o>, Error> {
        Ok(Session {
            r: Replayer::start(opts, observer, watch_stalls)?,
            opts: opts.clone(),
            user_breakpoints: Default::default(),
            checkpoints: Default::default(),
            next_checkpoint: 1,
            ended: false,
            history: Default::default(),
            regs: rdb_tracee::ptrace::zeroed_regs(),
        })
    }

    /// Start the replay again from the beginning (same observer, same debugged process,
    /// breakpoints and watchpoints gone): halted before the program's first instruction.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.r.observer.can_go_back().map_err(Error::Observer)?;
        let observer = self.r.take_observer();
        let focus = self.r.dbg.focus;
        let marks = std::mem::take(&mut self.r.marks);
        self.user_breakpoints.clear();
        self.r.kill_all();
        // The old replayer gives the TSC back before the new one takes it.
        drop(self.r.tsc.take());
        self.r = Replayer::start(&self.opts, observer, false)?;
        self.r.dbg.focus = focus;
        // Output shown and regions run stay so (see `Marks`).
        self.r.marks = marks;
        self.ended = false;
        Ok(())
    }

    /// Run `f` with the calling thread's TSC readable. The replaying thread runs with `rdtsc`
    /// disabled (see the crate docs); a process started from it (a debugger, say) would
    /// inherit that and crash at its first `rdtsc`.
    pub fn with_tsc<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.r.tsc {
            Some(tsc) => tsc.enabled_for(f),
            None => f(),
        }
    }

    /// Debug the process whose recorded id is `process` (its thread group's): halts happen
    /// only there. `None`: no process is debugged (the replay runs to its end).
    pub fn set_focus(&mut self, process: Option<Tid>) {
        self.r.dbg.focus = process;
    }

    /// The debugged process.
    pub fn focus(&self) -> Option<Tid> {
        self.r.dbg.focus
    }

    /// The recorded id of the root process (the program started by the recording).
    pub fn root(&self) -> Tid {
        self.r.root
    }

    /// Whether the process `process` (recorded id) exists now and has run an exec.
    pub fn has_process(&self, process: Tid) -> bool {
        self.r.procs.get(&process).is_some_and(|p| p.image.is_some())
    }

    /// Halt at syscall entries and exits of the debugged process.
    pub fn catch_syscalls(&mut self, on: bool) {
        self.r.dbg.catch_syscalls = on;
    }

    /// Halt before a recorded fault (`SIGSEGV`, ...) is delivered in the debugged process.
    pub fn stop_at_faults(&mut self, on: bool) {
        self.r.dbg.stop_at_faults = on;
    }

    /// Halt at the first point of the debugged process where the halted thread's next event
    /// has at least this trace index (events before it replayed).
    pub fn goto(&mut self, event: u64) {
        self.r.dbg.goto = Some(event);
    }

    /// A flag that, once set (from any thread), makes the replay halt at the debugged
    /// process's next event or stretch start ([`SessionStop::Interrupted`]).
    pub fn interrupter(&mut self) -> Arc<AtomicBool> {
        self.r.dbg.interrupt.get_or_insert_with(|| Arc::new(AtomicBool::new(false))).clone()
    }

    /// Events replayed so far.
    pub fn events_replayed(&self) -> u64 {
        self.r.ev.index
    }

    /// The thread the replay is halted in.
    pub fn halted_thread(&self) -> Option<Tid> {
        self.r.dbg.halted.map(|h| h.tid)
    }

    /// The trace index of `tid`'s next event: the halt lies between its previous event and
    /// this one (`rdb gdb`'s `monitor when`).
    pub fn next_event(&mut self, tid: Tid) -> Result<Option<u64>, Error> {
        Ok(self.r.ev.next_of_indexed(tid)?.map(|(i, _)| i))
    }

    /// Whether the replay has reached the end of the trace.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Run until the next halt (see [`SessionStop`]).
    pub fn resume(&mut self, how: Resume) -> Result<SessionStop, Error> {
        if self.ended {
            return Ok(SessionStop::End);
        }
        if let Resume::Step(tid) = how {
            self.check_thread(tid)?;
        }
        let stop = match self.leave_halt(how)? {
            Some(stop) => stop,
            None => match self.r.run()? {
                Some(stop) => stop,
                None => {
                    self.ended = true;
                    self.r.dbg.halted = None;
                    SessionStop::End
                }
            },
        };
        self.collect_auto_checkpoints();
        self.refresh_regs()?;
        Ok(stop)
    }

    /// Read the halted thread's registers again (for [`Target::regs`]).
    pub(crate) fn refresh_regs(&mut self) -> Result<(), Error> {
        if let Some(h) = self.r.dbg.halted {
            if let Some(p) = self.r.procs.get(&h.tid) {
                self.regs = rdb_tracee::ptrace::get_regs(p.pid).map_err(Error::ptrace(p.pid, "reading registers"))?;
            }
        }
        Ok(())
    }

    fn check_thread(&self, tid: Tid) -> Result<(), Error> {
        match self.r.procs.get(&tid) {
            Some(p) if Some(p.group) == self.r.dbg.focus => Ok(()),
            _ => Err(Error::Observer(format!("thread {tid} is not a thread of the debugged process"))),
        }
    }

    /// Start going on from the current halt. A step that ends at once (one instruction under a
    /// breakpoint) returns its stop.
    fn leave_halt(&mut self, how: Resume) -> Result<Option<SessionStop>, Error> {
        let r = &mut self.r;
        r.dbg.pending = None;
        r.dbg.single_stepping = None;
        if let Some((next, stop)) = r.dbg.queued.pop_front() {
            // The current halt is before an event (see the module docs): its thread stays
            // parked, and the next halt is delivered where it happened, nothing run.
            if let Some(h) = r.dbg.halted.filter(|h| h.kind != HaltKind::Parked) {
                return Err(Error::Observer(format!(
                    "internal: a halt ({stop:?}) waits behind a halt of thread {} in its code ({:?}), which would never run again",
                    h.tid, h.kind
                )));
            }
            r.dbg.stepping = None;
            r.dbg.halted = Some(next);
            return Ok(Some(stop));
        }
        r.dbg.stepping = match how {
            Resume::Step(tid) => Some(tid),
            Resume::Continue => None,
        };
        let Some(halt) = r.dbg.halted.take() else { return Ok(None) };
        let tid = halt.tid;
        if !r.procs.contains_key(&tid) {
            return Ok(None);
        }
        let stepping_me = r.dbg.stepping == Some(tid);
        match halt.kind {
            HaltKind::Parked => {
                // A syscall entry with its event in sight is handled as soon as it comes (see
                // `Replayer::run`): a re-executed call (mmap, munmap) then runs in the kernel in
                // the order the recording ran it. The halt before it must not delay that: left
                // parked until its event's turn, a thread's munmap ran after another thread's
                // mmap that the recording ran it before, and the mmap's address diverged.
                if matches!(r.parked.get(&tid), Some(Stop::Entry { .. })) && r.ev.next_of(tid)?.is_some() {
                    let stop = r.parked.remove(&tid).expect("parked");
                    r.handle_or_halt(tid, stop)?;
                }
                Ok(None)
            }
            HaltKind::StretchStart { sig } => {
                if stepping_me {
                    if let Some(stop) = r.step_in_code(tid, sig)? {
                        return Ok(Some(stop));
                    }
                } else {
                    r.resume_from_halt(tid, sig, false)?;
                }
                Ok(None)
            }
            HaltKind::InCode => {
                if stepping_me {
                    return r.step_in_code(tid, 0);
                }
                r.resume_from_halt(tid, 0, true)?;
                Ok(None)
            }
        }
    }

    /// A diversion: a disposable copy of the debugged process in which thread `tid` (stopped,
    /// as every thread of the process is at a halt) may run code, see [`Diversion`]. The
    /// replay is left exactly as it was.
    pub fn divert(&mut self, tid: Tid) -> Result<Diversion, Error> {
        self.check_thread(tid)?;
        let pid = self.r.procs[&tid].pid;
        let group = rdb_tracee::procfs::thread_group(pid).map_err(Error::ptrace(pid, "finding the process"))?;
        let shared =
            rdb_tracee::procfs::shared_writable_mappings(group).map_err(Error::ptrace(pid, "reading mappings"))?;
        if let Some((start, end, name)) = shared.first() {
            return Err(Error::Unsupported {
                pid,
                what: format!(
                    "no diversion is possible: the process has writable shared memory ({start:#x}-{end:#x} {name}), which a copy would change for the replay too"
                ),
            });
        }
        if let Some(page) = self.r.first_protected_page(tid) {
            return Err(Error::Unsupported {
                pid,
                what: format!(
                    "no diversion is possible: page {page:#x} is read-only for a watch that uses page protection, and the copy's writes there would fault"
                ),
            });
        }
        let (copy, _) = self.r.fork_thread(tid)?;
        // The copy runs the program's own code: no `int3` of the replayer's.
        for (&addr, bp) in self.r.procs[&tid].breakpoints.borrow().iter() {
            let patched = bp.count.as_ref().filter(|c| c.patched).map(|c| &c.orig[..]);
            if let Err(e) = mem::write(copy, addr, patched.unwrap_or(&[bp.orig])) {
                crate::fork::discard(copy);
                return Err(Error::ptrace(copy, "lifting a breakpoint in a diversion")(e));
            }
        }
        Diversion::new(tid, copy)
    }

    /// Count hits without a stop at the observer's counting sites (see
    /// [`ReplayObserver::counts_hits`]), in every process, or stop at each as at any
    /// breakpoint (the default). Arrivals there are not seen while counting: a debugger's
    /// breakpoint there is refused, and positions are named at events only.
    pub fn set_counting(&mut self, on: bool) -> io::Result<()> {
        if on && self.user_breakpoints.iter().any(|a| self.counting_site(*a)) {
            return Err(io::Error::other("a breakpoint is set where the replay would count hits without a stop"));
        }
        self.r.set_counting(on)
    }

    fn counting_site(&self, addr: u64) -> bool {
        self.a_focus_thread()
            .is_ok_and(|t| self.r.procs[&t].breakpoints.borrow().get(&addr).is_some_and(|b| b.count.is_some()))
    }

    /// The hits the debugged process's counting sites counted so far (`None`: it has none, its
    /// region's instructions could not carry the stub's jump: every hit is a breakpoint stop).
    pub fn hits_counted(&self) -> Option<u64> {
        self.r.hits_counted(self.a_focus_thread().ok()?)
    }

    /// A thread of the debugged process (not the halted thread of another one).
    fn a_focus_thread(&self) -> io::Result<Tid> {
        let group = self.r.dbg.focus.ok_or_else(|| io::Error::other("no process is debugged"))?;
        self.r
            .procs
            .iter()
            .filter(|(_, p)| p.group == group)
            .map(|(t, _)| *t)
            .min()
            .ok_or_else(|| io::Error::other(format!("process {group} is not running")))
    }

    /// Where the debugged process keeps its count (a word of its memory; its exit or exec
    /// takes it away: read it at their entry, [`ReplayObserver::wants_syscall`]).
    pub fn hit_count_address(&self) -> Option<u64> {
        let t = self.a_focus_thread().ok()?;
        let table = self.r.procs[&t].breakpoints.borrow();
        table.values().find_map(|b| b.count.as_ref().map(|s| s.data.count()))
    }

    /// While counting, stop at the debugged process's hit `target` (counted from 1, as
    /// [`Session::hits_counted`]): it reaches the observer (`BreakpointStop::hit`), and halts
    /// when the session has a breakpoint there. `false`: the process has no counting sites.
    pub fn set_hit_target(&mut self, target: u64) -> io::Result<bool> {
        let tid = self.a_focus_thread()?;
        self.r.set_hit_target(tid, target)
    }

    /// Add a breakpoint at `addr` in the debugged process.
    pub fn set_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        let tid = self.focus_thread()?;
        if self.r.counting_on() && self.counting_site(addr) {
            return Err(io::Error::other(format!(
                "cannot break at {addr:#x} while the replay counts its hits without a stop"
            )));
        }
        if !self.r.procs[&tid].breakpoints.borrow().contains_key(&addr) {
            // An `int3` in data would change what the program reads.
            let pid = self.r.procs[&tid].pid;
            if !procfs::maps(pid)?.iter().any(|m| m.executable && m.contains(addr)) {
                return Err(io::Error::other(format!("{addr:#x} is not in the program's code")));
            }
        }
        self.r.plant(tid, addr, None, false).map_err(io::Error::other)?.user = true;
        self.user_breakpoints.insert(addr);
        Ok(())
    }

    /// Remove the debugger's breakpoint at `addr` (regions keep theirs).
    pub fn remove_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        let tid = self.focus_thread()?;
        if let Some(bp) = self.r.procs[&tid].breakpoints.borrow_mut().get_mut(&addr) {
            bp.user = false;
        }
        self.user_breakpoints.remove(&addr);
        self.r.unplant_if_unused(tid, addr)
    }

    /// Save the replay where it is halted: a checkpoint to [`Session::restore`] later (see
    /// [`Checkpoint`]). Returns its id.
    pub fn checkpoint(&mut self) -> Result<u32, Error> {
        let cp = self.r.checkpoint()?;
        Ok(self.keep_checkpoint(cp))
    }

    pub(crate) fn keep_checkpoint(&mut self, cp: Checkpoint) -> u32 {
        let id = self.next_checkpoint;
        self.next_checkpoint += 1;
        self.checkpoints.insert(id, cp);
        id
    }

    /// The checkpoints kept, by id.
    pub fn checkpoints(&self) -> &std::collections::BTreeMap<u32, Checkpoint> {
        &self.checkpoints
    }

    /// Forget a checkpoint (its frozen processes are killed).
    pub fn delete_checkpoint(&mut self, id: u32) -> bool {
        self.checkpoints.remove(&id).is_some()
    }

    /// Go back (or forward) to checkpoint `id`: the replay is halted where it was saved, with
    /// the debugger's current breakpoints and watchpoints; the checkpoint stays for later.
    pub fn restore(&mut self, id: u32) -> Result<(), Error> {
        let cp = self.checkpoints.get(&id).ok_or_else(|| Error::Observer(format!("no checkpoint {id}")))?;
        self.r.observer.can_go_back().map_err(Error::Observer)?;
        self.r.restore(cp)?;
        // The counting sites as the session has them now (the copies have them as saved).
        let counting = self.r.counting_on();
        self.r.set_counting(counting).map_err(|e| Error::Observer(format!("patching counting sites: {e}")))?;
        // Time to the next automatic checkpoint counts from here.
        self.r.auto.last = self.r.auto.last.map(|_| crate::reverse::now_ns());
        self.ended = false;
        // The breakpoint tables came back as they were saved: make them the debugger's current
        // ones.
        if let Ok(tid) = self.focus_thread() {
            let table = self.r.procs[&tid].breakpoints.clone();
            let saved: Vec<u64> = table.borrow().keys().copied().collect();
            for addr in saved {
                let wanted = self.user_breakpoints.contains(&addr);
                if let Some(bp) = table.borrow_mut().get_mut(&addr) {
                    bp.user = wanted;
                }
                self.r
                    .unplant_if_unused(tid, addr)
                    .map_err(Error::ptrace(self.r.procs[&tid].pid, "lifting a breakpoint"))?;
            }
            for addr in self.user_breakpoints.clone() {
                self.r.plant(tid, addr, None, false).map_err(Error::Observer)?.user = true;
            }
        }
        self.refresh_regs()
    }

    /// Arm a hardware watchpoint in debug-register `slot` of every thread of the debugged
    /// process (and of its threads created later).
    pub fn set_watchpoint(&mut self, slot: usize, watch: Watchpoint) -> io::Result<()> {
        let group = self.r.dbg.focus.ok_or_else(|| io::Error::other("no process is debugged"))?;
        if slot >= debugreg::SLOTS {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no debug register slot {slot}")));
        }
        if self.watch_slot_held_by_observer(slot) {
            return Err(io::Error::other(format!(
                "debug register {slot} holds a watch of the debug module (an on_write/on_read callback or rdb::watch)"
            )));
        }
        if slot == crate::interrupt::REPLAY_SLOT && self.r.procs.values().any(|p| p.point.is_some()) {
            return Err(io::Error::other(format!(
                "debug register {slot} finds the point where the recording interrupted a thread in user code"
            )));
        }
        for p in self.r.procs.values().filter(|p| p.group == group) {
            debugreg::set_watchpoint(p.pid, slot, watch)?;
        }
        self.r.dbg.watch[slot] = Some(watch);
        Ok(())
    }

    /// Whether the observer (event callbacks, `rdb::watch`) holds debug register `slot` in the
    /// debugged process: a debugger's watchpoints go in the other slots.
    pub fn watch_slot_held_by_observer(&self, slot: usize) -> bool {
        let held = self.r.dbg.focus.and_then(|group| self.r.observer_watch.get(&group));
        held.is_some_and(|slots| slots.get(slot).is_some_and(Option::is_some))
    }

    /// Disarm `slot` in every thread of the debugged process.
    pub fn remove_watchpoint(&mut self, slot: usize) -> io::Result<()> {
        let group = self.r.dbg.focus.ok_or_else(|| io::Error::other("no process is debugged"))?;
        if slot >= debugreg::SLOTS {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no debug register slot {slot}")));
        }
        for p in self.r.procs.values().filter(|p| p.group == group) {
            debugreg::clear_watchpoint(p.pid, slot)?;
        }
        self.r.dbg.watch[slot] = None;
        Ok(())
    }

    /// The watchpoints armed, by slot.
    pub fn watchpoints(&self) -> [Option<Watchpoint>; debugreg::SLOTS] {
        self.r.dbg.watch
    }

    /// A thread of the debugged process, any one (the halted one when there is one).
    fn focus_thread(&self) -> io::Result<Tid> {
        if let Some(h) = self.r.dbg.halted {
            return Ok(h.tid);
        }
        self.a_focus_thread()
    }

    /// The threads of the debugged process, by recorded id.
    pub fn threads(&self) -> Vec<ThreadInfo> {
        let Some(group) = self.r.dbg.focus else { return Vec::new() };
        let mut v: Vec<ThreadInfo> = self
            .r
            .procs
            .iter()
            .filter(|(_, p)| p.group == group)
            .map(|(&tid, p)| ThreadInfo { tid, pid: p.pid, stretch: p.stretch, unstarted: p.unstarted })
            .collect();
        v.sort_by_key(|t| t.tid);
        v
    }

    /// A thread of the debugged process, stopped, seen read-only.
    pub fn thread(&self, tid: Tid) -> io::Result<ThreadView> {
        let p = self
            .r
            .procs
            .get(&tid)
            .filter(|p| Some(p.group) == self.r.dbg.focus)
            .ok_or_else(|| io::Error::other(format!("thread {tid} is not a thread of the debugged process")))?;
        if p.running {
            return Err(io::Error::other(format!("thread {tid} is running")));
        }
        let regs = rdb_tracee::ptrace::get_regs(p.pid)?;
        let process = self.r.procs.get(&p.group).map_or(p.pid, |l| l.pid);
        Ok(ThreadView {
            tid: p.pid,
            process,
            regs,
            load_bias: p.image.as_ref().map_or(0, |i| i.load_bias),
            breakpoints: p.breakpoints.clone(),
        })
    }

    /// The executable the debugged process runs (as recorded) and its load bias.
    pub fn image(&self) -> Option<crate::ProcessImage> {
        let group = self.r.dbg.focus?;
        self.r.procs.values().find(|p| p.group == group).and_then(|p| p.image.clone())
    }

    /// The auxiliary vector the debugged process saw at its exec.
    pub fn auxv(&self) -> Option<Vec<u8>> {
        let group = self.r.dbg.focus?;
        self.r.procs.values().find(|p| p.group == group).map(|p| p.auxv.clone())
    }

    /// Read memory of the debugged process as the program has it (the replayer's `int3`
    /// bytes show the program's own bytes).
    pub fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        let tid = self.focus_thread()?;
        let p = &self.r.procs[&tid];
        read_without_breakpoints(p.pid, &p.breakpoints, addr, buf)
    }

    /// Once [`SessionStop::End`] came: the error the replay ends with when the trace ended before
    /// the recording did ([`Error::EndsEarly`]), else `None`.
    pub fn end_error(&self) -> Option<Error> {
        self.r.outcome().err()
    }

    /// How the replay went: call once [`SessionStop::End`] came.
    pub fn finish(mut self) -> Result<ReplayOutcome, Error> {
        self.r.kill_all();
        self.r.outcome()
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.r.kill_all();
    }
}

impl Replayer<'_> {
    /// Resume the halted thread (not stepping). `in_code`: it stands in user code, maybe on a
    /// breakpoint, which is stepped over without a hit.
    fn resume_from_halt(&mut self, tid: Tid, sig: i32, in_code: bool) -> Result<(), Error> {
        let pid = self.procs[&tid].pid;
        if in_code {
            let regs = rdb_tracee::ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            let bp = self.procs[&tid].breakpoints.borrow().get(&regs.rip).cloned();
            if let Some(bp) = bp {
                if let Some(stop) = self.step_over(tid, regs.rip, regs, &bp)? {
                    self.park_after_fault(tid, stop);
                }
                return Ok(());
            }
        }
        self.go_user(tid, sig)
    }

    /// Execute one instruction of the halted thread `tid` (standing in user code, or at a
    /// stretch start with `sig` to deliver). Returns the stop when the step ended at once.
    fn step_in_code(&mut self, tid: Tid, sig: i32) -> Result<Option<SessionStop>, Error> {
        let pid = self.procs[&tid].pid;
        let regs = rdb_tracee::ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        if sig != 0 {
            // Into the handler: the kernel stops at its first instruction.
            rdb_tracee::ptrace::single_step(pid, sig).map_err(Error::ptrace(pid, "stepping"))?;
            self.procs.get_mut(&tid).expect("known").running = true;
            self.dbg.single_stepping = Some(tid);
            return Ok(None);
        }
        let mut code = [0u8; 3];
        let n = read_without_breakpoints(pid, &self.procs[&tid].breakpoints, regs.rip, &mut code).unwrap_or(0);
        let traps = (n >= 2 && (code[..2] == [0x0f, 0x05] || code[..2] == [0x0f, 0x31]))
            || (n == 3 && code == [0x0f, 0x01, 0xf9]);
        if traps {
            // A syscall or rdtsc: replayed as an event; the step ends back in user code.
            self.go_user(tid, 0)?;
            return Ok(None);
        }
        let bp = self.procs[&tid].breakpoints.borrow().get(&regs.rip).cloned();
        if let Some(bp) = bp {
            return match self.step_lifted(tid, regs.rip, regs, bp.orig)? {
                Stepped::Done => {
                    let regs = rdb_tracee::ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                    let slots = self.take_watch_hits(tid)?;
                    self.step_done(tid, regs, slots)?;
                    Ok(self.dbg.pending.take())
                }
                Stepped::Fault(stop) => {
                    self.park_after_fault(tid, stop);
                    Ok(None)
                }
                Stepped::Gone => Ok(None),
            };
        }
        rdb_tracee::ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "stepping"))?;
        self.procs.get_mut(&tid).expect("known").running = true;
        self.dbg.single_stepping = Some(tid);
        Ok(None)
    }

    /// A fault raised by an instruction run under a lifted breakpoint waits for its turn.
    fn park_after_fault(&mut self, tid: Tid, stop: Stop) {
        if let Some(p) = self.procs.get_mut(&tid) {
            p.user = false;
        }
        self.parked.insert(tid, stop);
    }
}

impl Replayer<'_> {
    /// Fork the process of stopped thread `tid` (a thread of the debugged process, stopped as
    /// it is at a halt); the thread is left stopped exactly as before, its pending fault or
    /// signal stop included. Returns the copy.
    pub(crate) fn fork_thread(&mut self, tid: Tid) -> Result<(Pid, StoppedAt), Error> {
        let p = self.procs.get(&tid).ok_or_else(|| Error::Observer(format!("no thread {tid}")))?;
        let pid = p.pid;
        if p.running {
            return Err(Error::Observer(format!("thread {tid} is running")));
        }
        let halted_here = self.dbg.halted_in_place(tid);
        let (at, redeliver) = match self.parked.get(&tid) {
            _ if halted_here || p.unstarted || self.interrupted.contains(&tid) => (StoppedAt::Elsewhere, None),
            Some(Stop::Entry { .. }) => (StoppedAt::SyscallEntry, None),
            Some(Stop::Exit { .. } | Stop::Interrupt) => (StoppedAt::Elsewhere, None),
            Some(Stop::Signal { sig, tsc }) => {
                let synchronous = tsc.is_some()
                    || rdb_tracee::ptrace::get_siginfo(pid)
                        .is_ok_and(|i| rdb_tracee::ptrace::is_synchronous(*sig, rdb_tracee::ptrace::si_code(&i)));
                (StoppedAt::Elsewhere, Some((*sig, synchronous)))
            }
            Some(Stop::Fork { .. }) | Some(Stop::Gone { .. }) | None => {
                return Err(Error::Observer(format!(
                    "thread {tid} is between two steps of the replay (a process being created): go on a little first"
                )))
            }
        };
        let copy = crate::fork::fork_stopped(pid, at).map_err(Error::ptrace(pid, "forking a copy"))?;
        if let Some((sig, synchronous)) = redeliver {
            // The fork took the place of the signal's stop: bring the thread back to it (a
            // fault by running its instruction again; a signal by sending it again).
            if !synchronous {
                let group = rdb_tracee::procfs::thread_group(pid).map_err(Error::ptrace(pid, "finding the process"))?;
                rdb_tracee::ptrace::tgkill(group, pid, sig).map_err(Error::ptrace(pid, "sending a signal again"))?;
            }
            rdb_tracee::ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
            match rdb_tracee::ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "waiting"))? {
                rdb_tracee::Wait::Stopped { sig: s, event: 0 } if s == sig => {}
                other => {
                    crate::fork::discard(copy);
                    return Err(Error::Observer(format!(
                        "thread {tid} did not come back to its signal {sig} after the fork: {other:?}"
                    )));
                }
            }
        }
        Ok((copy, at))
    }
}

/// Read `pid`'s memory with the planted breakpoints' original bytes in place of their `int3`.
fn read_without_breakpoints(pid: Pid, table: &Breakpoints, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    let n = mem::read(pid, addr, buf)?;
    for (&at, bp) in table.borrow().range(addr.saturating_sub(4)..addr.saturating_add(n as u64)) {
        let patched = bp.count.as_ref().filter(|c| c.patched).map(|c| &c.orig[..]);
        for (i, &b) in patched.unwrap_or(&[bp.orig]).iter().enumerate() {
            let a = at + i as u64;
            if (addr..addr + n as u64).contains(&a) {
                buf[(a - addr) as usize] = b;
            }
        }
    }
    Ok(n)
}

/// A stopped thread of the debugged process: registers read when the view was made, memory
/// as the program has it.
pub struct ThreadView {
    tid: Pid,
    process: Pid,
    regs: Regs,
    load_bias: u64,
    breakpoints: Breakpoints,
}

impl Memory for ThreadView {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        read_without_breakpoints(self.process, &self.breakpoints, addr, buf)
    }
}

impl Target for ThreadView {
    fn tid(&self) -> Pid {
        self.tid
    }
    fn pid(&self) -> Pid {
        self.process
    }
    fn regs(&self) -> &Regs {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.load_bias
    }
    fn mappings(&self) -> io::Result<Vec<Mapping>> {
        procfs::maps(self.process)
    }
}

/// The session as the tracee layer's stopped-target traits see it: the halted thread (or, when
/// none is halted, the debugged process's lowest thread), controlled through the replay.
impl Memory for Session<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        Session::read_memory(self, addr, buf)
    }
}

impl Target for Session<'_> {
    fn tid(&self) -> Pid {
        self.focus_thread().ok().and_then(|t| self.r.procs.get(&t)).map_or(Pid(-1), |p| p.pid)
    }
    fn pid(&self) -> Pid {
        self.r.dbg.focus.and_then(|g| self.r.procs.get(&g)).map_or_else(|| Target::tid(self), |p| p.pid)
    }
    fn regs(&self) -> &Regs {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.image().map_or(0, |i| i.load_bias)
    }
}

impl Control for Session<'_> {
    fn set_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        Session::set_breakpoint(self, addr)
    }
    fn remove_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        Session::remove_breakpoint(self, addr)
    }
    fn set_watchpoint(&mut self, slot: usize, watch: Watchpoint) -> io::Result<()> {
        Session::set_watchpoint(self, slot, watch)
    }
    fn remove_watchpoint(&mut self, slot: usize) -> io::Result<()> {
        Session::remove_watchpoint(self, slot)
    }
    fn resume(&mut self) -> io::Result<rdb_tracee::Stop> {
        let stop = Session::resume(self, Resume::Continue).map_err(io::Error::other)?;
        Ok(self.as_tracee_stop(stop))
    }
    fn step(&mut self) -> io::Result<rdb_tracee::Stop> {
        let tid = self.focus_thread()?;
        let stop = Session::resume(self, Resume::Step(tid)).map_err(io::Error::other)?;
        Ok(self.as_tracee_stop(stop))
    }
    fn threads(&self) -> io::Result<Vec<Pid>> {
        Ok(Session::threads(self).iter().map(|t| t.pid).collect())
    }
}

impl Session<'_> {
    /// A halt as the tracee layer names stops.
    fn as_tracee_stop(&self, stop: SessionStop) -> rdb_tracee::Stop {
        use rdb_tracee::Stop as T;
        match stop {
            SessionStop::Breakpoint { addr, .. } => T::Breakpoint { addr },
            SessionStop::Watchpoint { slots, .. } => T::Watchpoint { slots },
            SessionStop::Stepped { .. } => T::Stepped,
            SessionStop::Signal { sig, .. } => T::Signal(sig),
            SessionStop::Syscall { nr, exit, .. } => T::Syscall { nr, exit },
            SessionStop::Interrupted { .. } => T::Signal(libc::SIGINT),
            SessionStop::Reached { .. } => T::Signal(libc::SIGTRAP),
            SessionStop::ProcessExited { status, .. } => T::Exited(status),
            SessionStop::End => T::Exited(self.r.root_status().unwrap_or(0)),
            SessionStop::HistoryStart { .. } => T::Signal(libc::SIGTRAP),
        }
    }
}
