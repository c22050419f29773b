//! rdb-clang end to end: byte-identical objects and executables, the debug
//! module, diagnostics. Each test works in its own temporary directory and
//! compares against clang-14 run on the stripped source at the same path.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rdb_clang() -> &'static str {
    env!("CARGO_BIN_EXE_rdb-clang")
}

fn repo() -> PathBuf {
    rdb_tests::repo_root()
}

/// A file of `tests/data/`.
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// `program ARGS` in `dir`, under a timeout.
fn command(dir: &Path, program: &str, args: &[&str]) -> Command {
    let mut command = rdb_tests::timed(600, program);
    command.args(args).current_dir(dir);
    command
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    let out = command(dir, program, args).output().expect("spawn");
    assert!(
        out.status.success(),
        "`{program} {}` failed: {}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn same(a: &Path, b: &Path) {
    let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert!(x == y, "{} and {} differ ({} vs {} bytes)", a.display(), b.display(), x.len(), y.len());
}

/// Builds `app` from its instrumented sources with rdb-clang, then from its
/// plain sources with clang-14 in the same directory, and compares: every
/// object (separate compile), and the executables of the separate and the
/// one-step builds.
fn identity(app: &str, main_source: &str, debug_sources: &[&str], flags: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("src");
    let src = repo().join("sample-apps/c").join(app);
    copy_dir(&src.join("instrumented"), &dir);
    let obj = main_source.replace(".c", ".o");
    // Separate compile and link.
    let mut a: Vec<&str> = flags.to_vec();
    a.extend(["-c", main_source, "-o", &obj]);
    run(&dir, rdb_clang(), &a);
    let mut l = vec![obj.as_str()];
    let dobjs: Vec<String> = debug_sources.iter().map(|d| d.replace(".c", ".o")).collect();
    for (d, o) in debug_sources.iter().zip(&dobjs) {
        run(&dir, rdb_clang(), &["-c", d, "-o", o]);
        l.push(o);
    }
    l.extend(["-o", "app"]);
    run(&dir, rdb_clang(), &l);
    // One-step compile and link.
    let mut one: Vec<&str> = flags.to_vec();
    one.push(main_source);
    one.extend(debug_sources.iter().copied());
    one.extend(["-o", "app1"]);
    run(&dir, rdb_clang(), &one);
    for f in ["app.rdb.so", "app.rdb-functions.json", "app.rdb-arguments.json", "app1.rdb.so"] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    rdb_descriptors::load_functions(&dir.join("app.rdb-functions.json")).unwrap();
    rdb_descriptors::load_arguments(&dir.join("app.rdb-arguments.json")).unwrap();
    // The reference: clang-14 on the plain source at the same path.
    let out = tmp.path().join("rdb");
    std::fs::create_dir(&out).unwrap();
    for f in [obj.as_str(), "app", "app1"] {
        std::fs::rename(dir.join(f), out.join(f)).unwrap();
    }
    std::fs::copy(src.join("plain").join(main_source), dir.join(main_source)).unwrap();
    let mut a: Vec<&str> = flags.to_vec();
    a.extend(["-c", main_source, "-o", &obj]);
    run(&dir, "clang-14", &a);
    run(&dir, "clang-14", &[obj.as_str(), "-o", "app"]);
    let mut one: Vec<&str> = flags.to_vec();
    one.extend([main_source, "-o", "app1"]);
    run(&dir, "clang-14", &one);
    same(&out.join(&obj), &dir.join(&obj));
    same(&out.join("app"), &dir.join("app"));
    same(&out.join("app1"), &dir.join("app1"));
}

#[test]
fn list_identical_at_o0() {
    identity("list", "list.c", &["dump.rdb.c"], &["-O0", "-g"]);
}

#[test]
fn list_identical_at_o2_without_g() {
    identity("list", "list.c", &["dump.rdb.c"], &["-O2"]);
}

#[test]
fn minibc_identical_at_o0_and_o2() {
    identity("minibc", "minibc.c", &[], &["-O0", "-g"]);
    identity("minibc", "minibc.c", &[], &["-O2", "-g"]);
}

#[test]
fn plain_sources_are_the_stripped_instrumented_ones() {
    for (app, file) in [("list", "list.c"), ("minibc", "minibc.c")] {
        let dir = repo().join("sample-apps/c").join(app);
        let inst = std::fs::read_to_string(dir.join("instrumented").join(file)).unwrap();
        let plain = std::fs::read_to_string(dir.join("plain").join(file)).unwrap();
        let a = rdb_codegen_llvm::source::analyse(Path::new(file), &inst).unwrap();
        assert_eq!(a.stripped, plain, "{app}");
    }
}

#[test]
fn instrumented_sources_build_with_plain_clang() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), rdb_clang(), &["--print-include-dir"]);
    let inc = String::from_utf8(out.stdout).unwrap();
    let inc = inc.trim_end();
    assert!(Path::new(inc).join("rdb.h").exists());
    for (app, file) in [("list", "list.c"), ("minibc", "minibc.c")] {
        let src = repo().join("sample-apps/c").join(app).join("instrumented").join(file);
        run(
            tmp.path(),
            "clang-14",
            &["-Wall", "-Werror", "-Wno-unused-variable", "-I", inc, "-c", src.to_str().unwrap(), "-o", "x.o"],
        );
    }
}

