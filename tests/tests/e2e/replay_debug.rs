//! End-to-end replay debugging (issue 4): record a plain build once, add regions, rebuild with
//! `cargo rdb build`, replay with `rdb replay --debug` / `cargo rdb replay`, and check that
//! the regions print the program's real state while the program's own output stays exactly
//! the recorded one, whatever the debug code does.

use std::path::Path;

use rdb_tests::{
    assert_success, lines_where, program_stderr, rdb_in, run_cargo, run_cargo_rdb, scratch, text, tools, SampleApp,
    EXIT_ERROR, EXIT_REGION_PROBLEMS,
};

/// Records `prog args` and returns (recorded stdout, the program's stderr).
fn record(dir: &Path, trace: &Path, prog: &[&str]) -> (String, String) {
    let out = rdb_tests::record(dir, trace, prog);
    (text(&out.stdout), program_stderr(&out))
}

fn without(s: &str, region_line: impl Fn(&str) -> bool) -> String {
    lines_where(s, |l| !region_line(l))
}

pub fn minibc_regions_show_branch_popping_an_empty_stack() {
    let tmp = scratch("debug-minibc");
    let app = SampleApp::plain("minibc", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    let (rec_out, rec_err) = record(&app.dir, &trace, &["target/debug/minibc", "examples/loops.bc"]);
    assert!(rec_err.contains("stack underflow"), "the sample's bug did not show:\n{rec_err}");

    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let out = rdb_in(&app.dir, &["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/minibc"]);
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

/// minibc's VM loop in a release build of cargo's default profile: at the region, the DWARF
/// has no location for `pc` (LLVM drops it where the loop's first iteration, holding it as the
/// constant 0, joins the later ones, holding it in `r12`), but one register holds it on every
/// path into the loop's top (zeroed before the loop, copied at the end of each iteration), and
/// no statement before the region changes it: every hit prints what the dev build's replay
/// prints. `cond`, a parameter of `for_loop` that its inlined copy dropped, is reported as such
/// with its own type (not as the `if let Some(cond)` binding of an earlier sibling block), and
/// the replay reports that region instead of running it.
pub fn minibc_release_regions_read_the_vm_counter_the_dwarf_loses_at_the_loop_join() {
    let tmp = scratch("release-minibc");
    let app = SampleApp::plain("minibc", tmp.path());
    app.default_release_profile();
    let program = ["examples/loops.bc"];
    let mut traces = Vec::new();
    for (profile, dir) in [(None, "debug"), (Some("--release"), "release")] {
        let mut build = vec!["build", "-q"];
        build.extend(profile);
        assert_success("cargo build", &run_cargo(&app.dir, &build));
        let trace = tmp.path().join(format!("trace-{dir}"));
        let binary = format!("target/{dir}/minibc");
        record(&app.dir, &trace, &[binary.as_str(), program[0]]);
        traces.push((profile, dir, trace));
    }
    app.instrument();
    app.default_release_profile();
    let mut steps = Vec::new();
    for (profile, dir, trace) in &traces {
        let mut build = vec!["build"];
        build.extend(*profile);
        let built = run_cargo_rdb(&app.dir, &build);
        assert_success("cargo rdb build", &built);
        let binary = format!("target/rdb/{dir}/minibc");
        let out = rdb_in(&app.dir, &["replay", trace.to_str().unwrap(), "--debug", &binary]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        if profile.is_none() {
            assert_eq!(out.status.code(), Some(0), "dev replay:\n{stdout}\n{stderr}");
        } else {
            let warnings = text(&built.stderr);
            assert!(!warnings.contains("`pc`"), "{warnings}");
            assert!(
                warnings.contains("variable `cond` is optimized out")
                    && warnings.contains("it is a parameter of a copy inlined into another function"),
                "{warnings}"
            );
            let arguments =
                std::fs::read_to_string(app.dir.join("target/rdb/release/minibc.rdb-arguments.json")).unwrap();
            assert!(arguments.contains("core::option::Option<&minibc::parser::Expr>"), "{arguments}");
            // Only `for_loop`'s region (its `cond`) cannot run.
            assert_eq!(out.status.code(), Some(EXIT_REGION_PROBLEMS), "release replay:\n{stdout}\n{stderr}");
            for line in stderr.lines().filter(|l| l.contains("could not run")) {
                assert!(line.contains("compiler.rs") && line.contains("`cond`"), "{line}\n{stderr}");
            }
        }
        steps.push(lines_where(&stdout, |l| l.starts_with('[')));
    }
    assert!(steps[0].lines().count() > 20, "too few VM steps:\n{}", steps[0]);
    assert_eq!(steps[1], steps[0], "the release build's VM steps differ from the dev build's");
}

pub fn a_trace_from_another_binary_is_refused() {
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
    assert!(err.contains("is not the program the trace recorded"), "{err}");
    assert!(err.contains("the first difference is in section"), "{err}");
    assert!(err.contains("only code inside rdb_begin!/rdb_end! regions"), "{err}");
    assert!(out.stdout.is_empty(), "nothing may be replayed: {}", text(&out.stdout));
}

/// Debug code that writes program memory, panics, crashes or hangs is reported, and the
/// program's replayed output is the recorded one in every case.
pub fn misbehaving_debug_code_is_reported_and_never_changes_the_replay() {
    let tmp = scratch("guarded");
    let app = SampleApp::fixture("guarded", tmp.path());
    let dir = app.dir.clone();
    assert_success("cargo build", &run_cargo(&dir, &["build", "-q"]));
    let modes = ["none", "write", "panic", "crash", "hang"];
    let mut recorded = Vec::new();
    for mode in modes {
        let trace = tmp.path().join(format!("trace-{mode}"));
        recorded.push((trace.clone(), record(&dir, &trace, &["target/debug/guarded", mode])));
    }

    // Instrument: a region before the last statement of the loop body, plus the macros
    // dependency.
    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&dir, &["build"]));

    for (mode, (trace, (rec_out, rec_err))) in modes.iter().zip(&recorded) {
        let out = rdb_in(
            &dir,
            &["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/guarded", "--region-timeout", "2"],
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
pub fn a_region_in_threads_finds_every_lost_update() {
    let tmp = scratch("race");
    let trace = tmp.path().join("trace");
    let (app, rec) = SampleApp::race_recorded_with_chaos(tmp.path(), &trace);
    let rec_out = text(&rec.stdout);
    let lost: u64 = rec_out
        .split_once('(')
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {rec_out}\n{}", text(&rec.stderr)));

    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let out = rdb_in(&app.dir, &["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/race"]);
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

/// A region that ends a loop body, where the closing brace has no code of its own (a dev
/// build: the body's last statement jumps back to the loop's head), runs where that statement's
/// code ends, once per iteration, and never after the loop.
pub fn a_region_ending_a_loop_body_runs_at_the_end_of_each_iteration() {
    let tmp = scratch("loop-end");
    let app = SampleApp::fixture("guarded", tmp.path());
    let dir = app.dir.clone();
    assert_success("cargo build", &run_cargo(&dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    let (rec_out, _) = record(&dir, &trace, &["target/debug/guarded", "none"]);

    // A region after the last statement of the loop body.
    app.overlay("rdb-loop-end");
    let build = run_cargo_rdb(&dir, &["build"]);
    assert_success("cargo rdb build", &build);
    assert!(!text(&build.stderr).contains("warning"), "{}", text(&build.stderr));

    let out = rdb_in(&dir, &["replay", trace.to_str().unwrap(), "--debug", "target/rdb/debug/guarded"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // Each step's region line right after the step's own line (its last statement).
    let mut expected = String::new();
    for line in rec_out.split_inclusive('\n') {
        expected.push_str(line);
        if let Some(step) = line.strip_prefix("step ") {
            expected.push_str(&format!("rdb: end of step {}\n", step.split(' ').next().unwrap()));
        }
    }
    assert_eq!(stdout, expected, "{stderr}");
}
