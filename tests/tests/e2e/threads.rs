//! Multithreaded record/replay of the race sample app: recordings of a racy program replay to
//! exactly their own outcome, under chaos schedules and the default time slice. (Threaded
//! programs with a fixed expectation are `programs::threads_*`, `programs::python_thread*` and
//! the compressors of the corpus.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rdb_tests::{
    cargo, clang, describe, output, program, rdb, rdb_timed, repo_root, run_ok, scratch, target_dir, text, timed,
};

/// The race sample app (its own cargo project), built into this target directory.
fn race_app() -> PathBuf {
    let target = target_dir().join("sample-race");
    run_ok(
        "building sample-apps/race",
        timed(600, cargo().get_program())
            .args(["build", "-q", "--manifest-path"])
            .arg(repo_root().join("sample-apps/race/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target),
    );
    target.join("debug/race")
}

/// Records with `extra` flags, then replays `times` times; every replay must print exactly
/// what the recording did.
fn round_trip(dir: &Path, name: &str, extra: &[&str], prog: &[&str], times: usize) -> Vec<u8> {
    let trace = dir.join(name);
    let mut args = vec!["record", "-o", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(prog);
    let rec = output(rdb(&args).current_dir(dir));
    assert_eq!(rec.status.code(), Some(0), "{name}: recording failed:\n{}", describe(&rec));
    for i in 0..times {
        let rep = output(rdb(&["replay", trace.to_str().unwrap()]).current_dir(dir));
        assert_eq!(rep.status.code(), Some(0), "{name}: replay {i} failed:\n{}", describe(&rep));
        assert!(
            rep.stdout == rec.stdout,
            "{name}: replay {i} printed\n{}\nbut the recording printed\n{}",
            text(&rep.stdout),
            text(&rec.stdout)
        );
    }
    rec.stdout
}

pub fn racy_recordings_replay_to_their_own_outcome() {
    let app = race_app();
    let dir = scratch("race");
    let app = app.to_str().unwrap();
    let mut outcomes = BTreeSet::new();
    let mut lost_any = false;
    for seed in ["1", "2", "3", "4"] {
        let out = round_trip(dir.path(), &format!("chaos-{seed}"), &["--chaos", "--seed", seed], &[app, "4", "150"], 2);
        let line = text(&out);
        assert!(line.starts_with("final count "), "unexpected output {line}");
        lost_any |= !line.contains("(0 updates lost)");
        outcomes.insert(line);
    }
    // Also the default (time-slice) schedule.
    let out = round_trip(dir.path(), "slice", &[], &[app, "3", "150"], 2);
    assert!(text(&out).starts_with("final count "));
    assert!(lost_any, "no recording lost an update: the schedule never switched inside the race window");
    assert!(outcomes.len() >= 2, "four chaos seeds gave one outcome: {outcomes:?}");
}

pub fn the_chaos_seed_is_stored_in_the_trace() {
    let app = race_app();
    let dir = scratch("seed");
    let trace = dir.path().join("t");
    let rec = output(
        rdb(&[
            "record",
            "-o",
            trace.to_str().unwrap(),
            "--chaos",
            "--seed",
            "77",
            "--",
            app.to_str().unwrap(),
            "2",
            "10",
        ])
        .current_dir(dir.path()),
    );
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
    let info = output(&mut rdb(&["info", trace.to_str().unwrap()]));
    let info = text(&info.stdout);
    assert!(info.contains("chaos, seed 77"), "{info}");
    assert!(info.contains("(2 more threads)"), "{info}");
}

/// Threads whose writes to the output block on a slow reader (each far longer than the
/// recorder's 2 ms deadline, so other threads run and write meanwhile) are recorded in the
/// order the kernel wrote their bytes: the replay prints exactly what the recording printed.
pub fn writes_blocked_on_a_slow_reader_replay_in_the_kernels_order() {
    use std::io::Read;
    let dir = scratch("slow-reader");
    let exe =
        clang(&program("support/writers_to_a_slow_reader.c"), &dir.path().join("writers"), &["-O1", "-pthread"], &[]);
    let trace = dir.path().join("trace");
    let mut child = rdb(&["record", "-o", trace.to_str().unwrap(), "--", exe.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start rdb record");
    // Read 4 KB a millisecond: a 200 KB write waits about 50 ms for the pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut recorded = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => recorded.extend_from_slice(&buf[..n]),
            Err(e) => panic!("reading the recording's output: {e}"),
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let rec = child.wait_with_output().expect("wait for rdb record");
    assert_eq!(rec.status.code(), Some(0), "recording failed:\n{}", text(&rec.stderr));
    assert_eq!(recorded.len(), 4 * 3 * 200 * 1024, "the recording printed {} bytes", recorded.len());
    let rep = output(rdb(&["replay", trace.to_str().unwrap()]).current_dir(dir.path()));
    assert_eq!(rep.status.code(), Some(0), "replay failed:\n{}", describe(&rep));
    assert_eq!(rep.stdout.len(), recorded.len(), "the replay printed {} bytes", rep.stdout.len());
    let first_difference = rep.stdout.iter().zip(&recorded).position(|(a, b)| a != b);
    assert_eq!(first_difference, None, "the replay's output differs from the recording's at that byte");
}

/// Writes to two different output files do not wait for each other: a reader that drains
/// stderr only after a line on stdout gets that line while a thread's write to stderr blocks.
pub fn a_write_to_stdout_does_not_wait_for_one_to_stderr() {
    use std::io::{BufRead, Read};
    let dir = scratch("stdout-stderr");
    let exe =
        clang(&program("support/stdout_while_stderr_is_full.c"), &dir.path().join("speak"), &["-O1", "-pthread"], &[]);
    let trace = dir.path().join("trace");
    let mut child = rdb_timed(60, &["record", "-o", trace.to_str().unwrap(), "--", exe.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start rdb record");
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n", "the line on stdout (none: the recording hung until its timeout)");
    let mut err = Vec::new();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", text(&err[err.len().saturating_sub(2000)..]));
    assert!(
        err.len() > 1 << 20 && err[..1 << 20].iter().all(|&b| b == b'e'),
        "stderr is the program's 1 MB, then rdb's"
    );
    let rep = output(rdb(&["replay", trace.to_str().unwrap()]).current_dir(dir.path()));
    assert_eq!(rep.status.code(), Some(0), "replay failed:\n{}", describe(&rep));
    assert_eq!(text(&rep.stdout), "ready\n");
}

/// Interruption points (asynchronous signals and switches in user code) replay both ways:
/// through the stub patched into the program and, with `RDB_NO_POINT_STUBS=1`, with the
/// hardware breakpoint compared at each arrival (the way for a point whose instruction cannot
/// carry the stub's jump); the trace names the points.
pub fn interruption_points_replay_with_and_without_stubs() {
    let dir = scratch("points");
    for (source, libs) in [("sigalrm_cpu_loop.c", &[][..]), ("spin_flag_preempt.c", &["-lpthread"][..])] {
        let exe = dir.path().join(source.trim_end_matches(".c"));
        clang(&program(source), &exe, &["-O1", "-g"], libs);
        let trace = dir.path().join(format!("{source}.trace"));
        let rec = output(&mut rdb(&["record", "-o", trace.to_str().unwrap(), "--", exe.to_str().unwrap()]));
        assert_eq!(rec.status.code(), Some(0), "{source}: recording failed:\n{}", describe(&rec));
        let events = output(&mut rdb(&["info", "--events", trace.to_str().unwrap()]));
        assert!(text(&events.stdout).contains("interrupted in user code"), "{source}: no interruption point");
        for stubs in [true, false] {
            let mut cmd = rdb(&["replay", trace.to_str().unwrap()]);
            if !stubs {
                cmd.env("RDB_NO_POINT_STUBS", "1");
            }
            let rep = output(&mut cmd);
            assert_eq!(rep.status.code(), Some(0), "{source} (stubs: {stubs}): replay failed:\n{}", describe(&rep));
            assert!(
                rep.stdout == rec.stdout,
                "{source} (stubs: {stubs}): replay printed\n{}\nbut the recording printed\n{}",
                text(&rep.stdout),
                text(&rec.stdout)
            );
        }
    }
}
