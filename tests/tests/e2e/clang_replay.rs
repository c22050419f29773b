//! C replay debugging end to end (issue 6): build a C program with plain
//! clang-14, record it once with `rdb record`, add debug regions, rebuild with
//! `rdb-clang`, and replay with `rdb replay --debug`: the regions print the
//! program's real state and the program's output is the recorded one.

use std::path::Path;
use std::process::Output;

use rdb_tests::{copy_files as copy_dir, output, program, rdb, rdb_clang, repo_root, run_ok, scratch, text, timed};

/// `program ARGS` in `dir` under a timeout.
fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    output(timed(600, program).args(args).current_dir(dir))
}

fn ok(out: Output, what: &str) -> Output {
    rdb_tests::assert_success(what, &out);
    out
}

fn rdb_in(dir: &Path, args: &[&str]) -> Output {
    output(rdb(args).current_dir(dir))
}

fn rdb_clang_in(dir: &Path, args: &[&str]) {
    run_ok("rdb-clang", timed(600, rdb_clang()).args(args).current_dir(dir));
}

/// Records `prog args` (built from the plain sources) into `dir/trace`;
/// returns the recording's output.
fn record(dir: &Path, prog: &[&str]) -> Output {
    rdb_tests::record(dir, Path::new("trace"), prog)
}

pub fn list_region_shows_the_lost_tail_on_replay() {
    let tmp = scratch("c");
    let dir = tmp.path();
    let app = repo_root().join("sample-apps/c/list");
    copy_dir(&app.join("plain"), dir);
    ok(run(dir, "clang-14", &["-O0", "-g", "list.c", "-o", "list"]), "clang-14");
    let recorded = record(dir, &["./list", "5", "1", "9", "3", "7"]);
    assert_eq!(text(&recorded.stdout), "3 numbers: 1 3 7\n");
    copy_dir(&app.join("instrumented"), dir);
    rdb_clang_in(dir, &["-O0", "-g", "list.c", "dump.rdb.c", "-o", "list"]);
    let replay = ok(rdb_in(dir, &["replay", "trace", "--debug", "./list"]), "rdb replay --debug");
    assert_eq!(text(&replay.stdout), "rdb: list shrank from 3 to 2 after inserting 3: 1 3 \n3 numbers: 1 3 7\n");
}

/// The rdB paper's case study (§6) on minibc: the recorded run crashes; on
/// replay the regions show the `for` loop with an empty condition and the
/// BRANCH that finds an empty stack.
pub fn minibc_regions_explain_the_recorded_crash() {
    let tmp = scratch("c");
    let dir = tmp.path();
    let app = repo_root().join("sample-apps/c/minibc");
    copy_dir(&app.join("plain"), dir);
    ok(run(dir, "clang-14", &["-O0", "-g", "minibc.c", "-o", "minibc"]), "clang-14");
    let program = "for (i = 0; ; i = i + 1) { if (i > 2) break; print i }";
    let recorded = record(dir, &["./minibc", program]);
    assert!(!recorded.status.success(), "the bug crashes minibc");
    copy_dir(&app.join("instrumented"), dir);
    rdb_clang_in(dir, &["-O0", "-g", "minibc.c", "-o", "minibc"]);
    let replay = rdb_in(dir, &["replay", "trace", "--debug", "./minibc"]);
    assert_eq!(
        text(&replay.stdout),
        "rdb: for loop ` (i = 0; ; i = i + 1)` compiles to code 2..9\nrdb: pc=2 BRANCH 17 stack depth 0\n",
        "{}",
        text(&replay.stderr)
    );
}

/// A real program: Lua 5.4 (about 30k lines, from PyPI's lupa) built at -O2
/// with a region in the interpreter's OP_CALL, whose argument lives in a
/// register there. 200,000 region hits on replay.
pub fn lua_region_in_the_hot_loop_runs_on_replay() {
    let tmp = scratch("c");
    let root = tmp.path();
    let setup = repo_root().join("bench/lua-setup.sh");
    ok(run(root, "bash", &[setup.to_str().unwrap(), root.to_str().unwrap()]), "lua-setup.sh");
    let dir = root.join("src");
    let mut sources: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".c"))
        .collect();
    sources.sort();
    let objects: Vec<String> = sources.iter().map(|s| s.replace(".c", ".o")).collect();
    let build = |compiler: &str| {
        for (s, o) in sources.iter().zip(&objects) {
            ok(run(&dir, compiler, &["-O2", "-g", "-std=gnu99", "-DLUA_USE_LINUX", "-c", s, "-o", o]), compiler);
        }
        let mut link: Vec<&str> = objects.iter().map(String::as_str).collect();
        link.extend(["-lm", "-ldl", "-o", "lua"]);
        ok(run(&dir, compiler, &link), compiler);
    };
    let instrumented = std::fs::read(dir.join("lvm.c")).unwrap();
    std::fs::copy(root.join("plain-lvm.c"), dir.join("lvm.c")).unwrap();
    build("clang-14");
    std::fs::copy(program("support/calls.lua"), dir.join("calls.lua")).unwrap();
    let recorded = record(&dir, &["./lua", "calls.lua"]);
    assert_eq!(text(&recorded.stdout), "200000\n");
    std::fs::write(dir.join("lvm.c"), instrumented).unwrap();
    build(rdb_clang().to_str().unwrap());
    let replay = ok(rdb_in(&dir, &["replay", "trace", "--debug", "./lua"]), "rdb replay --debug");
    assert_eq!(
        text(&replay.stdout),
        "rdb: 100000 Lua calls, this one with 1 arguments\nrdb: 200000 Lua calls, this one with 1 arguments\n200000\n"
    );
}