#[test]
fn debug_module_region_runs_with_hand_built_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_dir(&repo().join("sample-apps/c/list/instrumented"), dir);
    run(dir, rdb_clang(), &["-O2", "list.c", "dump.rdb.c", "-o", "list"]);
    let harness = repo().join("rdb-codegen-llvm/tests/data/call_region.c");
    run(dir, "clang-14", &[harness.to_str().unwrap(), "-ldl", "-o", "call_region"]);
    let module = dir.join("list.rdb.so");
    let out = run(dir, dir.join("call_region").to_str().unwrap(), &[module.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rdb: list shrank from 3 to 2 after inserting 7: 1 5 \n");
    // The program itself never prints debug output.
    let out = run(dir, "./list", &["5", "1", "9", "3"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 numbers: 1 3\n");
}

/// Compiles `tests/data/diagnostics/<name>.c` as `bad.c` with rdb-clang, which must refuse it;
/// returns its diagnostics.
fn diagnose(name: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(data(&format!("diagnostics/{name}.c")), tmp.path().join("bad.c")).unwrap();
    let out = command(tmp.path(), rdb_clang(), &["-c", "bad.c", "-o", "bad.o"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!tmp.path().join("bad.o").exists());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn break_and_continue_out_of_a_region_are_errors() {
    let e = diagnose("break_out_of_region");
    assert!(e.starts_with("bad.c:7:7: error: control leaves the debug region"), "{e}");
    let e = diagnose("continue_out_of_region");
    assert!(e.starts_with("bad.c:6:17: error: control leaves the debug region"), "{e}");
}

#[test]
fn a_break_inside_a_loop_of_the_region_is_fine() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(data("break_inside_a_region_loop.c"), tmp.path().join("ok.c")).unwrap();
    run(tmp.path(), rdb_clang(), &["ok.c", "-o", "ok"]);
}

#[test]
fn return_goto_and_unbalanced_markers_are_errors() {
    let e = diagnose("return_in_region");
    assert!(e.starts_with("bad.c:4:10: error: `return` inside a debug region"), "{e}");
    let e = diagnose("begin_without_end");
    assert!(e.contains("bad.c:3:3: error: `rdb_begin` without a matching `rdb_end`"), "{e}");
    let e = diagnose("goto_out_of_region");
    assert!(e.starts_with("bad.c:3:3: error: `goto out` leaves the debug region"), "{e}");
}

#[test]
fn debug_only_code_may_not_use_program_objects_directly() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(data("debug_only_uses_program_object.c"), tmp.path().join("p.c")).unwrap();
    let out = command(tmp.path(), rdb_clang(), &["p.c", "-o", "p"]).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("debug-only `__rdb_show` uses the program's `counter` directly"), "{e}");
}

/// A real program: Lua 5.4 (about 30k lines, from the `lupa` package on
/// PyPI), built object by object with rdb-clang at -O2 with a region in the
/// interpreter's hot loop. The executable and the instrumented object must be
/// byte-identical to clang-14's build of the unmodified sources.
#[test]
fn lua_with_a_region_in_its_hot_loop_is_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let setup = repo().join("bench/lua-setup.sh");
    run(tmp.path(), "bash", &[setup.to_str().unwrap(), tmp.path().to_str().unwrap()]);
    let dir = tmp.path().join("src");
    let mut sources: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".c"))
        .collect();
    sources.sort();
    let objects: Vec<String> = sources.iter().map(|s| s.replace(".c", ".o")).collect();
    let build = |compiler: &str| {
        for (s, o) in sources.iter().zip(&objects) {
            run(&dir, compiler, &["-O2", "-std=gnu99", "-DLUA_USE_LINUX", "-c", s, "-o", o]);
        }
        let mut link: Vec<&str> = objects.iter().map(String::as_str).collect();
        link.extend(["-lm", "-ldl", "-o", "lua"]);
        run(&dir, compiler, &link);
    };
    build(rdb_clang());
    std::fs::copy(data("calls.lua"), dir.join("calls.lua")).unwrap();
    let out = run(&dir, "./lua", &["calls.lua"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "250000\n");
    let args = rdb_descriptors::load_arguments(&dir.join("lua.rdb-arguments.json")).unwrap();
    let names: Vec<&str> = args.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["b"], "the region uses `b` only (`__rdb_calls` is debug-only)");
    let funcs = rdb_descriptors::load_functions(&dir.join("lua.rdb-functions.json")).unwrap();
    assert_eq!(funcs.functions[0].function.name, "luaV_execute");
    let saved = tmp.path().join("rdb");
    std::fs::create_dir(&saved).unwrap();
    for f in ["lua", "lvm.o"] {
        std::fs::rename(dir.join(f), saved.join(f)).unwrap();
    }
    std::fs::copy(tmp.path().join("plain-lvm.c"), dir.join("lvm.c")).unwrap();
    build("clang-14");
    same(&saved.join("lvm.o"), &dir.join("lvm.o"));
    same(&saved.join("lua"), &dir.join("lua"));
}

