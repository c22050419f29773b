//! Going back: reverse execution on checkpoints and named points (see `position`).
//!
//! Every halt of the debugged process has a name ([`Position`]). Going to a point restores the
//! latest checkpoint that lies before it and replays forwards, quietly (the debugger's
//! breakpoints and watchpoints do not halt), following the name: up to the thread's stretch,
//! then each move (the n-th arrival at an address under a breakpoint of rdb's own, n single
//! steps, the n-th trigger of a watchpoint).
//!
//! - `reverse-continue` replays from the latest checkpoint before the current point up to it,
//!   noting where the debugger's breakpoints and watchpoints would have halted; the last such
//!   point is the answer (a watchpoint's: the instruction before the access, where the value is
//!   still the old one). With none, the same is done from the checkpoint before, and so on;
//!   with none at all, the replay goes back to the start of the recording.
//! - `reverse-stepi` goes to the point one instruction earlier: one step fewer, or, before an
//!   arrival, a trigger, an event or a stretch's start, the instruction found by replaying the
//!   last stretch of the way again: first from the last arrival at a likely predecessor (the
//!   instruction that ends where the point is, or the call instruction a return address names),
//!   checked by one step; otherwise by single steps from the last point known before.
//!
//! Checkpoints: one at the start (where history begins), and automatically at the debugged
//! process's stretch starts every `interval` of replay time, thinned out as they pile up (the
//! older half keeps every other one). Going back over a stretch without syscalls costs a replay
//! of it; a checkpoint is never inside one.

use std::time::Duration;

use rdb_tracee::ptrace;

use crate::position::{is_prefix, Move, Position};
use crate::session::{Goal, Resume, Session, SessionStop};
use crate::trace::{Event, Tid};
use crate::Error;

/// At most this many automatic checkpoints are kept.
const MAX_AUTO: usize = 48;

/// The most single steps a backward step takes before giving up.
const MAX_STEPS: u64 = 50_000_000;

/// Automatic checkpoints of a session.
#[derive(Default)]
pub(crate) struct History {
    /// The checkpoint at the start.
    pub(crate) origin: Option<u32>,
    /// Automatic ones, oldest first.
    auto: Vec<u32>,
}

/// When the replayer takes a checkpoint by itself (kept in the replayer, which takes it).
#[derive(Default)]
pub(crate) struct AutoCheckpoints {
    pub(crate) interval: Option<Duration>,
    /// When the last checkpoint was taken (coarse monotonic ns: this thread runs with the TSC
    /// disabled, so clocks that read it cost a signal each time).
    pub(crate) last: Option<u64>,
    /// The last checkpoint taken at a point a backward search saw.
    pub(crate) last_candidate: Option<u64>,
    pub(crate) taken: Vec<crate::checkpoint::Checkpoint>,
}

/// Replay time between two checkpoints taken at points a backward search saw.
const CANDIDATE_SPACING: Duration = Duration::from_millis(4);

pub(crate) fn now_ns() -> u64 {
    rdb_tracee::this_process::monotonic_coarse_ns()
}

impl AutoCheckpoints {
    pub(crate) fn due(&self) -> bool {
        match (self.interval, self.last) {
            (Some(i), Some(last)) => now_ns().saturating_sub(last) >= i.as_nanos() as u64,
            _ => false,
        }
    }

    /// Whether a point a backward search sees gets a checkpoint (with automatic checkpoints on).
    pub(crate) fn candidate_due(&self) -> bool {
        self.interval.is_some()
            && self.last_candidate.is_none_or(|t| now_ns().saturating_sub(t) >= CANDIDATE_SPACING.as_nanos() as u64)
    }
}

fn no_history(what: &str) -> Error {
    Error::Observer(format!(
        "cannot go back {what}: this replay keeps no history (start it with reverse execution enabled)"
    ))
}

