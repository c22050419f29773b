//! "Why does my binary differ?" (issue 15): when the binary rebuilt for a replay with regions
//! is not the recorded program, `cargo rdb replay` and `rdb replay --debug` say why, as far as
//! it can be known: a `use` only debug code needs left outside `#[debug_only]` (with its line
//! and the fix), a changed profile, another directory, other locked versions, and in any case
//! the first differing section and function. `rdb record` warns before recording an
//! executable that a replay with regions cannot use. The project is `tests/fixtures/counter`
//! (variants `rdb/`, and `rdb-forgot-use/` with the `use` left plain).

use std::path::Path;
use std::process::Output;

use rdb_tests::{
    assert_success, clang, describe, output, program, rdb, record, run_cargo, run_cargo_rdb, scratch, text, tools,
    SampleApp, EXIT_ERROR,
};

/// `cargo build ARGS` of the plain project, then `rdb record` of `target/<dir>/counter`.
fn record_plain(app: &SampleApp, trace: &Path, cargo_args: &[&str], dir: &str) -> Output {
    assert_success("cargo build", &run_cargo(&app.dir, cargo_args));
    let exe = format!("target/{dir}/counter");
    let out = record(&app.dir, trace, &[&exe]);
    assert_eq!(text(&out.stdout), "longest: 27 takes 111 steps\n", "{}", describe(&out));
    out
}

fn refused(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(EXIT_ERROR), "{}", describe(out));
    assert!(out.stdout.is_empty(), "nothing may be replayed: {}", describe(out));
    text(&out.stderr)
}

pub fn a_use_only_debug_code_needs_is_named_with_its_line_and_the_fix() {
    let tmp = scratch("forgot-use");
    let app = SampleApp::fixture("counter", tmp.path());
    let trace = tmp.path().join("trace");
    record_plain(&app, &trace, &["build", "-q"], "debug");
    app.overlay("rdb-forgot-use");
    tools();
    let out = run_cargo_rdb(&app.dir, &["replay", trace.to_str().unwrap()]);
    let err = refused(&out);
    let fix = "`#[debug_only] use std::sync::atomic::{AtomicUsize, Ordering};`";
    // The user's line 2 (line 1 of the stripped source rustc saw), rustc's column.
    assert!(err.contains("src/main.rs:2:25: only debug code uses `use std::sync::atomic"), "{err}");
    assert!(err.contains(fix), "{err}");
    assert!(err.contains("is not the program the trace recorded"), "{err}");
    assert!(err.contains("the first difference is in section"), "{err}");
    // `cargo rdb build` says so as a warning already, without any trace.
    let built = run_cargo_rdb(&app.dir, &["build"]);
    assert_success("cargo rdb build", &built);
    assert!(text(&built.stderr).contains("warning: src/main.rs:2:25: only debug code uses"), "{}", describe(&built));
    // With the `use` debug-only, the same trace replays with the region running.
    app.instrument();
    let out = run_cargo_rdb(&app.dir, &["replay", trace.to_str().unwrap()]);
    assert_success("cargo rdb replay", &out);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("record #8: 27 takes 111 steps (was (25, 23))"), "{}", describe(&out));
    assert!(stdout.ends_with("longest: 27 takes 111 steps\n"), "{}", describe(&out));
}