/// Descriptors of the list app at -O0: the region runs right after
/// `insert(value)` returns (the loop's step follows the region, which ends
/// the loop body), `value` is in main's frame, `head` and `list_len` by symbol.
#[test]
fn list_descriptors_at_o0_point_after_the_insert_call() {
    use object::{Object, ObjectSection, ObjectSymbol};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_dir(&repo().join("sample-apps/c/list/instrumented"), dir);
    run(dir, rdb_clang(), &["-O0", "-g", "list.c", "dump.rdb.c", "-o", "list"]);
    let funcs = rdb_descriptors::load_functions(&dir.join("list.rdb-functions.json")).unwrap();
    let args = rdb_descriptors::load_arguments(&dir.join("list.rdb-arguments.json")).unwrap();
    let f = &funcs.functions[0];
    assert_eq!(f.entry, rdb_descriptors::DebugEntry::Symbol { name: "__rdb_entry_1".into() });
    assert_eq!((f.function.name.as_str(), f.locations.len()), ("main", 1));
    let at = f.locations[0].address;
    let data = std::fs::read(dir.join("list")).unwrap();
    let elf = object::File::parse(&*data).unwrap();
    let text = elf.section_by_name(".text").unwrap();
    let code = text.data().unwrap();
    let call = (at - 5 - text.address()) as usize;
    assert_eq!(code[call], 0xe8, "the instruction before the region is a call");
    let rel = i32::from_le_bytes(code[call + 1..call + 5].try_into().unwrap());
    let insert = elf.symbols().find(|s| s.name() == Ok("insert")).unwrap().address();
    assert_eq!((at as i64 + rel as i64) as u64, insert, "it calls insert");
    let list_len = elf.symbols().find(|s| s.name() == Ok("list_len")).unwrap().address();
    let by_name = |n: &str| args.arguments.iter().find(|a| a.name == n).unwrap().locations[0].location.clone();
    use rdb_descriptors::Location;
    assert!(matches!(by_name("head"), Location::Symbol { symbol, .. } if symbol == "head"));
    assert!(matches!(by_name("list_len"), Location::Symbol { address, .. } if address == list_len));
    assert!(matches!(by_name("value"), Location::Stack { base, .. } if base.dwarf == 6));
    assert_eq!(args.arguments.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["head", "list_len", "value"]);
}