impl Session<'_> {
    /// Keep history for going back: a checkpoint here (at the start: call it before the first
    /// resume) and, with `interval`, automatic ones at the debugged process's stretch starts.
    pub fn enable_history(&mut self, interval: Option<Duration>) -> Result<(), Error> {
        if self.history.origin.is_none() {
            let id = self.checkpoint()?;
            self.history.origin = Some(id);
        }
        self.r.auto.interval = interval;
        self.r.auto.last = Some(now_ns());
        Ok(())
    }

    /// Where the replay is halted, as a point of the debugged process (`None` when it is not
    /// halted there).
    pub fn position(&mut self) -> Result<Option<Position>, Error> {
        self.r.here()
    }

    /// Keep the checkpoints the replayer took by itself.
    pub(crate) fn collect_auto_checkpoints(&mut self) {
        for cp in std::mem::take(&mut self.r.auto.taken) {
            let id = self.keep_checkpoint(cp);
            self.history.auto.push(id);
        }
        if self.history.auto.len() > MAX_AUTO {
            // Thin the older half: every other one goes.
            let half = self.history.auto.len() / 2;
            let mut keep = Vec::new();
            for (i, id) in self.history.auto.drain(..).enumerate() {
                if i < half && i % 2 == 1 {
                    self.checkpoints.remove(&id);
                } else {
                    keep.push(id);
                }
            }
            self.history.auto = keep;
        }
    }

    /// The latest checkpoint from which replaying reaches `target` (other than one taken at
    /// `not_at`).
    fn checkpoint_for(&self, target: &Position, not_at: Option<&Position>) -> Option<u32> {
        self.checkpoints
            .iter()
            .filter(|(_, c)| crate::position::usable(c.position(), c.events(), target))
            .filter(|(_, c)| not_at.is_none() || c.position() != not_at)
            .max_by_key(|(id, c)| {
                let depth = match c.position() {
                    Some(Position::InStretch { moves, .. }) => moves.len(),
                    _ => 0,
                };
                (c.events(), depth, **id)
            })
            .map(|(id, _)| *id)
    }

    /// Go to point `target` of the debugged process, forwards or backwards: the replay is then
    /// halted there, in the state it had there going forwards.
    pub fn seek(&mut self, target: &Position) -> Result<(), Error> {
        if self.position()?.as_ref() == Some(target) {
            return Ok(());
        }
        let id = self.checkpoint_for(target, None).ok_or_else(|| no_history("there"))?;
        self.restore(id)?;
        self.reach(target)
    }

    /// From a halt at or before `target`, replay quietly up to `target` and halt there.
    fn reach(&mut self, target: &Position) -> Result<(), Error> {
        self.r.dbg.quiet = true;
        let result = self.reach_quietly(target);
        self.r.dbg.quiet = false;
        self.r.dbg.goal = None;
        result?;
        self.refresh_regs()
    }

    fn reach_quietly(&mut self, target: &Position) -> Result<(), Error> {
        let (tid, stretch, moves) = match target {
            Position::Before { tid, event } => {
                self.r.dbg.goal = Some(Goal::Before { tid: *tid, event: *event });
                return self.run_to_goal(target);
            }
            Position::InStretch { tid, stretch, moves } => (*tid, *stretch, moves),
        };
        let done = match self.position()? {
            Some(Position::InStretch { tid: t, stretch: s, moves: m })
                if t == tid && s == stretch && is_prefix(&m, moves) =>
            {
                m
            }
            _ => {
                self.r.dbg.goal = Some(Goal::StretchStart { tid, stretch });
                self.run_to_goal(target)?;
                Vec::new()
            }
        };
        let mut rest: Vec<Move> = Vec::new();
        match done.last() {
            None => rest.extend_from_slice(moves),
            Some(last) if *last == moves[done.len() - 1] => rest.extend_from_slice(&moves[done.len()..]),
            Some(Move::Step(n)) => {
                let Move::Step(m) = moves[done.len() - 1] else { unreachable!("a prefix") };
                rest.push(Move::Step(m - n));
                rest.extend_from_slice(&moves[done.len()..]);
            }
            Some(_) => unreachable!("a prefix differs only in its last step"),
        }
        for m in rest {
            self.follow(tid, m, target)?;
        }
        Ok(())
    }

    /// Replay one move of thread `tid` quietly.
    fn follow(&mut self, tid: Tid, m: Move, target: &Position) -> Result<(), Error> {
        match m {
            Move::Hit { addr, count } => {
                self.plant_internal(addr)?;
                self.r.dbg.goal = Some(Goal::Arrival { tid, addr, count });
                let r = self.run_to_goal(target);
                self.unplant_internal(addr)?;
                r
            }
            Move::Step(n) => {
                for _ in 0..n {
                    match self.resume(Resume::Step(tid))? {
                        SessionStop::Stepped { .. } => {}
                        other => return Err(lost(target, &format!("a step ended with {other:?}"))),
                    }
                    // A step that lands on one of the debugger's breakpoints arrives there too.
                    if self.r.dbg.observed.is_some() && self.user_breakpoints.contains(&self.halted_pc(tid)?) {
                        let here = self.position()?.expect("halted");
                        self.r.dbg.observed.as_mut().expect("observing").push(here);
                    }
                }
                Ok(())
            }
            Move::Watch { watch, count } => {
                let slot = match self.r.dbg.watch.iter().position(|w| *w == Some(watch)) {
                    Some(slot) => slot,
                    None => {
                        let slot = self
                            .r
                            .dbg
                            .watch
                            .iter()
                            .position(Option::is_none)
                            .ok_or_else(|| lost(target, "no debug register is free to follow a watchpoint"))?;
                        self.set_watchpoint(slot, watch).map_err(Error::ptrace(rdb_tracee::Pid(-1), "arming"))?;
                        self.r.dbg.internal_watch = Some(slot);
                        slot
                    }
                };
                self.r.dbg.goal = Some(Goal::Trigger { tid, slot, count });
                let r = self.run_to_goal(target);
                if self.r.dbg.internal_watch.take() == Some(slot) {
                    self.remove_watchpoint(slot).map_err(Error::ptrace(rdb_tracee::Pid(-1), "disarming"))?;
                }
                r?;
                if watch.kind == rdb_tracee::WatchKind::Execute {
                    // The kernel set the resume flag so that the instruction breakpoint does not
                    // fire again; it is gone now, and the program never had the flag here.
                    let pid = self.r.procs[&tid].pid;
                    let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                    const RESUME_FLAG: u64 = 1 << 16;
                    if regs.eflags & RESUME_FLAG != 0 {
                        regs.eflags &= !RESUME_FLAG;
                        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "clearing the resume flag"))?;
                    }
                }
                Ok(())
            }
        }
    }

    fn run_to_goal(&mut self, target: &Position) -> Result<(), Error> {
        loop {
            match self.resume(Resume::Continue)? {
                SessionStop::Reached { .. } => return Ok(()),
                SessionStop::ProcessExited { .. } | SessionStop::End => {
                    return Err(lost(target, "the debugged process ended first"))
                }
                _ => {}
            }
        }
    }

    /// A breakpoint of rdb's own at `addr` (for counting arrivals), unless one is there.
    fn plant_internal(&mut self, addr: u64) -> Result<(), Error> {
        let tid = self.halted_thread().ok_or_else(|| Error::Observer("not halted".into()))?;
        self.r.plant(tid, addr, None, false).map_err(Error::Observer)?;
        Ok(())
    }

    fn unplant_internal(&mut self, addr: u64) -> Result<(), Error> {
        let Some(tid) = self.halted_thread().or_else(|| self.threads().first().map(|t| t.tid)) else {
            return Ok(());
        };
        let pid = self.r.procs[&tid].pid;
        self.r.unplant_if_unused(tid, addr).map_err(Error::ptrace(pid, "lifting a breakpoint"))
    }

    /// Go back to where the debugger's breakpoints or watchpoints last halted (or would have)
    /// before the current point, or before the debugged process exited; to the start of the
    /// recording when nowhere.
    pub fn reverse_continue(&mut self) -> Result<SessionStop, Error> {
        // `None`: from the end of the debugged process.
        let mut upto = self.position()?;
        let start = upto.clone();
        loop {
            let id = match &upto {
                Some(p) => self.checkpoint_for(p, Some(p)),
                None => self.latest_checkpoint(),
            }
            .ok_or_else(|| no_history("further"))?;
            let from = self.checkpoints[&id].position().cloned();
            self.restore(id)?;
            self.r.auto.last_candidate = Some(now_ns());
            self.r.dbg.observed = Some(Vec::new());
            let scanned = match &upto {
                Some(p) => self.reach(p),
                None => self.reach_exit(),
            };
            let seen = self.r.dbg.observed.take().unwrap_or_default();
            if std::env::var_os("RDB_DEBUG").is_some() {
                eprintln!("rdb-debug: reverse-continue from checkpoint {id} ({from:?}) to {upto:?}: {seen:?}");
            }
            scanned?;
            // The point itself counts when a watched access led to it: going back undoes it. A
            // later scan ends at the checkpoint the scan before started from: a breakpoint hit
            // there (a checkpoint taken where a search saw one) is earlier, so it counts.
            let user_watch = |p: &Position| match p {
                Position::InStretch { moves, .. } => matches!(moves.last(),
                    Some(Move::Watch { watch, .. }) if watch.kind != rdb_tracee::WatchKind::Execute),
                Position::Before { .. } => false,
            };
            if let Some(last) = seen.into_iter().rev().find(|p| Some(p) != start.as_ref() || user_watch(p)) {
                return self.halt_at_found(&last);
            }
            if Some(id) == self.history.origin || from.is_none() {
                self.restore(id)?;
                let tid = self.halted_thread().unwrap_or(self.root());
                return Ok(SessionStop::HistoryStart { tid });
            }
            upto = from;
        }
    }

    /// The checkpoint taken last in the replay's course.
    fn latest_checkpoint(&self) -> Option<u32> {
        self.checkpoints.iter().max_by_key(|(id, c)| (c.events(), **id)).map(|(id, _)| *id)
    }

    /// Replay quietly until the debugged process exits.
    fn reach_exit(&mut self) -> Result<(), Error> {
        self.r.dbg.quiet = true;
        let result = loop {
            match self.resume(Resume::Continue) {
                Ok(SessionStop::ProcessExited { .. } | SessionStop::End) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        self.r.dbg.quiet = false;
        result
    }

    /// Halt at a point a backward search found.
    fn halt_at_found(&mut self, found: &Position) -> Result<SessionStop, Error> {
        let Position::InStretch { tid, moves, .. } = found else { unreachable!("found in a stretch") };
        let tid = *tid;
        match moves.last() {
            Some(Move::Watch { watch, .. }) => {
                // Where the value is still the old one: before the accessing instruction.
                let watch = *watch;
                let before = self.previous(found)?.unwrap_or_else(|| found.clone());
                self.seek(&before)?;
                let slot = self.r.dbg.watch.iter().position(|w| *w == Some(watch)).unwrap_or(0);
                Ok(SessionStop::Watchpoint { tid, slots: 1 << slot, addr: watch.addr })
            }
            Some(Move::Hit { addr, .. }) => {
                let addr = *addr;
                self.seek(found)?;
                Ok(SessionStop::Breakpoint { tid, addr })
            }
            _ => {
                // Landed on a breakpoint by a step.
                self.seek(found)?;
                let addr = self.halted_pc(tid)?;
                Ok(SessionStop::Breakpoint { tid, addr })
            }
        }
    }

    /// Go back one instruction of the halted thread.
    pub fn reverse_step(&mut self, tid: Tid) -> Result<SessionStop, Error> {
        let here = self.position()?.ok_or_else(|| Error::Observer("the replay is not halted".into()))?;
        if here.tid() != tid {
            return Err(Error::Observer(format!(
                "thread {tid} cannot step back from here: the replay is halted in thread {}",
                here.tid()
            )));
        }
        let previous = self.previous(&here)?;
        if std::env::var_os("RDB_DEBUG").is_some() {
            eprintln!("rdb-debug: reverse-step from {here:?} to {previous:?}");
        }
        match previous {
            Some(p) => {
                self.seek(&p)?;
                Ok(SessionStop::Stepped { tid })
            }
            None => Ok(SessionStop::HistoryStart { tid }),
        }
    }

    /// The point one instruction of `x`'s thread before `x` (`None`: `x` is where the
    /// thread's history starts). Leaves the replay anywhere.
    fn previous(&mut self, x: &Position) -> Result<Option<Position>, Error> {
        match x {
            Position::InStretch { tid, stretch, moves } => match moves.split_last() {
                Some((Move::Step(n), init)) => {
                    let mut m = init.to_vec();
                    if *n > 1 {
                        m.push(Move::Step(n - 1));
                    }
                    Ok(Some(Position::InStretch { tid: *tid, stretch: *stretch, moves: m }))
                }
                Some((last, init)) => {
                    let p = Position::InStretch { tid: *tid, stretch: *stretch, moves: init.to_vec() };
                    self.instruction_before(&p, Some(*last), x).map(Some)
                }
                None => {
                    // Before the event that started the stretch, if it is the thread's own.
                    let event = stretch.saturating_sub(1);
                    let Some(id) = self.checkpoint_for(&Position::Before { tid: *tid, event }, None) else {
                        return Ok(None);
                    };
                    self.restore(id)?;
                    let starts = matches!(
                        self.r.ev.ahead(event)?,
                        Some(
                            Event::Syscall { tid: t, .. }
                            | Event::Signal { tid: t, .. }
                            | Event::Rdtsc { tid: t, .. }
                            | Event::Cpuid { tid: t, .. }
                        )
                            if t == tid
                    );
                    Ok(starts.then_some(Position::Before { tid: *tid, event }))
                }
            },
            Position::Before { tid, event } => {
                self.seek(x)?;
                let stretch = self.r.procs[tid].stretch;
                let last = self.r.ev.last.get(tid).copied();
                if last.is_some_and(|j| stretch <= j) {
                    // No user code since the thread's previous event.
                    return Ok(last.map(|j| Position::Before { tid: *tid, event: j }));
                }
                let _ = event;
                let start = Position::InStretch { tid: *tid, stretch, moves: Vec::new() };
                self.instruction_before(&start, None, x).map(Some)
            }
        }
    }

    /// The point of the instruction run just before `x`, which `p` (a point of the same
    /// stretch) reaches with `last` (`None`: `x` is the thread's stop for an event, reached from
    /// the start of its stretch `p`).
    fn instruction_before(&mut self, p: &Position, last: Option<Move>, x: &Position) -> Result<Position, Error> {
        self.seek(x)?;
        let tid = x.tid();
        let pid = self.r.procs[&tid].pid;
        let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        // `target`: the pc whose predecessors are looked for. For an event, the instruction
        // that makes it (the `syscall` before a syscall entry's pc; a faulting instruction or
        // an rdtsc at the pc): the point wanted is the landing on it.
        let target = match last {
            None if self.parked_at_entry(tid) => regs.rip.wrapping_sub(2),
            _ => regs.rip,
        };
        // An arrival named by a hardware execution breakpoint (a predecessor found before) is
        // an arrival like any other.
        let exec_arrival = match last {
            Some(Move::Watch { watch, count }) if watch.kind == rdb_tracee::WatchKind::Execute => Some((watch, count)),
            _ => None,
        };
        if exec_arrival.is_none() {
            for z in self.predecessors(tid, target, regs.rsp) {
                if let Some(found) = self.try_predecessor(p, last, x, z, target)? {
                    return Ok(found);
                }
            }
        }
        // Single steps from the last point known before `x`.
        let start = match (last, exec_arrival) {
            (Some(Move::Hit { addr, count }), _) if count > 1 => p.then(Move::Hit { addr, count: count - 1 }),
            (_, Some((watch, count))) if count > 1 => p.then(Move::Watch { watch, count: count - 1 }),
            _ => p.clone(),
        };
        let Some(Position::InStretch { stretch, .. }) = Some(start.clone()) else {
            return Err(lost(x, "no point of its stretch to start from"));
        };
        self.seek(&start)?;
        let (mut steps, mut triggers) = (0u64, 0u64);
        loop {
            if last.is_none() && self.halted_pc(tid)? == target {
                return Ok(start.then(Move::Step(steps)).normalized());
            }
            if steps > MAX_STEPS {
                return Err(lost(x, "more than 50 million instructions from the last known point"));
            }
            match self.resume(Resume::Step(tid))? {
                SessionStop::Stepped { .. } | SessionStop::Watchpoint { .. } => steps += 1,
                other => return Err(lost(x, &format!("stepping towards it ended with {other:?}"))),
            }
            if !matches!(self.position()?, Some(Position::InStretch { stretch: s, .. }) if s == stretch) {
                return Err(lost(x, "stepping towards it left its stretch (a syscall came first)"));
            }
            match last {
                Some(Move::Hit { .. }) if self.halted_pc(tid)? == target => {
                    return Ok(start.then(Move::Step(steps - 1)).normalized())
                }
                Some(Move::Watch { .. }) if exec_arrival.is_some() && self.halted_pc(tid)? == target => {
                    return Ok(start.then(Move::Step(steps - 1)).normalized())
                }
                Some(Move::Watch { watch, count }) => {
                    let slot = self.r.dbg.watch.iter().position(|w| *w == Some(watch));
                    if slot.is_some_and(|s| self.r.dbg.last_step_slots & (1 << s) != 0) {
                        triggers += 1;
                        if triggers == count {
                            return Ok(start.then(Move::Step(steps - 1)).normalized());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn halted_pc(&self, tid: Tid) -> Result<u64, Error> {
        let pid = self.r.procs[&tid].pid;
        Ok(ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?.rip)
    }

    fn parked_at_entry(&self, tid: Tid) -> bool {
        matches!(self.r.parked.get(&tid), Some(crate::replay::Stop::Entry { .. }))
    }

    /// Instructions likely to run right before the one at `at`: those ending at `at`, and the
    /// call a return address on top of the stack names (when `at` is a function's entry).
    fn predecessors(&self, tid: Tid, at: u64, rsp: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut code = [0u8; 32];
        let thread = match self.thread(tid) {
            Ok(t) => t,
            Err(_) => return out,
        };
        use rdb_tracee::Memory;
        if thread.read_memory(at.saturating_sub(16), &mut code[..16]).is_ok_and(|n| n == 16) {
            for len in 1..=15u64 {
                let start = at - len;
                let bytes = &code[(16 - len) as usize..16];
                if crate::displace::instruction_length(start, bytes) == Some(len as usize) {
                    out.push(start);
                }
            }
        }
        let mut ret = [0u8; 8];
        if thread.read_memory(rsp, &mut ret).is_ok_and(|n| n == 8) {
            let ret = u64::from_le_bytes(ret);
            for len in [5u64, 2, 3, 6, 7] {
                let start = ret.wrapping_sub(len);
                let mut b = [0u8; 16];
                if thread.read_memory(start, &mut b).is_ok_and(|n| n >= len as usize)
                    && crate::displace::is_call(start, &b[..len as usize])
                {
                    out.push(start);
                }
            }
        }
        out.retain(|z| !self.is_trap_instruction(tid, *z));
        out.truncate(4);
        out
    }

    fn is_trap_instruction(&self, tid: Tid, z: u64) -> bool {
        let mut b = [0u8; 3];
        self.thread(tid).is_ok_and(|t| {
            use rdb_tracee::Memory;
            t.read_memory(z, &mut b).is_ok_and(|n| n >= 2)
                && (b[..2] == [0x0f, 0x05] || b[..2] == [0x0f, 0x31] || b == [0x0f, 0x01, 0xf9])
        })
    }

    /// With `z` a likely predecessor of `target`: the point before `x` made of the last arrival
    /// at `z` between `p` and `x` (named by a hardware execution breakpoint's triggers), if one
    /// step from it gives `x` (checked by the counts on the way and by the step).
    fn try_predecessor(
        &mut self,
        p: &Position,
        last: Option<Move>,
        x: &Position,
        z: u64,
        target: u64,
    ) -> Result<Option<Position>, Error> {
        let tid = x.tid();
        // Arrivals at `z` are counted with a hardware execution breakpoint: `z` may not be the
        // start of an instruction (it is a guess), and an `int3` there would change the code.
        let Some(slot) = self.r.dbg.watch.iter().position(Option::is_none) else { return Ok(None) };
        let exec = rdb_tracee::Watchpoint { addr: z, len: 1, kind: rdb_tracee::WatchKind::Execute };
        self.seek(p)?;
        self.set_watchpoint(slot, exec).map_err(Error::ptrace(rdb_tracee::Pid(-1), "arming a breakpoint"))?;
        self.r.dbg.internal_watch = Some(slot);
        if let Some(ctx) = self.r.dbg.ctx.get_mut(&tid) {
            ctx.log = Some(Vec::new());
        }
        let r = self.reach(x);
        let log = self.r.dbg.goal_log.take().unwrap_or_default();
        self.r.dbg.internal_watch = None;
        self.remove_watchpoint(slot).map_err(Error::ptrace(rdb_tracee::Pid(-1), "disarming a breakpoint"))?;
        r?;
        let z_log = crate::session::TRIGGER_LOG + slot as u64;
        let Some(i) = log.iter().rposition(|&a| a == z_log) else { return Ok(None) };
        let m = log[..=i].iter().filter(|&&a| a == z_log).count() as u64;
        let before = |what: u64| log[..i].iter().filter(|&&a| a == what).count() as u64;
        match last {
            Some(Move::Hit { addr, count }) if before(addr) + 1 != count => return Ok(None),
            Some(Move::Watch { watch, count }) => {
                let slot = self.r.dbg.watch.iter().position(|w| *w == Some(watch)).unwrap_or(0);
                if before(crate::session::TRIGGER_LOG + slot as u64) + 1 != count {
                    return Ok(None);
                }
            }
            _ => {}
        }
        let candidate = p.then(Move::Watch { watch: exec, count: m });
        self.seek(&candidate)?;
        match self.resume(Resume::Step(tid))? {
            SessionStop::Stepped { .. } | SessionStop::Watchpoint { .. } => {}
            _ => return Ok(None),
        }
        if self.halted_pc(tid)? != target {
            return Ok(None);
        }
        Ok(Some(match last {
            // The point wanted is the landing on the instruction making the event.
            None => candidate.then(Move::Step(1)),
            Some(_) => candidate,
        }))
    }
}

impl Position {
    /// Drop an empty `Step(0)`.
    fn normalized(mut self) -> Position {
        if let Position::InStretch { moves, .. } = &mut self {
            moves.retain(|m| *m != Move::Step(0));
        }
        self
    }
}

fn lost(target: &Position, why: &str) -> Error {
    Error::Observer(format!("cannot reach thread {}'s point {}: {why}", target.tid(), target.describe()))
}
