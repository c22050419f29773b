//! Multithreaded record/replay: recordings of racy programs replay to exactly their own
//! outcome; threaded programs of this machine replay byte-identical output; a thread spinning
//! without syscalls is reported instead of hanging the recorder. Every command runs under
//! `timeout`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The `rdb` binary of this workspace (built on demand when missing).
fn rdb() -> PathBuf {
    let p = target_dir().join("rdb");
    if !p.exists() {
        let st = Command::new(cargo()).args(["build", "-p", "rdb-cli", "--bin", "rdb"]).status().expect("cargo runs");
        assert!(st.success(), "building rdb failed");
    }
    p
}

fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "rdb-thr-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        name
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn rdb_run(args: &[&str], prog: &[&str], cwd: &Path) -> Output {
    Command::new("timeout")
        .arg("180")
        .arg(rdb())
        .args(args)
        .args(prog)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("rdb runs")
}

fn record(trace: &Path, extra: &[&str], prog: &[&str], cwd: &Path) -> Output {
    let mut args = vec!["record", "-o", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("--");
    let out = rdb_run(&args, prog, cwd);
    assert_ne!(out.status.code(), Some(124), "recording hung: {}", text(&out.stderr));
    out
}

fn replay(trace: &Path, cwd: &Path) -> Output {
    let out = rdb_run(&["replay", trace.to_str().unwrap()], &[], cwd);
    assert_ne!(out.status.code(), Some(124), "replay hung: {}", text(&out.stderr));
    out
}

/// The race sample app (its own cargo project), built into this target directory.
fn race_app() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let target = target_dir().join("sample-race");
    let st = Command::new(cargo())
        .args(["build", "-q", "--manifest-path"])
        .arg(root.join("sample-apps/race/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .expect("cargo runs");
    assert!(st.success(), "building sample-apps/race failed");
    target.join("debug/race")
}

/// Record, then replay `times` times; every replay must print exactly what the recording did.
fn round_trip(dir: &Path, name: &str, extra: &[&str], prog: &[&str], times: usize) -> Vec<u8> {
    let trace = dir.join(name);
    let rec = record(&trace, extra, prog, dir);
    assert_eq!(rec.status.code(), Some(0), "{name}: recording failed: {}", text(&rec.stderr));
    for i in 0..times {
        let rep = replay(&trace, dir);
        assert_eq!(rep.status.code(), Some(0), "{name}: replay {i} failed: {}", text(&rep.stderr));
        assert!(
            rep.stdout == rec.stdout,
            "{name}: replay {i} printed\n{}\nbut the recording printed\n{}",
            text(&rep.stdout),
            text(&rec.stdout)
        );
    }
    rec.stdout
}

#[test]
fn racy_recordings_replay_to_their_own_outcome() {
    let app = race_app();
    let dir = scratch("race");
    let app = app.to_str().unwrap();
    let mut outcomes = BTreeSet::new();
    let mut lost_any = false;
    for seed in ["1", "2", "3", "4"] {
        let out = round_trip(&dir, &format!("chaos-{seed}"), &["--chaos", "--seed", seed], &[app, "4", "150"], 2);
        let line = text(&out);
        assert!(line.starts_with("final count "), "unexpected output {line}");
        lost_any |= !line.contains("(0 updates lost)");
        outcomes.insert(line);
    }
    // Also the default (time-slice) schedule.
    let out = round_trip(&dir, "slice", &[], &[app, "3", "150"], 2);
    assert!(text(&out).starts_with("final count "));
    assert!(lost_any, "no recording lost an update: the schedule never switched inside the race window");
    assert!(outcomes.len() >= 2, "four chaos seeds gave one outcome: {outcomes:?}");
}

#[test]
fn the_chaos_seed_is_stored_in_the_trace() {
    let app = race_app();
    let dir = scratch("seed");
    let trace = dir.join("t");
    let rec = record(&trace, &["--chaos", "--seed", "77"], &[app.to_str().unwrap(), "2", "10"], &dir);
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    let info = rdb_run(&["info", trace.to_str().unwrap()], &[], &dir);
    let info = text(&info.stdout);
    assert!(info.contains("chaos, seed 77"), "{info}");
    assert!(info.contains("(2 more threads)"), "{info}");
}

#[test]
fn python_threading_replays_identically() {
    let dir = scratch("py");
    let script = dir.join("t.py");
    std::fs::write(
        &script,
        "import threading, time\nlock = threading.Lock()\nlog = []\ndef work(n):\n    for i in range(200):\n        with lock:\n            log.append((n, i, time.monotonic_ns() % 1000))\n        if i % 50 == 0:\n            time.sleep(0.001)\nts = [threading.Thread(target=work, args=(k,)) for k in range(4)]\nfor t in ts: t.start()\nfor t in ts: t.join()\nprint(len(log), log[:8], log[-4:])\n",
    )
    .unwrap();
    let out = round_trip(&dir, "py", &[], &["python3", script.to_str().unwrap()], 2);
    assert!(text(&out).starts_with("800 "), "{}", text(&out));
}

/// A thread pool whose workers run subprocesses: each child's SIGCHLD (queued even though
/// ignored, because the process is traced) may wake a thread blocked in `poll` on a pipe while
/// another thread takes the signal; the kernel then resumes that poll with `restart_syscall`,
/// whose `revents` must be replayed like poll's own. This happened in about one recording of
/// seven, so several recordings are made, each replayed twice.
#[test]
fn python_thread_pool_with_subprocesses_replays_identically() {
    let dir = scratch("py-pool");
    let pool = dir.join("pool.py");
    std::fs::write(
        &pool,
        "import concurrent.futures, subprocess, threading\ndef job(i):\n    out = subprocess.run(['echo', str(i)], capture_output=True).stdout\n    return (i, out, threading.current_thread().name)\nwith concurrent.futures.ThreadPoolExecutor(3) as ex:\n    print(list(ex.map(job, range(6))))\n",
    )
    .unwrap();
    for n in 0..5 {
        let out = round_trip(&dir, &format!("pool-{n}"), &[], &["python3", pool.to_str().unwrap()], 2);
        assert!(text(&out).contains("(5, b'5\\n', 'ThreadPoolExecutor-0_"), "{}", text(&out));
    }
}

/// The same mechanism made certain: the main thread blocks SIGCHLD, so the kernel wakes the
/// thread blocked in `poll` with it; its poll is resumed by `restart_syscall`, which returns
/// the `revents` the program then acts on.
#[test]
fn a_poll_resumed_by_restart_syscall_replays_its_revents() {
    let dir = scratch("restart");
    let exe = compile_c(&dir, "threads_restart", "restart");
    let out = round_trip(&dir, "restart-trace", &[], &[exe.to_str().unwrap()], 2);
    assert_eq!(text(&out), "round 0: poll 1 revents 0x1 read x\nround 1: poll 1 revents 0x1 read x\n");
    let info = rdb_run(&["info", "--events", dir.join("restart-trace").to_str().unwrap()], &[], &dir);
    let events = text(&info.stdout);
    assert!(
        events.contains("restart_syscall() = 1"),
        "the recording never resumed a poll with restart_syscall, so this test checked nothing:\n{events}"
    );
}

/// Builds `tests/<source>.c` (with pthreads) into `dir/<name>`.
fn compile_c(dir: &Path, source: &str, name: &str) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/{source}.c"));
    let exe = dir.join(name);
    let st = Command::new("clang-14")
        .args(["-O0", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lpthread")
        .status()
        .expect("clang-14 runs");
    assert!(st.success(), "clang-14 failed for {source}.c");
    exe
}

fn have(prog: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {prog}")).output().is_ok_and(|o| o.status.success())
}

/// pigz and pbzip2 compress with several threads; the compressed bytes on stdout must come
/// out of the replay identical. (Installed by scripts/setup.sh.)
#[test]
fn parallel_compressors_replay_identically() {
    let dir = scratch("zip");
    let data: Vec<u8> =
        (0..600_000u32).flat_map(|i| format!("{} {}\n", i, i.wrapping_mul(2654435761) % 9973).into_bytes()).collect();
    std::fs::write(dir.join("data.txt"), &data).unwrap();
    let mut ran = 0;
    for (prog, args) in [("pigz", &["-p", "2", "-c", "data.txt"][..]), ("pbzip2", &["-p2", "-c", "data.txt"][..])] {
        if !have(prog) {
            eprintln!("skipping {prog}: not installed (scripts/setup.sh installs it)");
            continue;
        }
        let mut cmd = vec![prog];
        cmd.extend_from_slice(args);
        let out = round_trip(&dir, prog, &[], &cmd, 1);
        assert!(out.len() > 1000, "{prog} printed only {} bytes", out.len());
        ran += 1;
    }
    assert!(ran > 0 || std::env::var_os("CI").is_none(), "neither pigz nor pbzip2 is installed");
}

/// A thread that busy-waits for another one never gets past its loop under a syscall-boundary
/// scheduler; the watchdog must name it and where it spins.
#[test]
fn a_spinning_thread_is_reported() {
    let dir = scratch("spin");
    let src = dir.join("spin.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\n#include <stdio.h>\n#include <unistd.h>\nstatic volatile int flag;\nstatic void *setter(void *a) { usleep(2000); flag = 1; return a; }\nint main(void) {\n  pthread_t t;\n  pthread_create(&t, 0, setter, 0);\n  while (!flag) { }\n  pthread_join(t, 0);\n  puts(\"done\");\n  return 0;\n}\n",
    )
    .unwrap();
    let exe = dir.join("spin");
    let st = Command::new("clang-14")
        .args(["-O0", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lpthread")
        .status()
        .expect("clang-14 runs");
    assert!(st.success(), "clang-14 failed");
    let rec = record(&dir.join("t"), &["--watchdog", "1"], &[exe.to_str().unwrap()], &dir);
    let err = text(&rec.stderr);
    assert_eq!(rec.status.code(), Some(1), "{err}");
    assert!(err.contains("without a syscall"), "{err}");
    assert!(err.contains("spin.c:9"), "no source location in: {err}");
}

/// A signal sent to one thread (`pthread_kill`) is handled by that thread at replay too, and
/// the program sees the recorded thread ids (gettid in the thread and in the handler).
#[test]
fn thread_directed_signals_and_recorded_tids() {
    let dir = scratch("sig");
    let exe = compile_c(&dir, "threads_signal", "sig");
    let out = round_trip(&dir, "sig-trace", &[], &[exe.to_str().unwrap()], 2);
    assert!(text(&out).starts_with("handled in worker: 1, tids differ from main: 1"), "{}", text(&out));
}