/// Several regions in one function: at its start, two in a row, one in an
/// `if` with its own loop and array; a function-static and a struct local.
#[test]
fn several_regions_in_one_function() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(repo().join("rdb-codegen-llvm/tests/data/regions.c"), dir.join("m.c")).unwrap();
    run(dir, rdb_clang(), &["-O0", "-g", "m.c", "-o", "m"]);
    let out = run(dir, "./m", &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n", "the program prints no debug output");
    let args = rdb_descriptors::load_arguments(&dir.join("m.rdb-arguments.json")).unwrap();
    let shown: Vec<String> =
        args.arguments.iter().map(|a| format!("{} {} {:?} {}", a.region, a.name, a.kind, a.type_name)).collect();
    assert_eq!(
        shown,
        [
            "2 k Local int",
            "2 calls Static int",
            "2 p Local struct point",
            "3 total Static int",
            "4 k Local int",
            "4 total Static int",
            "4 calls Static int"
        ]
    );
    assert!(args
        .arguments
        .iter()
        .all(|a| a.locations.iter().all(|l| l.location != rdb_descriptors::Location::OptimizedOut)));
    let funcs = rdb_descriptors::load_functions(&dir.join("m.rdb-functions.json")).unwrap();
    assert_eq!(funcs.functions.len(), 4);
    assert!(funcs.functions.iter().all(|f| f.locations.len() == 1 && f.function.name == "step"));
    let harness = repo().join("rdb-codegen-llvm/tests/data/call_regions.c");
    run(dir, "clang-14", &[harness.to_str().unwrap(), "-ldl", "-o", "call_regions"]);
    let out = run(dir, "./call_regions", &[dir.join("m.rdb.so").to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "rdb: step 3 calls 7 p=(3,6)\nrdb: total 12 seen 2\nrdb: arr[0]=3\nrdb: arr[1]=12\nrdb: arr[2]=7\n"
    );
}

/// Build systems' dependency files come out as clang-14 writes them, and
/// rdb-clang's extra compiles add no warnings.
#[test]
fn dependency_files_are_those_of_clang() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_dir(&repo().join("sample-apps/c/list/instrumented"), dir);
    let out = run(dir, rdb_clang(), &["-O2", "-MD", "-MF", "list.d", "-c", "list.c", "-o", "list.o"]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    std::fs::rename(dir.join("list.d"), dir.join("rdb.d")).unwrap();
    std::fs::copy(repo().join("sample-apps/c/list/plain/list.c"), dir.join("list.c")).unwrap();
    run(dir, "clang-14", &["-O2", "-MD", "-MF", "list.d", "-c", "list.c", "-o", "list.o"]);
    same(&dir.join("rdb.d"), &dir.join("list.d"));
}

/// A region in one translation unit using a function and a global defined in
/// another: both become arguments located by symbol at link time. A debug
/// source naming a program global fails the link and leaves no output.
#[test]
fn program_objects_of_other_translation_units() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_dir(&repo().join("rdb-codegen-llvm/tests/data/two"), dir);
    run(dir, rdb_clang(), &["-O0", "-g", "-c", "a.c", "-o", "a.o"]);
    run(dir, rdb_clang(), &["-O0", "-g", "-c", "b.c", "-o", "b.o"]);
    run(dir, rdb_clang(), &["a.o", "b.o", "-o", "two"]);
    let args = rdb_descriptors::load_arguments(&dir.join("two.rdb-arguments.json")).unwrap();
    let shown: Vec<String> =
        args.arguments.iter().map(|a| format!("{} {:?} {:?}", a.name, a.kind, a.locations[0].location)).collect();
    assert_eq!(shown.len(), 3);
    assert!(shown[0].starts_with("helper Static Symbol { symbol: \"helper\""), "{shown:?}");
    assert!(shown[1].starts_with("shared Static Symbol { symbol: \"shared\""), "{shown:?}");
    assert!(shown[2].starts_with("v Local Stack"), "{shown:?}");
    let out = command(dir, rdb_clang(), &["a.o", "b.o", "bad.rdb.c", "-o", "bad"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("debug-only code refers to program symbols by name: shared"));
    assert!(!dir.join("bad").exists() && !dir.join("bad.rdb.so").exists());
}

/// A region full of C constructs (switch, VLA, struct returns, `?:`, `&&`,
/// function pointers, constant expressions on globals, a debug-only static
/// with RDB_DEBUG_ONLY). At -O2 the static `make` is inlined away and
/// `names` is unused once stripped: both are copied into the debug module
/// instead of passed.
#[test]
fn constructs_outline_at_o0_and_o2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(repo().join("rdb-codegen-llvm/tests/data/constructs.c"), dir.join("s.c")).unwrap();
    for (flags, expected) in [
        (&["-O0", "-g"][..], &["i", "b", "n", "acc", "make", "f", "table"][..]),
        (&["-O2"][..], &["i", "b", "n", "acc", "f", "table"][..]),
    ] {
        let mut a = flags.to_vec();
        a.extend(["s.c", "-o", "s"]);
        run(dir, rdb_clang(), &a);
        let out = run(dir, "./s", &[]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "20\n");
        let args = rdb_descriptors::load_arguments(&dir.join("s.rdb-arguments.json")).unwrap();
        assert_eq!(args.arguments.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), expected, "{flags:?}");
        std::fs::copy(data("load.c"), dir.join("load.c")).unwrap();
        run(dir, "clang-14", &["load.c", "-ldl", "-o", "load"]);
        run(dir, "./load", &[dir.join("s.rdb.so").to_str().unwrap()]);
    }
}

