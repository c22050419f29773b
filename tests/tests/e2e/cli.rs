//! The command lines as a newcomer meets them (issue 15): versions, help, and the progress
//! line of `cargo rdb build` (on a terminal only).

use rdb_tests::{
    assert_success, describe, output, rdb, rdb_clang, run_cargo_rdb, scratch, text, timed, tools, SampleApp,
};

pub fn versions_and_help_say_what_each_tool_is() {
    tools();
    let tmp = scratch("cli-help");
    let version = run_cargo_rdb(tmp.path(), &["--version"]);
    assert_success("cargo rdb --version", &version);
    assert_eq!(text(&version.stdout), format!("cargo-rdb {}\n", env!("CARGO_PKG_VERSION")));
    let help = run_cargo_rdb(tmp.path(), &["--help"]);
    assert_success("cargo rdb --help", &help);
    let help = text(&help.stdout);
    assert!(help.contains("rdb_begin!();") && help.contains("#[debug_only]") && help.contains("Examples:"), "{help}");

    let clang = output(timed(60, rdb_clang()).arg("--help"));
    assert_success("rdb-clang --help", &clang);
    let help = text(&clang.stdout);
    assert!(help.starts_with("rdb-clang: clang-14 for C programs with rdb debug regions"), "{help}");
    assert!(help.contains("Every other argument goes to clang-14 unchanged"), "{help}");

    let top = output(&mut rdb(&["--help"]));
    assert!(text(&top.stdout).contains("Examples:\n  rdb record -- ./app"), "{}", describe(&top));
    let replay = output(&mut rdb(&["replay", "--help"]));
    let help = text(&replay.stdout);
    assert!(help.contains("Exit status: 0 the replay completed") && help.contains("/dev/null"), "{help}");
    let record = output(&mut rdb(&["record", "--help"]));
    assert!(
        text(&record.stdout).contains("Usage: rdb record [OPTIONS] [--] <PROG> [ARGS]..."),
        "{}",
        describe(&record)
    );
}

pub fn cargo_rdb_build_shows_progress_on_a_terminal_only() {
    let tmp = scratch("cli-progress");
    let app = SampleApp::fixture("counter", tmp.path());
    app.instrument();
    let cargo_rdb = tools().join("cargo-rdb");
    // Under `script`, cargo rdb's stderr is a terminal; the line shows after 100 ms instead of
    // a second, so that even a fast build draws it.
    let command = format!("{} rdb build", cargo_rdb.display());
    let out = output(
        timed(600, "script")
            .args(["-qefc", &command, "/dev/null"])
            .current_dir(&app.dir)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RDB_NO_PROGRESS")
            .env("RDB_PROGRESS_DELAY_MS", "100"),
    );
    assert_success("cargo rdb build on a terminal", &out);
    let screen = text(&out.stdout);
    assert!(screen.contains("building: ") && screen.contains("compiled (last: "), "{screen}");
    assert!(screen.contains("\x1b[2K"), "the line is cleared: {screen}");
    assert!(screen.contains("Finished `counter` with 1 debug region"), "{screen}");
    // Not a terminal: no progress line, cargo's own messages.
    std::fs::remove_dir_all(app.dir.join("target")).unwrap();
    let out = run_cargo_rdb(&app.dir, &["build"]);
    assert_success("cargo rdb build", &out);
    let err = text(&out.stderr);
    assert!(!err.contains("building: ") && err.contains("Compiling counter"), "{err}");
}

/// The README's first command: the demo reaches its punchline in under 30 lines of output and
/// shows the byte-identity check.
pub fn the_demo_reaches_its_punchline_in_under_30_lines() {
    tools();
    let out = output(
        timed(1200, "bash")
            .arg(rdb_tests::repo_root().join("scripts/demo.sh"))
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env("TMPDIR", std::env::temp_dir()),
    );
    assert_success("scripts/demo.sh", &out);
    let screen = text(&out.stdout) + &text(&out.stderr);
    let lines: Vec<&str> = screen.lines().collect();
    let punchline = lines.iter().position(|l| l.contains("the punchline")).expect("a punchline");
    assert!(punchline < 30, "the punchline is on line {}:\n{screen}", punchline + 1);
    assert!(lines[punchline - 2].ends_with("BranchIfFalse(33) stack=[]"), "{screen}");
    let hashes: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("target/") && l.contains("minibc ("))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(hashes.len() == 2 && hashes[0] == hashes[1], "the two builds' hashes, side by side:\n{screen}");
    // The demo works in a temporary directory it names; remove it.
    let work = screen.split("(work directory: ").nth(1).and_then(|r| r.split(';').next()).expect("work directory");
    assert!(work.contains("rdb-demo."), "{work}");
    std::fs::remove_dir_all(work).unwrap();
}