pub fn a_profile_changed_after_recording_says_to_record_again() {
    let tmp = scratch("profile-changed");
    let app = SampleApp::fixture("counter", tmp.path());
    let trace = tmp.path().join("trace");
    // cargo's default release profile has no debug information: regions still run (a twin
    // build with it describes the recorded one), so nothing is said before recording.
    let rec = record_plain(&app, &trace, &["build", "-q", "--release"], "release");
    let warning = text(&rec.stderr);
    let manifest = app.dir.join("Cargo.toml");
    assert!(!warning.contains("rdb: warning"), "{warning}");
    // An unoptimized build without debug information has no twin: said before recording.
    let toml = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, format!("{toml}\n[profile.dev]\ndebug = false\n")).unwrap();
    let dev_trace = tmp.path().join("dev-trace");
    let dev = record_plain(&app, &dev_trace, &["build", "-q"], "debug");
    let warning = text(&dev.stderr);
    assert!(warning.contains("is an unoptimized Rust executable with no debug information"), "{warning}");
    assert!(
        warning.contains(&format!("add `debug = \"full\"` under `[profile.dev]` in {}", manifest.display())),
        "{warning}"
    );
    let before_run = warning.find("rdb: warning").unwrap();
    assert!(warning.find("rdb: recorded").is_some_and(|i| i > before_run), "the warning comes first: {warning}");
    std::fs::write(&manifest, &toml).unwrap();
    // Changing the release profile after the recording makes another binary.
    let toml = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, format!("{toml}\n[profile.release]\ndebug = \"full\"\n")).unwrap();
    assert_success("cargo build --release", &run_cargo(&app.dir, &["build", "-q", "--release"]));
    let out =
        output(rdb(&["replay", trace.to_str().unwrap(), "--debug", "target/release/counter"]).current_dir(&app.dir));
    let err = refused(&out);
    assert!(err.contains("is not the executable the trace was recorded from"), "{err}");
    assert!(err.contains(&format!("the `[profile.release]` settings of {} changed", manifest.display())), "{err}");
    assert!(err.contains("they were cargo's defaults, they are now `debug = \"full\"`"), "{err}");
    assert!(
        err.contains("the recorded program has no debug information, this one has full debug information"),
        "{err}"
    );
    assert!(err.contains("record again"), "{err}");
}

pub fn another_directory_and_other_locked_versions_are_named() {
    let tmp = scratch("moved");
    let app = SampleApp::fixture("counter", tmp.path());
    let trace = tmp.path().join("trace");
    record_plain(&app, &trace, &["build", "-q"], "debug");
    app.instrument();
    tools();
    // The same sources in another directory.
    let moved = tmp.path().join("elsewhere");
    std::fs::rename(&app.dir, &moved).unwrap();
    let out = run_cargo_rdb(&moved, &["replay", trace.to_str().unwrap()]);
    let err = refused(&out);
    assert!(
        err.contains(&format!(
            "the recorded program was built in {}, this one in {}",
            app.dir.display(),
            moved.display()
        )),
        "{err}"
    );
    // Back in place, with the package's version (and so its lock entry) changed.
    std::fs::rename(&moved, &app.dir).unwrap();
    let manifest = app.dir.join("Cargo.toml");
    let toml = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, toml.replace("version = \"0.1.0\"", "version = \"0.2.0\"")).unwrap();
    let out = run_cargo_rdb(&app.dir, &["replay", trace.to_str().unwrap()]);
    let err = refused(&out);
    assert!(err.contains("locks other versions than when the program was recorded: counter 0.1.0 → 0.2.0"), "{err}");
}

pub fn the_first_differing_function_of_a_c_program_is_named() {
    let dir = scratch("c-differs");
    let source = program("support/print_value.c");
    let exe = clang(&source, &dir.path().join("prog"), &["-O0", "-g", "-DVALUE=1"], &[]);
    let trace = dir.path().join("trace");
    record(dir.path(), &trace, &[exe.to_str().unwrap()]);
    let rebuilt = clang(&source, &dir.path().join("rebuilt"), &["-O2", "-g", "-DVALUE=1"], &[]);
    let out = output(&mut rdb(&["replay", trace.to_str().unwrap(), "--debug", rebuilt.to_str().unwrap()]));
    let err = refused(&out);
    assert!(err.contains("the first difference is in section `.text`"), "{err}");
    assert!(err.contains("in `main`"), "{err}");
}

pub fn cargo_rdb_replay_of_a_missing_trace_fails_before_building() {
    let tmp = scratch("missing-trace");
    let app = SampleApp::fixture("counter", tmp.path());
    app.instrument();
    tools();
    for (trace, says) in [
        ("no-such-trace", "no trace named no-such-trace here or in the trace root".to_string()),
        ("./no/such/dir", "./no/such/dir: not an rdb trace directory".to_string()),
    ] {
        let out = run_cargo_rdb(&app.dir, &["replay", trace]);
        let err = refused(&out);
        assert!(err.contains(&says), "{err}");
        assert!(!err.contains("Building"), "nothing is built: {err}");
        assert!(!app.dir.join("target").exists(), "nothing is built: {err}");
    }
}
