//! Going back on a real two-thread program: after every reverse-continue and reverse-step the
//! registers and memory equal those of the same point reached forwards; a reverse watchpoint
//! stops where the value was still the old one; the start of history is reported as such; a
//! checkpoint at a breakpoint hit does not hide that hit from reverse-continue.
//!
//! One test function on purpose: the engine waits for "any child".

mod common;

use std::time::Duration;

use common::{compile_c, read_u64, record_options, replay_options, symbol};

use rdb_runtime::{record, NoObserver, Resume, Session, SessionStop};
use rdb_tracee::{Memory, Regs, Target, WatchKind, Watchpoint};

/// What is compared between a point reached forwards and backwards.
type State = (SessionStop, Regs, u64, Vec<u8>);

fn state(s: &Session<'_>, stop: SessionStop, total: u64) -> State {
    // The stack below and above the stack pointer too.
    let mut stack = vec![0u8; 256];
    s.read_exact(s.regs().rsp - 128, &mut stack).unwrap();
    (stop, *s.regs(), read_u64(s, total), stack)
}

#[test]
fn going_back_gives_the_state_of_going_forwards() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile_c(tmp.path(), "session", "session", &["-O1", "-g", "-fPIE", "-pie"], &["-lpthread"]);
    let trace = tmp.path().join("trace");
    let rec = record(&record_options(&trace, exe.clone(), &[])).unwrap();
    assert_eq!(rec.exit_status, 0);

    // Checkpoints: only at the start, automatic ones, or one at every breakpoint hit (where a
    // backward scan starts halted at a hit it must not miss).
    for (interval, at_hits) in [(None, false), (Some(Duration::from_millis(1)), false), (None, true)] {
        let mut observer = NoObserver;
        let mut s = Session::start(&replay_options(&trace), &mut observer).unwrap();
        let root = s.root();
        s.set_focus(Some(root));
        s.enable_history(interval).unwrap();
        let bias = s.image().unwrap().load_bias;
        let bump = bias + symbol(&exe, "bump");
        let total = bias + symbol(&exe, "total");

        // Forwards: every call of bump (main's three, the worker's three).
        s.set_breakpoint(bump).unwrap();
        let mut forward = Vec::new();
        loop {
            match s.resume(Resume::Continue).unwrap() {
                stop @ SessionStop::Breakpoint { .. } => forward.push(state(&s, stop, total)),
                SessionStop::ProcessExited { .. } => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(forward.len(), 6);
        // Back from the last call to the first, each the same as forwards.
        let last = forward.len() - 1;
        s.restart().unwrap();
        s.set_breakpoint(bump).unwrap();
        for _ in 0..=last {
            s.resume(Resume::Continue).unwrap();
            if at_hits {
                s.checkpoint().unwrap();
            }
        }
        for i in (0..last).rev() {
            let stop = s.reverse_continue().unwrap();
            assert_eq!(state(&s, stop, total), forward[i], "{interval:?}: reverse-continue to call {i}");
        }
        let start = s.reverse_continue().unwrap();
        assert!(matches!(start, SessionStop::HistoryStart { .. }), "{start:?}");

        // Steps forwards from the fourth call (in the worker), then back one by one.
        s.remove_breakpoint(bump).unwrap();
        s.set_breakpoint(bump).unwrap();
        for _ in 0..4 {
            s.resume(Resume::Continue).unwrap();
        }
        let tid = s.halted_thread().unwrap();
        let mut steps = vec![state(&s, SessionStop::Stepped { tid }, total)];
        for _ in 0..6 {
            let stop = s.resume(Resume::Step(tid)).unwrap();
            steps.push(state(&s, stop, total));
        }
        for i in (0..steps.len() - 1).rev() {
            let stop = s.reverse_step(tid).unwrap();
            assert_eq!(stop, SessionStop::Stepped { tid });
            let (_, regs, value, stack) = state(&s, stop, total);
            assert_eq!((regs, value, stack), (steps[i].1, steps[i].2, steps[i].3.clone()), "{interval:?}: step {i}");
        }
        // One more step back: the instruction before the breakpoint's arrival.
        s.reverse_step(tid).unwrap();
        assert_ne!(s.regs().rip, bump);
        s.resume(Resume::Step(tid)).unwrap();
        assert_eq!(s.regs().rip, bump, "{interval:?}: one step forwards again is the arrival");

        // A reverse watchpoint: where `total` last changed, before the write.
        s.remove_breakpoint(bump).unwrap();
        s.set_watchpoint(0, Watchpoint { addr: total, len: 8, kind: WatchKind::Write }).unwrap();
        let now = read_u64(&s, total);
        let stop = s.reverse_continue().unwrap();
        assert!(matches!(stop, SessionStop::Watchpoint { addr, .. } if addr == total), "{stop:?}");
        let old = read_u64(&s, total);
        assert_ne!(old, now, "{interval:?}: stopped where the value is the old one");
        let after = s.resume(Resume::Step(s.halted_thread().unwrap())).unwrap();
        assert!(matches!(after, SessionStop::Watchpoint { .. }), "{after:?}");
        assert_eq!(read_u64(&s, total), now, "{interval:?}: the next instruction writes it");
        s.remove_watchpoint(0).unwrap();
        loop {
            match s.resume(Resume::Continue).unwrap() {
                SessionStop::End => break,
                SessionStop::ProcessExited { status, .. } => assert_eq!(status, 0),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(s.finish().unwrap().exit_status, Some(0));
    }
}
