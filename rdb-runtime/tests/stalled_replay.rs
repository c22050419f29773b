//! A replayed program that never reaches its next recorded event (a trace edited to feed it
//! other data, on which it spins in user code) ends with a divergence naming the stall instead
//! of a replay that waits forever.

mod common;

use rdb_runtime::trace::{Event, Trace, TraceWriter};
use rdb_runtime::{record, replay, Error, ReplayOptions};

#[test]
fn replay_that_stops_making_progress_is_stopped_with_a_divergence() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = common::compile_c(tmp.path(), "spin_on_input", "spin", &["-O1"], &[]);
    let input = tmp.path().join("input");
    std::fs::write(&input, 7i32.to_le_bytes()).unwrap();
    let trace = tmp.path().join("trace");
    let rec = record(&common::record_options(&trace, exe, &[input.into_os_string()])).unwrap();
    assert_eq!(rec.exit_status, 0);
    // The same trace, with the 4 bytes the read returned changed to 42.
    let t = Trace::open(&trace).unwrap();
    let edited = tmp.path().join("edited");
    let mut w = TraceWriter::create(&edited, t.header(), &Default::default()).unwrap();
    let mut changed = false;
    for ev in t.events().unwrap() {
        let mut ev = ev.unwrap();
        if let Event::Syscall { nr: 0, ret: 4, writes, .. } = &mut ev {
            if writes.len() == 1 && writes[0].bytes == 7i32.to_le_bytes() {
                writes[0].bytes = 42i32.to_le_bytes().to_vec();
                changed = true;
            }
        }
        w.push(&ev).unwrap();
    }
    w.finish(t.summary().cloned().unwrap()).unwrap();
    assert!(changed, "the read of the input is in the trace");
    // A short stall limit; this test binary runs only this test, so no other one sees it.
    std::env::set_var("RDB_STALL_SECS", "2");
    let started = std::time::Instant::now();
    match replay(&ReplayOptions { trace_dir: edited, pin_cpu: false, echo_output: false }, &mut rdb_runtime::NoObserver)
    {
        Err(Error::Divergence(d)) => {
            assert!(d.actual.contains("no progress for 2 s"), "{d}");
            assert!(d.expected.contains("(0x1,"), "the next event is on the way to the print: {d}");
        }
        other => panic!("expected a divergence, got {:?}", other.map(|o| o.events)),
    }
    assert!(started.elapsed().as_secs() < 60, "stopped by the stall watch");
}
