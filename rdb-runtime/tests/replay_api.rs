//! The replayer's library API: breakpoint observer and divergence reports, on real programs.
//!
//! One test function on purpose: the engine waits for "any child", so two recordings in
//! parallel threads of one test binary would see each other's processes.

mod common;

use std::path::PathBuf;

use common::{compile_c, replay_options, symbol};

use rdb_runtime::trace::{Event, Trace, TraceWriter};
use rdb_runtime::{record, replay, BreakpointStop, Error, ProcessImage, ReplayObserver};

struct Watch {
    exe: PathBuf,
    work: u64,
    counter: u64,
    images: Vec<ProcessImage>,
    /// (pc, first argument, value of `counter` in memory) at each hit.
    hits: Vec<(u64, u64, u32)>,
}

impl ReplayObserver for Watch {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        self.images.push(image.clone());
        if image.exe == self.exe {
            vec![image.load_bias + self.work]
        } else {
            vec![]
        }
    }
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        let mut b = [0u8; 4];
        stop.read_memory(stop.image.load_bias + self.counter, &mut b).map_err(|e| e.to_string())?;
        self.hits.push((stop.regs.rip, stop.regs.rdi, u32::from_le_bytes(b)));
        Ok(())
    }
}

#[test]
fn breakpoints_and_divergence_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile_c(tmp.path(), "replay_api", "replay_api", &["-O1", "-g", "-fPIE", "-pie"], &[]);
    let trace = tmp.path().join("trace");
    let rec = record(&common::record_options(&trace, &exe, &[])).unwrap();
    assert_eq!(rec.exit_status, 0);
    // The recorder ran this thread with the TSC disabled; the caller gets it back enabled.
    assert!(!rdb_runtime::sys::tsc_disabled());

    // Breakpoint observer: right pc, registers and memory; replay still completes unchanged.
    let exe = std::fs::canonicalize(&exe).unwrap();
    let mut watch =
        Watch { work: symbol(&exe, "work"), counter: symbol(&exe, "counter"), exe, images: vec![], hits: vec![] };
    let out = replay(&replay_options(&trace), &mut watch).unwrap();
    assert_eq!(out.exit_status, Some(0));
    assert_eq!(out.breakpoint_hits, 3);
    assert_eq!(watch.images.len(), 1);
    let bias = watch.images[0].load_bias;
    assert_eq!(bias, 0x5555_5555_4000, "PIE under ASLR-off loads at the usual base");
    let at = bias + watch.work;
    assert_eq!(watch.hits, vec![(at, 1, 0), (at, 2, 1), (at, 3, 3)]);
    // Replaying again without the observer gives the same event count.
    let plain = replay(&replay_options(&trace), &mut rdb_runtime::NoObserver).unwrap();
    assert_eq!(plain.events, out.events);

    // Divergence: doctor the trace so the recorded `write` went to fd 5.
    let t = Trace::open(&trace).unwrap();
    let mut r = t.events().unwrap();
    let doctored = tmp.path().join("doctored");
    let mut w = TraceWriter::create(&doctored, t.header(), &Default::default()).unwrap();
    let mut target_index = None;
    let mut i = 0u64;
    while let Some(mut ev) = r.next_event().unwrap() {
        if let Event::Syscall { nr: 1, args, .. } = &mut ev {
            if args[2] == 4 && target_index.is_none() {
                args[0] = 5;
                target_index = Some(i);
            }
        }
        w.push(&ev).unwrap();
        i += 1;
    }
    w.finish(t.summary().cloned().unwrap()).unwrap();
    match replay(&replay_options(&doctored), &mut rdb_runtime::NoObserver) {
        Err(Error::Divergence(d)) => {
            assert_eq!(Some(d.index), target_index);
            assert!(d.expected.contains("write(0x5,"), "{}", d.expected);
            assert!(d.actual.contains("write(0x1,"), "{}", d.actual);
            let loc = d.location.clone().unwrap_or_default();
            assert!(loc.contains("replay_api.c:12") && loc.contains("main"), "source location: {loc}");
            let report = d.to_string();
            assert!(report.contains("diverged") && report.contains("expected"), "{report}");
        }
        other => panic!("expected a divergence, got {:?}", other.map(|o| o.events)),
    }
}
