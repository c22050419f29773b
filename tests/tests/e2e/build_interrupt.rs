//! Killing `cargo rdb build` at any point leaves the user's tree as it was,
//! and the next build succeeds.

use rdb_tests::{assert_success, cargo_rdb, run_cargo, run_cargo_rdb, scratch, timed, tree_snapshot, SampleApp};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::Stdio;

/// Starts `cargo rdb build`, waits until stderr shows `marker`, then kills
/// the whole process group (cargo-rdb, cargo and rustc).
fn kill_at(dir: &std::path::Path, marker: &str) {
    let mut child = timed(600, cargo_rdb())
        .current_dir(dir)
        .args(["rdb", "build"])
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = child.id() as i32;
    let stderr = child.stderr.take().unwrap();
    let mut seen = false;
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap();
        if line.contains(marker) {
            seen = true;
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            break;
        }
    }
    child.wait().unwrap();
    assert!(seen, "cargo rdb build never printed `{marker}`");
}

pub fn killed_build_leaves_the_tree_unchanged() {
    let tmp = scratch("build");
    let sample = SampleApp::plain("minibc", tmp.path());
    sample.instrument();
    // Let cargo write its Cargo.lock first, as any cargo command would.
    assert_success("cargo metadata", &run_cargo(&sample.dir, &["metadata", "-q", "--format-version=1"]));
    let before = tree_snapshot(&sample.dir);
    for marker in ["main binaries", "Compiling minibc", "debug module"] {
        // From scratch each time, so that every phase (and its marker) comes again even when
        // an earlier build got further than its kill.
        let _ = std::fs::remove_dir_all(sample.dir.join("target"));
        kill_at(&sample.dir, marker);
        assert_eq!(before, tree_snapshot(&sample.dir), "tree changed after a kill at `{marker}`");
    }
    assert_success("cargo rdb build after the kills", &run_cargo_rdb(&sample.dir, &["build"]));
    assert_eq!(before, tree_snapshot(&sample.dir));
}
