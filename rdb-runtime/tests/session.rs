//! The session API a debugger drives: breakpoints, single steps, hardware watchpoints, every
//! thread readable while halted, syscall halts and `goto`, checkpoints of one and of two
//! threads, on a real two-thread program; the replay still ends exactly as recorded.
//!
//! One test function on purpose: the engine waits for "any child".

mod common;

use common::{compile_c, read_u64, record_options, replay_options, symbol};

use rdb_runtime::{record, replay, NoObserver, Resume, Session, SessionStop};
use rdb_tracee::{Memory, Target, WatchKind, Watchpoint};

#[test]
fn a_debugger_halts_steps_watches_and_the_replay_stays_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile_c(tmp.path(), "session", "session", &["-O1", "-g", "-fPIE", "-pie"], &["-lpthread"]);
    let trace = tmp.path().join("trace");
    let rec = record(&record_options(&trace, exe.clone(), &[])).unwrap();
    assert_eq!(rec.exit_status, 0);
    let plain = replay(&replay_options(&trace), &mut NoObserver).unwrap();

    let mut observer = NoObserver;
    let mut s = Session::start(&replay_options(&trace), &mut observer).unwrap();
    let root = s.root();
    s.set_focus(Some(root));
    let bias = s.image().unwrap().load_bias;
    let bump = bias + symbol(&exe, "bump");
    let total = bias + symbol(&exe, "total");

    // Breakpoints: the first two calls, with their arguments and the memory before each.
    s.set_breakpoint(bump).unwrap();
    for (by, before) in [(1, 0), (2, 1)] {
        match s.resume(Resume::Continue).unwrap() {
            SessionStop::Breakpoint { tid, addr } => assert_eq!((tid, addr), (root, bump)),
            other => panic!("expected a breakpoint, got {other:?}"),
        }
        assert_eq!(s.regs().rip, bump);
        assert_eq!(s.regs().rdi, by);
        assert_eq!(read_u64(&s, total), before);
        // The program's own byte, not the int3.
        let mut code = [0u8; 1];
        s.read_exact(bump, &mut code).unwrap();
        assert_ne!(code[0], 0xcc);
    }
    // One instruction, from the breakpoint.
    assert_eq!(s.resume(Resume::Step(root)).unwrap(), SessionStop::Stepped { tid: root });
    let after_step = s.regs().rip;
    assert!(after_step > bump && after_step < bump + 16, "stepped to {after_step:#x}");
    s.remove_breakpoint(bump).unwrap();

    // A write watchpoint on `total`: the main thread's last two calls, then the worker's three.
    s.set_watchpoint(0, Watchpoint { addr: total, len: 8, kind: WatchKind::Write }).unwrap();
    let mut seen = Vec::new();
    let mut threads = Vec::new();
    loop {
        match s.resume(Resume::Continue).unwrap() {
            SessionStop::Watchpoint { tid, slots, addr } => {
                assert_eq!((slots, addr), (1, total));
                seen.push((tid, read_u64(&s, total)));
                // Every thread of the process is stopped and readable, each with its own TLS.
                let list = s.threads();
                let bases: std::collections::BTreeSet<u64> =
                    list.iter().map(|t| s.thread(t.tid).unwrap().regs().fs_base).collect();
                assert_eq!(bases.len(), list.len(), "threads share an fs_base: {list:?}");
                threads.push(list.len());
            }
            SessionStop::ProcessExited { process, status } => {
                assert_eq!((process, status), (root, 0));
                break;
            }
            other => panic!("expected a watchpoint, got {other:?}"),
        }
    }
    let values: Vec<u64> = seen.iter().map(|(_, v)| *v).collect();
    assert_eq!(values, [3, 6, 106, 206, 306]);
    assert_eq!((seen[0].0, seen[1].0), (root, root));
    assert!(seen[2..].iter().all(|(t, _)| *t != root), "the worker wrote: {seen:?}");
    assert_eq!(threads, [1, 1, 2, 2, 2]);
    assert_eq!(s.resume(Resume::Continue).unwrap(), SessionStop::End);
    let outcome = s.finish().unwrap();
    assert_eq!((outcome.events, outcome.exit_status), (plain.events, Some(0)));

    // Caught syscalls, then `goto` an event index: the halted thread's next event is it.
    let mut observer = NoObserver;
    let mut s = Session::start(&replay_options(&trace), &mut observer).unwrap();
    s.set_focus(Some(root));
    s.catch_syscalls(true);
    let SessionStop::Syscall { tid, nr, exit: false } = s.resume(Resume::Continue).unwrap() else {
        panic!("expected a syscall entry")
    };
    assert_eq!(s.regs().orig_rax, nr);
    assert_eq!(s.resume(Resume::Continue).unwrap(), SessionStop::Syscall { tid, nr, exit: true });
    s.catch_syscalls(false);
    let target = plain.events / 2;
    s.goto(target);
    let SessionStop::Reached { tid } = s.resume(Resume::Continue).unwrap() else { panic!("expected the goto target") };
    assert!(s.next_event(tid).unwrap().unwrap() >= target);
    assert_eq!(s.resume(Resume::Continue).unwrap(), SessionStop::ProcessExited { process: root, status: 0 });
    assert_eq!(s.resume(Resume::Continue).unwrap(), SessionStop::End);
    assert_eq!(s.finish().unwrap().events, plain.events);

    // Checkpoints: one thread (at the first call), then two (at the worker's first write).
    // Going back gives the same registers and memory at every later stop, and the same end.
    let mut observer = NoObserver;
    let mut s = Session::start(&replay_options(&trace), &mut observer).unwrap();
    s.set_focus(Some(root));
    s.set_breakpoint(bump).unwrap();
    let at = |s: &mut Session<'_>| match s.resume(Resume::Continue).unwrap() {
        SessionStop::Breakpoint { tid, .. } => (tid, *s.regs(), read_u64(s, total)),
        other => panic!("expected a breakpoint, got {other:?}"),
    };
    let first = at(&mut s);
    let single = s.checkpoint().unwrap();
    let forward: Vec<_> = (0..5).map(|_| at(&mut s)).collect();
    s.restore(single).unwrap();
    assert_eq!(*s.regs(), first.1, "registers at the checkpoint");
    assert_eq!(read_u64(&s, total), first.2);
    let again: Vec<_> = (0..5).map(|_| at(&mut s)).collect();
    assert_eq!(again, forward, "after going back to the single-thread checkpoint");
    assert!(again.iter().any(|(t, _, _)| *t != root), "the worker ran after the checkpoint: {again:?}");
    // Now halted in the worker, with the main thread waiting in join.
    assert_eq!(s.threads().len(), 2);
    let both = s.checkpoint().unwrap();
    let rest: Vec<_> = std::iter::from_fn(|| match s.resume(Resume::Continue).unwrap() {
        SessionStop::Breakpoint { tid, .. } => Some((tid, *s.regs(), read_u64(&s, total))),
        _ => None,
    })
    .collect();
    assert_eq!(s.resume(Resume::Continue).unwrap(), SessionStop::End);
    s.restore(both).unwrap();
    assert_eq!(s.threads().len(), 2);
    let rest_again: Vec<_> = std::iter::from_fn(|| match s.resume(Resume::Continue).unwrap() {
        SessionStop::Breakpoint { tid, .. } => Some((tid, *s.regs(), read_u64(&s, total))),
        SessionStop::ProcessExited { status, .. } => {
            assert_eq!(status, 0);
            None
        }
        other => panic!("{other:?}"),
    })
    .collect();
    assert_eq!(rest_again, rest, "after going back to the two-thread checkpoint");
    assert_eq!(s.resume(Resume::Continue).unwrap(), SessionStop::End);
    assert_eq!(s.finish().unwrap().events, plain.events);
}