/// The DWARF twin check accepts `-g` twins and refuses different code.
#[test]
fn twin_check_refuses_different_code() {
    use rdb_codegen_llvm::driver::{check_same_code, DriverError};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(data("twin_plus_one.c"), dir.join("a.c")).unwrap();
    run(dir, "clang-14", &["-O2", "-c", "a.c", "-o", "a.o"]);
    run(dir, "clang-14", &["-O2", "-g", "-c", "a.c", "-o", "a-g.o"]);
    check_same_code(&dir.join("a.o"), &dir.join("a-g.o")).unwrap();
    std::fs::copy(data("twin_plus_two.c"), dir.join("a.c")).unwrap();
    run(dir, "clang-14", &["-O2", "-g", "-c", "a.c", "-o", "b-g.o"]);
    let e = check_same_code(&dir.join("a.o"), &dir.join("b-g.o")).unwrap_err();
    assert!(matches!(e, DriverError::TwinMismatch { .. }), "{e}");
    assert!(e.to_string().contains("section `.text`"), "{e}");
}

/// The C pipeline end to end without the replay engine: gdb stops the real
/// program at each region's code location from the descriptors, builds argv
/// from the argument descriptors and calls the region's entry in the debug
/// module (`tests/data/gdb_replayer.py`). The regions print the program's
/// state as the paper's case study does.
#[test]
fn regions_run_at_their_descriptor_locations_under_gdb() {
    let script = repo().join("rdb-codegen-llvm/tests/data/gdb_replayer.py");
    let debug_lines = |dir: &Path, prog: &str, args: &[&str]| -> String {
        let mut a = vec!["120", "gdb", "-q", "-batch", "-x", script.to_str().unwrap(), "--args", prog];
        a.extend(args);
        let out = Command::new("timeout").args(&a).env("RDB_PROG", prog).current_dir(dir).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        text.lines()
            .filter(|l| l.starts_with("rdb:") || l.contains("numbers:") || l.contains("SIGSEGV"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_dir(&repo().join("sample-apps/c/list/instrumented"), dir);
    run(dir, rdb_clang(), &["-O0", "-g", "list.c", "dump.rdb.c", "-o", "list"]);
    // gdb 13 cannot call a function in a live program on hosts whose CPUs have AMX state:
    // it writes the registers back with an XSTATE buffer smaller than the kernel's, which
    // the kernel refuses (plain gdb calling `getpid()` in any program fails the same way).
    // This test needs such calls (dlopen, the region's entry); rdb's own tests do not.
    let probe = Command::new("timeout")
        .args(["60", "gdb", "-q", "-batch", "-ex", "break main", "-ex", "run", "-ex", "print (int) getpid()", "./list"])
        .current_dir(dir)
        .output()
        .unwrap();
    let probe = String::from_utf8_lossy(&probe.stdout).into_owned() + &String::from_utf8_lossy(&probe.stderr);
    if probe.contains("Couldn't write extended state status") {
        eprintln!(
            "skipped: gdb cannot call functions in a live program on this host (`{}`)",
            probe.lines().last().unwrap_or("")
        );
        return;
    }
    assert_eq!(
        debug_lines(dir, "./list", &["5", "1", "9", "3", "7"]),
        "rdb: list shrank from 3 to 2 after inserting 3: 1 3 \n3 numbers: 1 3 7"
    );
    copy_dir(&repo().join("sample-apps/c/minibc/instrumented"), dir);
    run(dir, rdb_clang(), &["-O0", "-g", "minibc.c", "-o", "minibc"]);
    assert_eq!(
        debug_lines(dir, "./minibc", &["for (i = 0; ; i = i + 1) { if (i > 2) break; print i }"]),
        "rdb: for loop ` (i = 0; ; i = i + 1)` compiles to code 2..9\nrdb: pc=2 BRANCH 17 stack depth 0\n\
         Program received signal SIGSEGV, Segmentation fault.\nProgram terminated with signal SIGSEGV, Segmentation fault."
    );
}
