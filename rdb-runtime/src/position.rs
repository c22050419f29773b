//! Points in a replay, named without performance counters.
//!
//! rr names a point by (event, retired conditional branches); no counter is available here.
//! A point of the debugged process is named by what is deterministic and countable in
//! software, relative to the thread's *stretch* (the user code it runs from one of its events
//! to the next, during which no other thread of the process runs user code):
//!
//! - [`Position::Before`]: the thread stopped for its event `k` (a syscall entry, a recorded
//!   signal), before the replay handles it;
//! - [`Position::InStretch`]: the start of the stretch that event `stretch - 1` began, then a
//!   chain of [`Move`]s, each counted from the point the previous one reached: the n-th
//!   arrival (breakpoint trap) at an address, n single steps, the n-th trigger of a hardware
//!   watchpoint.
//!
//! Every stop a debugger sees going forwards gets such a name (the moves are the way the
//! debugger went); going back to a point replays from the nearest earlier checkpoint and
//! follows the name. A count is only ever taken with the breakpoint or watchpoint armed for the
//! whole move, so it is exact.

use rdb_tracee::Watchpoint;

use crate::trace::Tid;

/// One step of a [`Position`]'s chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// The `count`-th arrival at `addr` (a breakpoint trap there) since the previous point.
    Hit { addr: u64, count: u64 },
    /// `count` single steps.
    Step(u64),
    /// The `count`-th trigger of `watch` since the previous point (after the access).
    Watch { watch: Watchpoint, count: u64 },
}

/// A point of the debugged process (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// Thread `tid` stopped for its event `event`, not handled yet.
    Before { tid: Tid, event: u64 },
    /// Thread `tid`'s stretch starting after event `stretch - 1`, then `moves`.
    InStretch { tid: Tid, stretch: u64, moves: Vec<Move> },
}

impl Position {
    /// The thread of the point.
    pub fn tid(&self) -> Tid {
        match self {
            Position::Before { tid, .. } | Position::InStretch { tid, .. } => *tid,
        }
    }

    /// `moves` with `m` appended (consecutive steps merge).
    pub fn then(&self, m: Move) -> Position {
        match self {
            Position::InStretch { tid, stretch, moves } => {
                let mut moves = moves.clone();
                push_move(&mut moves, m);
                Position::InStretch { tid: *tid, stretch: *stretch, moves }
            }
            before => before.clone(),
        }
    }

    /// A short text for the user, without the thread (`monitor when`, error messages).
    pub fn describe(&self) -> String {
        match self {
            Position::Before { event, .. } => format!("before event {event}"),
            Position::InStretch { stretch, moves, .. } => {
                let mut s = format!("after event {}", stretch.saturating_sub(1));
                for m in moves {
                    match m {
                        Move::Hit { addr, count } => s.push_str(&format!(", arrival {count} at {addr:#x}")),
                        Move::Step(n) => s.push_str(&format!(", {n} step(s)")),
                        Move::Watch { watch, count } => {
                            s.push_str(&format!(", trigger {count} of the watchpoint at {:#x}", watch.addr))
                        }
                    }
                }
                s
            }
        }
    }
}

/// Append `m` to a chain (consecutive steps merge).
pub(crate) fn push_move(moves: &mut Vec<Move>, m: Move) {
    if let (Some(Move::Step(n)), Move::Step(k)) = (moves.last_mut(), m) {
        *n += k;
        return;
    }
    moves.push(m);
}

/// Whether a checkpoint taken at `at`, with `events` events replayed, lies at or before
/// `target`, so that replaying from it reaches `target`.
pub(crate) fn usable(at: Option<&Position>, events: u64, target: &Position) -> bool {
    match target {
        Position::Before { event, .. } => events <= *event,
        Position::InStretch { tid, stretch, moves } => {
            if events < *stretch {
                return true;
            }
            if events > *stretch {
                return false;
            }
            match at {
                Some(Position::InStretch { tid: t, stretch: s, moves: m }) => {
                    t == tid && s == stretch && m.len() <= moves.len() && is_prefix(m, moves)
                }
                _ => false,
            }
        }
    }
}

/// `a` is a prefix of `b`, a last `Step(n)` of `a` counting as a prefix of a `Step(m)`, m ≥ n.
pub(crate) fn is_prefix(a: &[Move], b: &[Move]) -> bool {
    let Some((last, init)) = a.split_last() else { return true };
    if b[..init.len()] != *init {
        return false;
    }
    match (last, &b[init.len()]) {
        (Move::Step(n), Move::Step(m)) => n <= m,
        (x, y) => x == y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(stretch: u64, moves: Vec<Move>) -> Position {
        Position::InStretch { tid: Tid(7), stretch, moves }
    }

    #[test]
    fn steps_merge_and_prefixes_decide_which_checkpoint_is_usable() {
        let p = at(10, vec![Move::Hit { addr: 0x40, count: 2 }]).then(Move::Step(1)).then(Move::Step(2));
        assert_eq!(p, at(10, vec![Move::Hit { addr: 0x40, count: 2 }, Move::Step(3)]));
        // Earlier events: always before.
        assert!(usable(None, 9, &p));
        // Same stretch: only a prefix of the chain.
        assert!(usable(Some(&at(10, vec![])), 10, &p));
        assert!(usable(Some(&at(10, vec![Move::Hit { addr: 0x40, count: 2 }, Move::Step(1)])), 10, &p));
        assert!(!usable(Some(&at(10, vec![Move::Hit { addr: 0x40, count: 3 }])), 10, &p));
        assert!(!usable(Some(&at(10, vec![Move::Hit { addr: 0x40, count: 2 }, Move::Step(4)])), 10, &p));
        // Later events: never.
        assert!(!usable(Some(&at(11, vec![])), 11, &p));
        assert!(usable(None, 12, &Position::Before { tid: Tid(7), event: 12 }));
        assert!(!usable(None, 13, &Position::Before { tid: Tid(7), event: 12 }));
    }
}
