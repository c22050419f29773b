//! Multithreaded record/replay of the race sample app: recordings of a racy program replay to
//! exactly their own outcome, under chaos schedules and the default time slice. (Threaded
//! programs with a fixed expectation are `programs::threads_*`, `programs::python_thread*` and
//! the compressors of the corpus.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rdb_tests::{cargo, clang, describe, output, program, rdb, repo_root, run_ok, scratch, target_dir, text, timed};

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
