//! A checkpoint taken while the session is halted on its interrupter (at an event, not at a
//! breakpoint; at a syscall entry among others): restoring it gives the same registers, and
//! going on replays the rest exactly as the first time. (A thread parked at a syscall entry
//! used to come back standing before its `syscall` instruction, neither parked nor running:
//! the resume after the restore waited for it forever.)
//!
//! One test function on purpose: the engine waits for "any child".

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{compile_c, record_options, replay_options};

use rdb_runtime::{record, replay, NoObserver, Resume, Session, SessionStop};
use rdb_tracee::Target;

/// Resumes until the replay ends; the stops on the way.
fn to_the_end(s: &mut Session<'_>) -> Vec<SessionStop> {
    let mut stops = Vec::new();
    loop {
        let stop = s.resume(Resume::Continue).unwrap();
        if stop == SessionStop::End {
            return stops;
        }
        stops.push(stop);
    }
}

#[test]
fn a_checkpoint_at_an_interrupt_restores_and_replays_to_the_end() {
    // A hang (the suspected fault: the resume after the restore waiting for a child forever)
    // fails the test instead of stalling it.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(600));
        eprintln!("a replay after restoring a checkpoint taken at an interrupt hung (600 s)");
        std::process::exit(1);
    });
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile_c(tmp.path(), "session", "session", &["-O1", "-g", "-fPIE", "-pie"], &["-lpthread"]);
    let trace = tmp.path().join("trace");
    let rec = record(&record_options(&trace, exe.clone(), &[])).unwrap();
    assert_eq!(rec.exit_status, 0);
    let plain = replay(&replay_options(&trace), &mut NoObserver).unwrap();

    // Halted on the interrupter at each of the first events in turn (one thread, then two).
    for k in 1..=plain.events {
        let mut observer = NoObserver;
        let mut s = Session::start(&replay_options(&trace), &mut observer).unwrap();
        let root = s.root();
        s.set_focus(Some(root));
        let interrupt = s.interrupter();
        let mut halted = None;
        for _ in 0..k {
            interrupt.store(true, Ordering::SeqCst);
            match s.resume(Resume::Continue).unwrap() {
                SessionStop::Interrupted { tid } => halted = Some(tid),
                _ => break,
            }
        }
        let Some(tid) = halted else { break };
        if s.halted_thread() != Some(tid) {
            break;
        }
        let regs = *s.regs();
        let at = s.events_replayed();
        let id = s.checkpoint().unwrap();
        let first = to_the_end(&mut s);
        s.restore(id).unwrap();
        assert_eq!(*s.regs(), regs, "interrupt {k}: the registers at the checkpoint");
        assert_eq!(s.events_replayed(), at, "interrupt {k}");
        let again = to_the_end(&mut s);
        assert_eq!(again, first, "interrupt {k} (event {at}): the stops after the restore");
        assert_eq!(s.finish().unwrap().events, plain.events, "interrupt {k}");
    }
}
