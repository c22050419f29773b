//! A few seconds of the structure-aware crafted-trace fuzzer (`rdb_runtime::trace::fuzz`) on
//! synthetic seeds and on traces of real programs: no crash, no hang, bounded memory. The long
//! run is `bash fuzz/crafted.sh SECONDS`.

mod common;

use std::time::Duration;

use rdb_runtime::record;
use rdb_runtime::trace::fuzz::{self, TraceFiles};

fn record_real(dir: &std::path::Path, name: &str, argv: &[&str]) -> TraceFiles {
    let trace = dir.join(name);
    let args: Vec<_> = argv[1..].iter().map(Into::into).collect();
    record(&common::record_options(&trace, argv[0], &args)).unwrap();
    TraceFiles::from_dir(&trace).unwrap()
}

#[test]
fn crafted_traces_never_crash_hang_or_grow_the_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let mut corpus = fuzz::synthetic_corpus(tmp.path()).unwrap();
    corpus.push(record_real(tmp.path(), "sh", &["/bin/sh", "-c", "echo a | cat > /dev/null"]));
    corpus.push(record_real(tmp.path(), "true", &["/bin/true"]));
    let report = fuzz::run(&corpus, tmp.path(), Duration::from_secs(3), 0x5eed, Duration::from_secs(10));
    eprintln!("{report}");
    assert!(report.executions > 100, "{report}");
    assert!(report.crashes.is_empty(), "{report}");
    assert!(report.hangs.is_empty(), "{report}");
    // Every special file and every kind of mutation was tried and refused or read.
    assert!(report.outcomes.get("corrupt").copied().unwrap_or(0) > 0, "{report}");
    assert!(report.mutations.contains_key("special file"), "{report}");
    assert!(report.peak_rss_kib < 1 << 20, "reading crafted traces used {} KiB", report.peak_rss_kib);
}
