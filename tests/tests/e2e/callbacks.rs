//! Event callbacks (issue 11): a program is recorded from a plain build, then replayed with
//! `cargo rdb replay` of a variant that adds `#[debug_only]` callbacks. The callbacks see the
//! recorded events, print in program order, and the program's own output and binary stay the
//! recorded ones.

use std::path::Path;
use std::process::Output;

use rdb_tests::{assert_success, lines_where, output, run_cargo, scratch, text, timed, tools, SampleApp};

/// A fixture app recorded from its plain build, with the trace's path and the recorded stdout.
struct Recorded {
    app: SampleApp,
    trace: std::path::PathBuf,
    stdout: String,
    _tmp: tempfile::TempDir,
}

fn record_plain(fixture: &str, args: &[&str]) -> Recorded {
    let tmp = scratch(fixture);
    let app = SampleApp::fixture(fixture, tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    let binary = app.dir.join("target/debug").join(fixture);
    let mut prog = vec![binary.to_str().unwrap()];
    prog.extend_from_slice(args);
    let out = rdb_tests::record(&app.dir, &trace, &prog);
    Recorded { app, trace, stdout: text(&out.stdout), _tmp: tmp }
}

/// `cargo rdb replay TRACE` in `dir` with rdb's tools on `PATH`.
fn cargo_rdb_replay(dir: &Path, trace: &Path) -> Output {
    let path = format!("{}:{}", tools().display(), std::env::var("PATH").unwrap_or_default());
    output(
        timed(600, tools().join("cargo-rdb"))
            .args(["rdb", "replay", "-q", trace.to_str().unwrap()])
            .current_dir(dir)
            .env("PATH", path)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR"),
    )
}

/// The main binary `cargo rdb build` made is the recorded one.
fn assert_same_binary(app: &SampleApp, name: &str) {
    assert_eq!(
        std::fs::read(app.dir.join("target/rdb/debug").join(name)).unwrap(),
        std::fs::read(app.dir.join("target/debug").join(name)).unwrap(),
        "the main binary is not the recorded one"
    );
}

/// Every callback kind of the `events` fixture, in program order: calls of a program function
/// with typed arguments, returns with the value, the C library's `write` by symbol with its
/// register arguments, the `write` system call before and after (the one that wrote a NUL byte
/// named by its function and line), writes to a static through a debug register, and a local
/// variable watched with `rdb::watch` from a region.
pub fn callbacks_see_calls_returns_writes_and_accesses_in_program_order() {
    let rec = record_plain("events", &[]);
    rec.app.instrument();
    let out = cargo_rdb_replay(&rec.app.dir, &rec.trace);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "replay failed:\n{stdout}\n{stderr}");
    assert_same_binary(&rec.app, "events");
    let source = std::fs::read_to_string(rec.app.dir.join("src/main.rs")).unwrap();
    let line_of = |text: &str| source.lines().position(|l| l.contains(text)).unwrap() + 1;
    let expected = format!(
        "\
[rdb] push(3) after 0 steps
[rdb] push(4) after 1 steps
[rdb] push(5) after 2 steps
[rdb] pop() = Some(5)
[rdb] pop() = Some(4)
[rdb] pop() = Some(3)
[rdb] pop() = None
[rdb] write(1, _, 18) called
[rdb] before write #1
sum 12 in 7 steps
[rdb] write #1 fd=Some(1) result=Some(18) data=\"sum 12 in 7 steps\\n\"
[rdb] AUDITED 0 -> 10 (changed: true) at events::bank::transfer line 8
[rdb] AUDITED 10 -> 42 (changed: true) at events::bank::transfer line 8
[rdb] write(1, _, 11) called
[rdb] before write #2
audited 42
[rdb] write #2 fd=Some(1) result=Some(11) data=\"audited 42\\n\"
[rdb] write(1, _, 9) called
[rdb] before write #3
total\x0012
[rdb] write #3 fd=Some(1) result=Some(9) data=\"total\\012\\n\"
[rdb] NUL written by events::write_record line {}
[rdb] write(1, _, 5) called
[rdb] before write #4
done
[rdb] write #4 fd=Some(1) result=Some(5) data=\"done\\n\"
",
        line_of("out.write_all(&record)")
    );
    assert_eq!(stdout, expected, "stderr:\n{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), rec.stdout);
    // `rdb::watch(&machine.steps)`: each change, with the writing function and line (in the
    // user's file: the instrumented source's own lines).
    let watch =
        format!("rdb: watch set at {}:{}:5: ", rec.app.dir.join("src/main.rs").display(), line_of("rdb::watch("));
    let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&watch)).collect();
    assert!(reports.len() >= 7, "{stderr}");
    let vm = rec.app.dir.join("src/vm.rs").display().to_string();
    for (i, report) in reports[..7].iter().enumerate() {
        let function = if i < 3 { "events::vm::Vm::push (" } else { "events::vm::Vm::pop (" };
        let line = if i < 3 { 15 } else { 19 };
        assert!(report.contains(&format!("(8 bytes) changed {i} -> {}, thread ", i + 1)), "{report}");
        assert!(report.ends_with(&format!("at {function}{vm}:{line}:9)")), "{report}");
    }
}

/// A callback whose parameters do not fit the function it watches is a compile error of the
/// debug module, rustc-style, pointing at the callback's attribute.
pub fn a_callback_with_the_wrong_signature_is_rejected_rustc_style() {
    let tmp = scratch("wrong-signature");
    let app = SampleApp::fixture("events", tmp.path());
    app.overlay("rdb");
    app.overlay("rdb-wrong-signature");
    let out = rdb_tests::run_cargo_rdb(&app.dir, &["build"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "the build succeeded:\n{stderr}");
    assert!(
        stderr.contains("error[E0277]: `for<'a> fn(&'a Vm, i32) {pushed}` cannot be a callback of a function taking `(&mut Vm, i64)`"),
        "{stderr}"
    );
    // The attribute's line in the user's file.
    let attribute = std::fs::read_to_string(app.dir.join("src/main.rs"))
        .unwrap()
        .lines()
        .position(|l| l.starts_with("#[on_call(crate::vm::Vm::push)]"))
        .unwrap()
        + 1;
    assert!(stderr.contains(&format!("{}:{attribute}:", app.dir.join("src/main.rs").display())), "{stderr}");
    assert!(stderr.contains("a callback takes no arguments, or the function's arguments in order"), "{stderr}");
}
