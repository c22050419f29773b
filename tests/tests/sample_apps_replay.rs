//! The sample apps, unmodified, recorded and replayed with `rdb`: each replay shows exactly
//! its own recording, and two recordings of the non-deterministic `jobq` differ.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rdb_tests::{assert_success, cargo, repo_root, run_cargo, SampleApp};

fn rdb() -> PathBuf {
    let st = cargo().current_dir(repo_root()).args(["build", "-q", "-p", "rdb-cli", "--bin", "rdb"]).status().unwrap();
    assert!(st.success(), "building rdb failed");
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
        .join("debug/rdb")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new("timeout").arg("300").arg(rdb()).args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap()
}

/// Records `prog` into `trace`, replays it twice, and returns the recorded stdout.
fn record_and_replay(dir: &Path, trace: &Path, prog: &[&str]) -> String {
    let mut args = vec!["record", "-o", trace.to_str().unwrap(), "--"];
    args.extend_from_slice(prog);
    let rec = run(dir, &args);
    let rec_err: String = String::from_utf8_lossy(&rec.stderr)
        .lines()
        .filter(|l| !l.starts_with("rdb: "))
        .map(|l| format!("{l}\n"))
        .collect();
    for _ in 0..2 {
        let rep = run(dir, &["replay", trace.to_str().unwrap()]);
        assert_eq!(rep.status.code(), Some(0), "replay failed: {}", String::from_utf8_lossy(&rep.stderr));
        assert_eq!(rep.stdout, rec.stdout, "replayed stdout differs from the recording");
        assert_eq!(String::from_utf8_lossy(&rep.stderr), rec_err, "replayed stderr differs from the recording");
    }
    String::from_utf8_lossy(&rec.stdout).into_owned()
}

#[test]
fn sample_apps_replay_exactly() {
    let tmp = tempfile::tempdir().unwrap();
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
#[test]
fn rayon_and_crossbeam_replay_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_root().join("tests/fixtures/threadpool");
    let target = tmp.path().join("target");
    let st = cargo()
        .args(["build", "-q", "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .unwrap();
    assert!(st.success(), "building the threadpool fixture failed");
    let prog = target.join("debug/threadpool");
    let out = record_and_replay(tmp.path(), &tmp.path().join("trace"), &[prog.to_str().unwrap()]);
    let native = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    assert!(out.trim_end().ends_with(&format!("threads {native}")), "{out}");
    assert!(out.starts_with("sum 772239893 channel 4498500 chunks [0, 50000, 100000, 150000]"), "{out}");
}
