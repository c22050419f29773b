//! Breakpoints hit in any thread during replay: the observer sees each hit with the recorded
//! thread id, in the recorded schedule, identically on every replay. (Own test binary: the
//! engine waits for "any child" of the process.)

mod common;

use std::path::PathBuf;

use common::{compile_c, symbol};

use rdb_runtime::trace::event::Tid;
use rdb_runtime::trace::{Event, Trace};
use rdb_runtime::{record_with, replay, BreakpointStop, ProcessImage, ReplayObserver, ReplayOptions, Schedule};

/// Debug-side state shared by all threads' hits: every hit's thread, argument and the value of
/// `counter` then, plus the lost updates it detects (a hit seeing a value already seen).
struct Watch {
    exe: PathBuf,
    work: u64,
    counter: u64,
    hits: Vec<(Tid, u64, u32)>,
}

impl ReplayObserver for Watch {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        if image.exe == self.exe {
            vec![image.load_bias + self.work]
        } else {
            vec![]
        }
    }
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        let mut b = [0u8; 4];
        stop.read_memory(stop.image.load_bias + self.counter, &mut b).map_err(|e| e.to_string())?;
        self.hits.push((stop.tid, stop.regs.rdi, u32::from_le_bytes(b)));
        Ok(())
    }
}

#[test]
fn breakpoints_in_every_thread_follow_the_recorded_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile_c(tmp.path(), "thread_breakpoints", "thr", &["-O1", "-g", "-fPIE", "-pie"], &["-lpthread"]);
    let trace = tmp.path().join("trace");
    let schedule = Schedule { chaos: Some(5), ..Schedule::default() };
    let opts = common::record_options(&trace, &exe, &[]);
    let rec = record_with(&opts, &schedule).unwrap();
    assert_eq!(rec.exit_status, 0);

    let mut threads = Vec::new();
    let t = Trace::open(&trace).unwrap();
    assert_eq!(t.header().chaos_seed, Some(5));
    let mut r = t.events().unwrap();
    while let Some(ev) = r.next_event().unwrap() {
        if let Event::NewProcess { child, flags, .. } = ev {
            assert!(flags & libc::CLONE_THREAD as u64 != 0);
            threads.push(child);
        }
    }
    assert_eq!(threads.len(), 3);

    let exe = std::fs::canonicalize(&exe).unwrap();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut watch =
            Watch { exe: exe.clone(), work: symbol(&exe, "work"), counter: symbol(&exe, "counter"), hits: vec![] };
        let out = replay(&ReplayOptions { trace_dir: trace.clone(), pin_cpu: false, echo_output: false }, &mut watch)
            .unwrap();
        assert_eq!(out.exit_status, Some(0));
        assert_eq!(out.breakpoint_hits, 60);
        runs.push(watch.hits);
    }
    assert_eq!(runs[0], runs[1], "two replays saw different schedules");
    let hits = &runs[0];
    for (i, t) in threads.iter().enumerate() {
        let mine: Vec<_> = hits.iter().filter(|h| h.0 == *t).collect();
        assert_eq!(mine.len(), 20, "thread {t}: {} hits", mine.len());
        assert!(mine.iter().all(|h| h.1 == i as u64 + 1), "thread {t} got another thread's argument");
    }
    // Debug-side state collected across all threads' hits: where the schedule switched
    // threads, and hits that saw a counter value an earlier hit already saw (lost updates).
    let switches = hits.windows(2).filter(|w| w[0].0 != w[1].0).count();
    let lost = hits.windows(2).filter(|w| w[1].2 <= w[0].2).count();
    assert!(switches >= 2, "hits of the three threads never interleaved: {hits:?}");
    eprintln!("{switches} thread switches between hits, {lost} hits saw a stale counter");
}
