//! C replay debugging end to end (issue 6): build a C program with plain
//! clang-14, record it once with `rdb record`, add debug regions, rebuild with
//! `rdb-clang`, and replay with `rdb replay --debug`: the regions print the
//! program's real state and the program's output is the recorded one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use rdb_tests::{cargo, repo_root};

/// `target/debug` of this workspace, with `rdb`, `rdb-debug-host` and `rdb-clang` built.
fn tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let st = cargo()
            .current_dir(repo_root())
            .args(["build", "-q", "-p", "rdb-cli", "-p", "rdb-host", "-p", "rdb-codegen-llvm", "--bins"])
            .status()
            .expect("cargo runs");
        assert!(st.success(), "building rdb failed");
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target"));
        target.join("debug")
    })
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg("600")
        .arg(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("spawn");
    out
}

fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn rdb(dir: &Path, args: &[&str]) -> Output {
    run(dir, tools().join("rdb").to_str().unwrap(), args)
}

fn rdb_clang(dir: &Path, args: &[&str]) -> Output {
    ok(run(dir, tools().join("rdb-clang").to_str().unwrap(), args), "rdb-clang")
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Records `prog args` (built from the plain sources) into `dir/trace`;
/// returns the recording's output.
fn record(dir: &Path, prog: &[&str]) -> Output {
    let mut args = vec!["record", "-o", "trace", "--"];
    args.extend_from_slice(prog);
    let out = rdb(dir, &args);
    assert!(text(&out.stderr).contains("rdb: recorded"), "recording failed:\n{}", text(&out.stderr));
    out
}

#[test]
fn list_region_shows_the_lost_tail_on_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let app = repo_root().join("sample-apps/c/list");
    copy_dir(&app.join("plain"), dir);
    ok(run(dir, "clang-14", &["-O0", "-g", "list.c", "-o", "list"]), "clang-14");
    let recorded = record(dir, &["./list", "5", "1", "9", "3", "7"]);
    assert_eq!(text(&recorded.stdout), "3 numbers: 1 3 7\n");
    copy_dir(&app.join("instrumented"), dir);
    rdb_clang(dir, &["-O0", "-g", "list.c", "dump.rdb.c", "-o", "list"]);
    let replay = ok(rdb(dir, &["replay", "trace", "--debug", "./list"]), "rdb replay --debug");
    assert_eq!(text(&replay.stdout), "rdb: list shrank from 3 to 2 after inserting 3: 1 3 \n3 numbers: 1 3 7\n");
}

/// The rdB paper's case study (§6) on minibc: the recorded run crashes; on
/// replay the regions show the `for` loop with an empty condition and the
/// BRANCH that finds an empty stack.
#[test]
fn minibc_regions_explain_the_recorded_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let app = repo_root().join("sample-apps/c/minibc");
    copy_dir(&app.join("plain"), dir);
    ok(run(dir, "clang-14", &["-O0", "-g", "minibc.c", "-o", "minibc"]), "clang-14");
    let program = "for (i = 0; ; i = i + 1) { if (i > 2) break; print i }";
    let recorded = record(dir, &["./minibc", program]);
    assert!(!recorded.status.success(), "the bug crashes minibc");
    copy_dir(&app.join("instrumented"), dir);
    rdb_clang(dir, &["-O0", "-g", "minibc.c", "-o", "minibc"]);
    let replay = rdb(dir, &["replay", "trace", "--debug", "./minibc"]);
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
#[test]
fn lua_region_in_the_hot_loop_runs_on_replay() {
    let tmp = tempfile::tempdir().unwrap();
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
    std::fs::write(
        dir.join("calls.lua"),
        "local function f(x) return x + 1 end\nlocal s = 0\nfor i = 1, 200000 do s = f(s) end\nprint(s)\n",
    )
    .unwrap();
    let recorded = record(&dir, &["./lua", "calls.lua"]);
    assert_eq!(text(&recorded.stdout), "200000\n");
    std::fs::write(dir.join("lvm.c"), instrumented).unwrap();
    build(tools().join("rdb-clang").to_str().unwrap());
    let replay = ok(rdb(&dir, &["replay", "trace", "--debug", "./lua"]), "rdb replay --debug");
    assert_eq!(
        text(&replay.stdout),
        "rdb: 100000 Lua calls, this one with 1 arguments\nrdb: 200000 Lua calls, this one with 1 arguments\n200000\n"
    );
}
