//! End-to-end replay debugging (issue 4): record a plain build once, add regions, rebuild with
//! `cargo rdb build`, replay with `rdb replay --debug` / `cargo rdb replay`, and check that
//! the regions print the program's real state while the program's own output stays exactly
//! the recorded one, whatever the debug code does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use rdb_tests::{assert_success, cargo, repo_root, run_cargo, run_cargo_rdb, SampleApp};

/// Exit codes of `rdb replay` (rdb-cli/src/main.rs).
const EXIT_ERROR: i32 = 1;
const EXIT_REGION_PROBLEMS: i32 = 5;

/// `target/debug` of this workspace, with `rdb` and `rdb-debug-host` built.
fn tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let st = cargo()
            .current_dir(repo_root())
            .args(["build", "-q", "-p", "rdb-cli", "-p", "rdb-host", "-p", "cargo-rdb", "--bins"])
            .status()
            .expect("cargo runs");
        assert!(st.success(), "building rdb failed");
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target"));
        target.join("debug")
    })
}

fn rdb(args: &[&str], dir: &Path) -> Output {
    Command::new("timeout")
        .arg("300")
        .arg(tools().join("rdb"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("rdb runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("rdb-debug-{name}-")).tempdir().unwrap()
}

/// Records `prog args` and returns (trace dir, recorded stdout, recorded stderr).
fn record(dir: &Path, trace: &Path, prog: &[&str]) -> (String, String) {
    let mut args = vec!["record", "-o", trace.to_str().unwrap(), "--"];
    args.extend_from_slice(prog);
    let out = rdb(&args, dir);
    let err = text(&out.stderr);
    assert!(err.contains("rdb: recorded"), "recording failed:\n{err}");
    // The recorder's own lines are not the program's.
    let prog_err: String = err.lines().filter(|l| !l.starts_with("rdb: ")).map(|l| format!("{l}\n")).collect();
    (text(&out.stdout), prog_err)
}

fn without<'a>(s: &'a str, region_line: impl Fn(&str) -> bool + 'a) -> String {
    s.lines().filter(|l| !region_line(l)).map(|l| format!("{l}\n")).collect()
}

#[test]
fn minibc_regions_show_branch_popping_an_empty_stack() {
    let tmp = scratch("minibc");
    let app = SampleApp::plain("minibc", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    let (rec_out, rec_err) = record(&app.dir, &trace, &["target/debug/minibc", "examples/loops.bc"]);
    assert!(rec_err.contains("stack underflow"), "the sample's bug did not show:\n{rec_err}");

    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let out = rdb(&["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/minibc"], &app.dir);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "replay with regions failed:\n{stdout}\n{stderr}");

    // The VM region ran at every step with the real operand stack, and shows the branch of
    // the empty `for (;;)` condition popping an empty stack.
    let steps: Vec<&str> = stdout.lines().filter(|l| l.starts_with('[')).collect();
    assert!(steps.len() > 20, "too few region hits:\n{stdout}");
    let last = steps.last().unwrap();
    assert!(last.contains("BranchIfFalse") && last.ends_with("stack=[]"), "last step: {last}\n{stdout}");
    // Debug-only state persisted across hits: the hit counter counts 1, 2, 3, ...
    for (i, l) in steps.iter().enumerate() {
        assert!(l.contains(&format!(" #{} ", i + 1)), "hit {} reads {l}", i + 1);
    }
    // Region lines interleave with the program's output in program order; removing them
    // leaves exactly the recorded output.
    assert_eq!(
        without(&stdout, |l| l.starts_with('[') || l.starts_with("rdb: ") || l.starts_with("compiling ")),
        rec_out
    );
    let program_err =
        without(&stderr, |l| l.starts_with("rdb: ") || l.starts_with("for loop at") || l.starts_with("compiling"));
    assert_eq!(program_err, rec_err, "stderr:\n{stderr}");
}

#[test]
fn a_trace_from_another_binary_is_refused() {
    let tmp = scratch("other");
    let app = SampleApp::plain("minibc", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    record(&app.dir, &trace, &["target/debug/minibc", "examples/loops.bc"]);

    app.instrument();
    // A change outside any region: the program is no longer the recorded one.
    let main = app.dir.join("src/main.rs");
    let src = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, src.replace("usage: minibc PROGRAM.bc", "usage: minibc FILE.bc")).unwrap();
    tools();
    let out = run_cargo_rdb(&app.dir, &["replay", trace.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(EXIT_ERROR), "{err}");
    assert!(err.contains("is not the executable the trace was recorded from"), "{err}");
    assert!(err.contains("Only code inside rdb_begin!/rdb_end! regions"), "{err}");
    assert!(out.stdout.is_empty(), "nothing may be replayed: {}", text(&out.stdout));
}

const GUARDED_PLAIN: &str = r#"use std::sync::atomic::{AtomicU64, Ordering};

static TOTAL: AtomicU64 = AtomicU64::new(0);

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mut values = vec![0u64; 4];
    for i in 0..4u64 {
        values[i as usize] = i * i + 1;
        TOTAL.fetch_add(i, Ordering::Relaxed);
        println!("step {i} total {} mode {mode}", TOTAL.load(Ordering::Relaxed));
    }
    println!("values {values:?}");
}
"#;

const GUARDED_REGION: &str = r#"        rdb_begin!();
        // Debug code may read clocks, also in a host restarted during the replay (the
        // replayer's thread runs with the TSC disabled; the host must not inherit that).
        let _ = std::time::Instant::now();
        match mode.as_str() {
            "write" => unsafe { (values.as_ptr() as *mut u64).write_volatile(999) },
            "panic" => {
                if i == 2 {
                    panic!("region gave up at step {i}");
                }
            }
            "crash" => {
                if i == 1 {
                    unsafe { std::ptr::read_volatile(16 as *const u64) };
                }
            }
            "hang" => {
                if i == 3 {
                    loop {
                        std::hint::spin_loop();
                    }
                }
            }
            _ => {}
        }
        println!("rdb: step {i} values {:?} total {}", values, TOTAL.load(Ordering::Relaxed));
        rdb_end!();
"#;

/// Debug code that writes program memory, panics, crashes or hangs is reported, and the
/// program's replayed output is the recorded one in every case.
#[test]
fn misbehaving_debug_code_is_reported_and_never_changes_the_replay() {
    let tmp = scratch("guarded");
    let dir = tmp.path().join("guarded");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"guarded\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), GUARDED_PLAIN).unwrap();
    assert_success("cargo build", &run_cargo(&dir, &["build", "-q"]));
    let modes = ["none", "write", "panic", "crash", "hang"];
    let mut recorded = Vec::new();
    for mode in modes {
        let trace = tmp.path().join(format!("trace-{mode}"));
        recorded.push((trace.clone(), record(&dir, &trace, &["target/debug/guarded", mode])));
    }

    // Instrument: a region before the last statement of the loop body, plus the macros
    // dependency.
    let macros = repo_root().join("rdb-macros");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"guarded\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nrdb-macros = {{ path = {:?} }}\n",
            macros.display().to_string()
        ),
    )
    .unwrap();
    let anchor = "        println!(\"step {i} total {} mode {mode}\", TOTAL.load(Ordering::Relaxed));\n";
    let instrumented = GUARDED_PLAIN
        .replacen("use std::", "use rdb_macros::{rdb_begin, rdb_end};\nuse std::", 1)
        .replace(anchor, &format!("{GUARDED_REGION}{anchor}"));
    std::fs::write(dir.join("src/main.rs"), instrumented).unwrap();
    assert_success("cargo rdb build", &run_cargo_rdb(&dir, &["build"]));

    for (mode, (trace, (rec_out, rec_err))) in modes.iter().zip(&recorded) {
        let out = rdb(
            &["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/guarded", "--region-timeout", "2"],
            &dir,
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let ctx = format!("mode {mode}:\n--- stdout\n{stdout}--- stderr\n{stderr}");
        assert_eq!(&without(&stdout, |l| l.starts_with("rdb: ")), rec_out, "{ctx}");
        assert_eq!(&without(&stderr, |l| l.starts_with("rdb: ")), rec_err, "{ctx}");
        let expect_code = if *mode == "none" { 0 } else { EXIT_REGION_PROBLEMS };
        assert_eq!(out.status.code(), Some(expect_code), "{ctx}");
        let warning = match *mode {
            "none" => {
                assert_eq!(stdout.lines().filter(|l| l.starts_with("rdb: step")).count(), 4, "{ctx}");
                assert!(
                    stdout.lines().any(|l| l.starts_with("rdb: step 3 values [") && l.ends_with("total 6")),
                    "{ctx}"
                );
                continue;
            }
            "write" => "debug code wrote program memory",
            "panic" => "debug code panicked: region gave up at step 2 (at ",
            "crash" => "debug code crashed with SIGSEGV",
            _ => "did not return within 2.0 s",
        };
        assert!(stderr.contains(warning), "expected `{warning}`\n{ctx}");
        if *mode != "hang" {
            // The last hit runs after the problem (in a restarted host after the crash).
            assert!(stdout.lines().any(|l| l.starts_with("rdb: step 3 values [") && l.ends_with("total 6")), "{ctx}");
        }
        assert!(stderr.contains("src/main.rs:"), "warning names the region's source location\n{ctx}");
        if *mode == "write" {
            // The write went to a discarded copy: the program's values stay as recorded, and
            // the debug code itself saw its own write only within that call.
            assert!(rec_out.contains("values [1, 2, 5, 10]"), "{ctx}");
        }
    }
}

/// Regions in threaded code: the race sample's region runs in every thread just before the
/// racy store, and its debug-only total of overwritten updates (shared by all threads' hits)
/// equals the number of updates the recorded run reports lost.
#[test]
fn a_region_in_threads_finds_every_lost_update() {
    let tmp = scratch("race");
    let app = SampleApp::plain("race", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    let mut args = vec!["record", "--chaos", "--seed", "1", "-o", trace.to_str().unwrap(), "--"];
    args.extend_from_slice(&["target/debug/race", "3", "60"]);
    let rec = rdb(&args, &app.dir);
    let rec_out = text(&rec.stdout);
    let lost: u64 = rec_out
        .split_once('(')
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {rec_out}\n{}", text(&rec.stderr)));

    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let out = rdb(&["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/race"], &app.dir);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(without(&stdout, |l| l.starts_with("rdb: ")), rec_out);
    let reports: Vec<&str> = stdout.lines().filter(|l| l.starts_with("rdb: thread")).collect();
    let total =
        reports.last().map(|l| l.rsplit(", net ").next().unwrap().trim_end_matches(" lost so far")).unwrap_or("0");
    assert_eq!(total.parse::<u64>().unwrap(), lost, "regions saw a different loss than the program:\n{stdout}");
    if lost > 0 {
        // Several threads reported (their hits share the debug-only total).
        let threads: std::collections::BTreeSet<&str> =
            reports.iter().map(|l| l.split_whitespace().nth(2).unwrap()).collect();
        assert!(threads.len() >= 2 || reports.len() == 1, "{stdout}");
    }
}

/// A region that ends a loop body, where the closing brace has no code of its own, is never
/// run somewhere else (after the loop): the build warns and the replay says why it cannot run.
#[test]
fn a_region_ending_a_loop_body_never_runs_after_the_loop() {
    let tmp = scratch("loop-end");
    let dir = tmp.path().join("guarded");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = "[package]\nname = \"guarded\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), GUARDED_PLAIN).unwrap();
    assert_success("cargo build", &run_cargo(&dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    let (rec_out, _) = record(&dir, &trace, &["target/debug/guarded", "none"]);

    let macros = repo_root().join("rdb-macros");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("{manifest}rdb-macros = {{ path = {:?} }}\n", macros.display().to_string()),
    )
    .unwrap();
    let anchor = "        println!(\"step {i} total {} mode {mode}\", TOTAL.load(Ordering::Relaxed));\n";
    let region = "        rdb_begin!();\n        println!(\"rdb: end of step {i}\");\n        rdb_end!();\n";
    let instrumented = GUARDED_PLAIN
        .replacen("use std::", "use rdb_macros::{rdb_begin, rdb_end};\nuse std::", 1)
        .replace(anchor, &format!("{anchor}{region}"));
    std::fs::write(dir.join("src/main.rs"), instrumented).unwrap();
    let build = run_cargo_rdb(&dir, &["build"]);
    assert_success("cargo rdb build", &build);
    assert!(text(&build.stderr).contains("the region ends its block"), "{}", text(&build.stderr));

    let out = rdb(&["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/guarded"], &dir);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, rec_out, "the region must not run anywhere");
    assert!(stderr.contains("region 1 cannot run: the region ends its block"), "{stderr}");
}
