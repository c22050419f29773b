//! The sample apps, unmodified, recorded and replayed with `rdb`: each replay shows exactly
//! its own recording, and two recordings of the non-deterministic `jobq` differ.

use std::path::Path;

use rdb_tests::{
    assert_success, cargo, describe, output, program_stderr, rdb, repo_root, run_cargo, run_ok, scratch, text, timed,
    SampleApp,
};

/// Records `prog` into `trace`, replays it twice, and returns the recorded stdout.
fn record_and_replay(dir: &Path, trace: &Path, prog: &[&str]) -> String {
    let rec = rdb_tests::record(dir, trace, prog);
    let rec_err = program_stderr(&rec);
    for _ in 0..2 {
        let rep = output(rdb(&["replay", trace.to_str().unwrap()]).current_dir(dir));
        assert_eq!(rep.status.code(), Some(0), "replay failed:\n{}", describe(&rep));
        assert_eq!(rep.stdout, rec.stdout, "replayed stdout differs from the recording");
        assert_eq!(text(&rep.stderr), rec_err, "replayed stderr differs from the recording");
    }
    text(&rec.stdout)
}

pub fn sample_apps_replay_exactly() {
    let tmp = scratch("sample-apps");
    let minibc = SampleApp::plain("minibc", tmp.path());
    assert_success("cargo build minibc", &run_cargo(&minibc.dir, &["build", "-q"]));
    let out =
        record_and_replay(&minibc.dir, &tmp.path().join("minibc-trace"), &["target/debug/minibc", "examples/loops.bc"]);
    assert_eq!(out, "55\n");

    let jobq = SampleApp::plain("jobq", tmp.path());
    assert_success("cargo build jobq", &run_cargo(&jobq.dir, &["build", "-q"]));
    let a = record_and_replay(&jobq.dir, &tmp.path().join("jobq-a"), &["target/debug/jobq", "12"]);
    let b = record_and_replay(&jobq.dir, &tmp.path().join("jobq-b"), &["target/debug/jobq", "12"]);
    // Random priorities and creation times: two runs never print the same.
    assert_ne!(a, b, "two recordings of jobq printed the same output");
}

/// rayon's pool and crossbeam channels replay exactly, and the program sizes its pool as it
/// would natively although rdb pins everything to one CPU (`sched_getaffinity` reports the
/// native mask).
pub fn rayon_and_crossbeam_replay_exactly() {
    let tmp = scratch("sample-apps");
    let fixture = repo_root().join("tests/fixtures/threadpool");
    let target = tmp.path().join("target");
    run_ok(
        "building the threadpool fixture",
        timed(600, cargo().get_program())
            .args(["build", "-q", "--manifest-path"])
            .arg(fixture.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target),
    );
    let prog = target.join("debug/threadpool");
    let out = record_and_replay(tmp.path(), &tmp.path().join("trace"), &[prog.to_str().unwrap()]);
    let native = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    assert!(out.trim_end().ends_with(&format!("threads {native}")), "{out}");
    assert!(out.starts_with("sum 772239893 channel 4498500 chunks [0, 50000, 100000, 150000]"), "{out}");
}
