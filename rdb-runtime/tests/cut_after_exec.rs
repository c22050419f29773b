//! A recording killed right after an exec ends with that exec's event. Replaying such a trace
//! once panicked (`head checked`, exit 101); it must end cleanly as a cut-short trace. The
//! cuts are made deterministically: the events of a real recording of
//! `programs/fork_exec_loop.sh` are copied into a new trace up to each exec in turn, and the
//! copy is left unfinished, as a killed recorder leaves it.

mod common;

use std::path::Path;

use rdb_runtime::trace::{Event, Trace, TraceWriter};
use rdb_runtime::{record, replay, Error, ReplayOptions};

/// The events of a recording of `programs/fork_exec_loop.sh`, and its header.
fn recorded_events(dir: &Path) -> (Trace, Vec<Event>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/fork_exec_loop.sh");
    let trace = dir.join("trace");
    let rec = record(&common::record_options(&trace, "/bin/sh", &[script.into_os_string()])).unwrap();
    assert_eq!(rec.exit_status, 0);
    let t = Trace::open(&trace).unwrap();
    let events: Vec<Event> = t.events().unwrap().collect::<Result<_, _>>().unwrap();
    (t, events)
}

/// Copies the first `k + 1` events into an unfinished trace and replays it: it must end
/// cleanly as cut short, with every event replayed.
fn replay_cut_after(dir: &Path, t: &Trace, events: &[Event], k: usize, what: &str) {
    let cut = dir.join(format!("cut-{k}"));
    let mut w = TraceWriter::create(&cut, t.header(), &Default::default()).unwrap();
    for e in &events[..=k] {
        w.push(e).unwrap();
    }
    w.flush().unwrap();
    drop(w); // never finished: cut short
    let opts = ReplayOptions { trace_dir: cut, pin_cpu: false, echo_output: false };
    match replay(&opts, &mut rdb_runtime::NoObserver) {
        Err(Error::EndsEarly { events }) => assert_eq!(events, k as u64 + 1, "cut after {what} (event {k})"),
        other => panic!("cut after {what} (event {k}): {:?}", other.map(|o| o.events)),
    }
}

/// Cut right after each exec; then right after each event that creates or ends a process or
/// thread or delivers a signal, and right after the event that follows it (a killed recorder
/// stops anywhere). One test: two replays at once in one process would take each other's
/// ptrace stops (any thread of a tracer may wait for its tracees).
#[test]
fn replay_of_a_trace_cut_after_an_exec_or_a_process_event_ends_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let (t, events) = recorded_events(tmp.path());
    let execs: Vec<usize> =
        events.iter().enumerate().filter(|(_, e)| matches!(e, Event::Exec { .. })).map(|(i, _)| i).collect();
    assert!(execs.len() >= 5, "the script execs sh, three true and echo: {} execs", execs.len());
    for (n, &k) in execs.iter().enumerate() {
        replay_cut_after(tmp.path(), &t, &events, k, &format!("exec #{n}"));
    }
    let mut cuts = std::collections::BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        if matches!(e, Event::NewProcess { .. } | Event::Exit { .. } | Event::Signal { .. } | Event::ThreadStart { .. })
        {
            cuts.insert(i);
            cuts.insert((i + 1).min(events.len() - 1));
        }
    }
    assert!(cuts.len() >= 8, "forks and exits of sh, three true and echo: {} cuts", cuts.len());
    for k in cuts.into_iter().filter(|k| !execs.contains(k)) {
        replay_cut_after(tmp.path(), &t, &events, k, events[k].describe().as_str());
    }
}
