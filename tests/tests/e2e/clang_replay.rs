//! C replay debugging end to end (issue 6): build a C program with plain
//! clang-14, record it once with `rdb record`, add debug regions, rebuild with
//! `rdb-clang`, and replay with `rdb replay --debug`: the regions print the
//! program's real state and the program's output is the recorded one.

use std::path::Path;
use std::process::Output;

use rdb_tests::{copy_files as copy_dir, output, program, rdb_clang, rdb_in, repo_root, run_ok, scratch, text, timed};

/// `program ARGS` in `dir` under a timeout.
fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    output(timed(600, program).args(args).current_dir(dir))
}

fn ok(out: Output, what: &str) -> Output {
    rdb_tests::assert_success(what, &out);
    out
}

fn rdb_clang_in(dir: &Path, args: &[&str]) -> Output {
    run_ok("rdb-clang", timed(600, rdb_clang()).args(args).current_dir(dir))
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

/// Replays `inlined_unrolled.c` built by rdb-clang with `opt` and returns
/// (values the region printed, hits the replay reported as not run).
fn inlined_unrolled_hits(opt: &str, calls: usize) -> (Vec<usize>, usize) {
    let tmp = scratch("c");
    let dir = tmp.path();
    std::fs::copy(program("support/inlined_unrolled.c"), dir.join("copies.c")).unwrap();
    rdb_clang_in(dir, &[opt, "-g", "copies.c", "-o", "copies"]);
    let n = calls.to_string();
    let recorded = record(dir, &["./copies", &n]);
    assert_eq!(text(&recorded.stdout), format!("last {}\n", (calls - 1) * (calls - 1)));
    let replay = rdb_in(dir, &["replay", "trace", "--debug", "./copies"]);
    let out = text(&replay.stdout);
    let stderr = text(&replay.stderr);
    assert!(matches!(replay.status.code(), Some(0 | 5)), "{opt}: {out}\n{stderr}");
    let ran: Vec<usize> = out.lines().filter_map(|l| l.strip_prefix("rdb: add ")).map(|v| v.parse().unwrap()).collect();
    let not_run = stderr.lines().filter(|l| l.contains("could not run")).count();
    (ran, not_run)
}

/// clang -O2 inlines `add` into `main` and unrolls the loop eight times,
/// with a remainder loop: nine copies of the region's statement in one
/// function, no DWARF entity for eight of them. Each copy runs the region:
/// as many hits as at -O0, each with its own value: `v` is not stored in
/// the unrolled copies but computed (the induction register plus the
/// copy's offset), which the `computed` location class expresses.
pub fn every_inlined_and_unrolled_copy_runs_the_region() {
    let calls = 13;
    let (o0, o0_not_run) = inlined_unrolled_hits("-O0", calls);
    assert_eq!(o0, (0..calls).collect::<Vec<_>>());
    assert_eq!(o0_not_run, 0);
    let (o2, o2_not_run) = inlined_unrolled_hits("-O2", calls);
    assert_eq!((o2, o2_not_run), (o0, 0));
}

/// Builds `fork_threaded.c` with rdb-clang at `opt`, records and replays it:
/// (the region's lines, hits the replay reported as not run, the build's
/// warnings).
fn fork_threaded_hits(opt: &str) -> (Vec<String>, usize, String) {
    let tmp = scratch("c");
    let dir = tmp.path();
    std::fs::copy(program("support/fork_threaded.c"), dir.join("ft.c")).unwrap();
    let build = ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "ft.c", "-o", "ft"]), "rdb-clang");
    let recorded = record(dir, &["./ft", "5"]);
    assert_eq!(text(&recorded.stdout), "split 30\n");
    let replay = rdb_in(dir, &["replay", "trace", "--debug", "./ft"]);
    let out = text(&replay.stdout);
    let stderr = text(&replay.stderr);
    assert!(matches!(replay.status.code(), Some(0 | 5)), "{opt}: {out}\n{stderr}");
    let program: String = out.lines().filter(|l| !l.starts_with("rdb: ")).map(|l| format!("{l}\n")).collect();
    assert_eq!(program, text(&recorded.stdout));
    let ran = out.lines().filter(|l| l.starts_with("rdb: ")).map(str::to_string).collect();
    let not_run = stderr.lines().filter(|l| l.contains("could not run")).count();
    (ran, not_run, text(&build.stderr))
}

/// clang -O2 threads the parent's path from after `waitpid` in
/// `if (child > 0) waitpid(..); /* region */ if (child == 0) _exit(0);`
/// straight past the second test, whose outcome it knows there: the anchor's
/// code is only on the child's path. The locator finds the path that skips
/// it in the function's control-flow graph and places a location at its
/// jump: the region runs in the parent too, as at -O0, with the same values.
pub fn a_path_the_optimizer_threads_past_the_anchor_runs_the_region() {
    let (o0, o0_not_run, _) = fork_threaded_hits("-O0");
    assert_eq!(o0, ["rdb: tag 5 work 30", "rdb: tag 5 work 30"]);
    assert_eq!(o0_not_run, 0);
    let (o2, o2_not_run, warnings) = fork_threaded_hits("-O2");
    assert_eq!((o2, o2_not_run), (o0, 0), "{warnings}");
    assert!(!warnings.contains("skips the code"), "{warnings}");
}

/// Builds `entry_values.c` with rdb-clang at `opt`, records and replays it: (the argument
/// descriptors' location classes, the replay's output).
fn entry_values_replay(opt: &str) -> (String, String) {
    let tmp = scratch("c");
    let dir = tmp.path();
    std::fs::copy(program("support/entry_values.c"), dir.join("ev.c")).unwrap();
    rdb_clang_in(dir, &[opt, "-g", "ev.c", "-o", "ev"]);
    let descriptors = std::fs::read_to_string(dir.join("ev.rdb-arguments.json")).unwrap();
    let recorded = record(dir, &["./ev", "4"]);
    let replay = rdb_in(dir, &["replay", "trace", "--debug", "./ev"]);
    assert_eq!(replay.status.code(), Some(0), "{opt}: {}", text(&replay.stderr));
    let out = text(&replay.stdout);
    // The program's own output is the recorded one.
    let program: String = out.lines().filter(|l| !l.starts_with("rdb: ")).map(|l| format!("{l}\n")).collect();
    assert_eq!(program, text(&recorded.stdout));
    (descriptors, out)
}

/// clang -O2 keeps `x` and `depth` of a recursive function only in their argument registers,
/// which the calls before the region clobber: the DWARF describes them there by their values
/// on entry (`DW_OP_entry_value`). The descriptors say so (`entry_value`), the replay keeps
/// each call's values at the function's entry, and the region prints what it prints at -O0,
/// in every frame of the recursion and in a child forked inside a call.
pub fn entry_values_give_the_o0_values_at_o2() {
    let (o0_descriptors, o0) = entry_values_replay("-O0");
    assert!(!o0_descriptors.contains("entry_value"), "{o0_descriptors}");
    assert!(o0.contains("rdb: x 4 depth 4\n"), "{o0}");
    // The child forked inside `split` never passes that call's entry: it has the parent's values.
    assert!(o0.contains("rdb: child tag 104\nrdb: parent tag 104\n"), "{o0}");
    let (o2_descriptors, o2) = entry_values_replay("-O2");
    assert!(o2_descriptors.contains("\"class\": \"entry_value\""), "{o2_descriptors}");
    assert_eq!(o2, o0);
}

/// A region calls a static helper that clang -O2 inlines into its only caller (the main
/// binary has no `total_weight`): the debug module runs its own copy, whose uses of the
/// program's list head, global and function are redirected to the program's objects
/// (slots the region fills on entry). The region prints at -O2 what it prints at -O0.
pub fn a_region_calls_a_helper_the_optimizer_inlined_everywhere() {
    let replay = |opt: &str| {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/inlined_helper.c"), dir.join("ih.c")).unwrap();
        rdb_clang_in(dir, &[opt, "-g", "ih.c", "-o", "ih"]);
        let recorded = record(dir, &["./ih", "5"]);
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./ih"]);
        assert_eq!(replay.status.code(), Some(0), "{opt}: {}", text(&replay.stderr));
        let out = text(&replay.stdout);
        let program: String = out.lines().filter(|l| !l.starts_with("rdb: ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(program, text(&recorded.stdout));
        let symbols = std::process::Command::new("nm").arg(dir.join("ih")).output().unwrap();
        (text(&symbols.stdout).contains(" total_weight"), out)
    };
    let (o0_has_helper, o0) = replay("-O0");
    assert!(o0_has_helper);
    assert!(o0.contains("rdb: after 5 nodes, total weight 50\n"), "{o0}");
    let (o2_has_helper, o2) = replay("-O2");
    assert!(!o2_has_helper, "clang -O2 kept total_weight: the test no longer exercises a copy");
    assert_eq!(o2, o0);
}

/// clang -O2 promotes a global the loop updates to a register and stores it after the loop:
/// at the region, memory holds an older value. The build says so and the replay reports the
/// region as not run, never printing the stale value; at -O0 the region prints every value.
pub fn a_global_the_optimizer_keeps_in_a_register_is_never_read_stale() {
    let replay = |opt: &str| {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/promoted_global.c"), dir.join("pg.c")).unwrap();
        let built = rdb_clang_in(dir, &[opt, "-g", "pg.c", "-o", "pg"]);
        record(dir, &["./pg", "4"]);
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./pg"]);
        (text(&built.stderr), replay.status.code(), text(&replay.stdout), text(&replay.stderr))
    };
    let (_, code, out, err) = replay("-O0");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("rdb: total 1\nrdb: total 5\nrdb: total 14\nrdb: total 30\ntotal 30\n"), "{out}");
    let (build, code, out, err) = replay("-O2");
    assert!(build.contains("`total` is not served in `main`"), "{build}");
    assert_eq!(code, Some(5), "{out}\n{err}");
    assert!(!out.contains("rdb: total"), "a stale value was printed:\n{out}");
    assert!(err.contains("argument `total` (position 0) is not current in memory here"), "{err}");
    assert_eq!(out, "total 30\n");
}

/// `merged_after_unrolled.c`: a region in a loop whose anchor statement (`s->seen++`) clang
/// -O2 takes out of the fully unrolled loop as one `addq $0xa` after it. At -O0 the region runs
/// at each of the ten iterations; at -O2 it ran once there, printing the last total, with no
/// warning. Now the build and the replay say that the copy cannot run it, and it never prints a
/// line -O0 does not.
pub fn a_region_whose_statement_leaves_an_unrolled_loop_is_reported_not_run_once() {
    let replay = |opt: &str| {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/merged_after_unrolled.c"), dir.join("m.c")).unwrap();
        let build = ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "m.c", "-o", "m"]), "rdb-clang");
        let recorded = record(dir, &["./m"]);
        assert_eq!(text(&recorded.stdout), "seen 10 total 55\n");
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./m"]);
        let (out, stderr) = (text(&replay.stdout), text(&replay.stderr));
        let ran: Vec<String> = out.lines().filter(|l| l.starts_with("rdb: ")).map(str::to_string).collect();
        (ran, text(&build.stderr), stderr, replay.status.code())
    };
    let (o0, _, _, status) = replay("-O0");
    assert_eq!(status, Some(0));
    let totals = [1, 3, 6, 10, 15, 21, 28, 36, 45, 55].map(|t| format!("rdb: total {t}"));
    assert_eq!(o0, totals);
    let (o2, warnings, stderr, status) = replay("-O2");
    if o2 != o0 {
        assert!(o2.is_empty(), "{o2:?}\n{warnings}\n{stderr}");
        assert!(warnings.contains("the loop around the region has no loop in this copy's code"), "{warnings}");
        assert!(stderr.contains("region 1 did not run at 1 pass"), "{stderr}");
        assert_eq!(status, Some(5), "{stderr}");
    }
}

/// `loop_exit.c`: regions in loop bodies before a `return` and a `break`. Their code is on no
/// cycle of the machine code, yet their loops are there; the merged-loop check took them for
/// loops the optimizer merged away and refused them (-O0 included). They run as plain code
/// would at -O0; at -O2, where the statements after them have no code, they are reported
/// (they ran at the code after the `if`, on every call, before).
pub fn regions_on_a_path_leaving_a_loop_run_once_per_pass() {
    for opt in ["-O0", "-O2"] {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/loop_exit.c"), dir.join("e.c")).unwrap();
        let build = ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "e.c", "-o", "e"]), "rdb-clang");
        let recorded = record(dir, &["./e"]);
        assert_eq!(text(&recorded.stdout), "found 3 at 3\n");
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./e"]);
        let (out, stderr, warnings) = (text(&replay.stdout), text(&replay.stderr), text(&build.stderr));
        let ran: Vec<&str> = out.lines().filter(|l| l.starts_with("rdb: ")).collect();
        let expected = ["rdb: found 1", "rdb: found 2", "rdb: found 3", "rdb: negative at 2", "rdb: negative at 1"];
        if opt == "-O0" || ran == expected {
            assert_eq!(replay.status.code(), Some(0), "{opt}: {out}\n{stderr}\n{warnings}");
            assert_eq!(ran, expected, "{opt}: {stderr}\n{warnings}");
            assert!(!warnings.contains("warning"), "{opt}: {warnings}");
        } else {
            // clang -O2 gives `return n;` and `break;` no code of their own: the next code is
            // after the `if` (the loop's step, the return after the loop), which runs also
            // when the branch is not taken. Never run there; say so.
            assert!(ran.is_empty(), "{opt}: {ran:?}\n{warnings}");
            for region in ["region 1", "region 2"] {
                assert!(warnings.contains(&format!("{region} (")), "{warnings}");
                assert!(stderr.contains(&format!("{region} cannot run")), "{stderr}");
            }
            assert!(warnings.contains("is after the region's block"), "{warnings}");
            // The statement named in the user's lines (`return n;`), not the stripped source's.
            assert!(warnings.contains("(e.c:19:7)"), "{warnings}");
        }
    }
}

/// `step_merged.c`: a region ending a loop body whose step has no row of its own at -O2 (only
/// the condition's columns on the step's line). It ran at the condition, before each add, and
/// printed sums one element behind; now it prints -O0's lines or is reported, never others.
pub fn a_region_before_a_step_without_code_never_prints_the_sum_before_the_add() {
    let replay = |opt: &str| {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/step_merged.c"), dir.join("s.c")).unwrap();
        let build = ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "s.c", "-o", "s"]), "rdb-clang");
        let recorded = record(dir, &["./s"]);
        assert_eq!(text(&recorded.stdout), "sum 280\n");
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./s"]);
        let (out, stderr) = (text(&replay.stdout), text(&replay.stderr));
        let ran: Vec<String> = out.lines().filter(|l| l.starts_with("rdb: ")).map(str::to_string).collect();
        (ran, text(&build.stderr), stderr, replay.status.code())
    };
    let (o0, _, stderr, status) = replay("-O0");
    assert_eq!(status, Some(0), "{stderr}");
    let sums = [(40, 40), (50, 90), (10, 100), (60, 160), (20, 180), (70, 250), (30, 280)];
    assert_eq!(o0, sums.map(|(v, s)| format!("rdb: val {v} sum {s}")));
    let (o2, warnings, stderr, status) = replay("-O2");
    if o2 != o0 {
        assert!(o2.is_empty(), "{o2:?}\n{warnings}\n{stderr}");
        assert!(warnings.contains("s.c:21:"), "the step named in the user's lines: {warnings}");
        assert!(stderr.contains("region 1 cannot run"), "{stderr}");
        assert_eq!(status, Some(0), "{stderr}");
    }
}

/// `hashtable.c`: 3 threads fill a table through `put`, which clang -O2 inlines into the
/// worker's loop. The worker's region (before the call) must print each worker's 6 steps at
/// -O0 and -O2: at -O2 it was placed at the inlined copy's lowest address, padding that never
/// runs, and refused as a loop merged away. The other regions print -O0's lines or are reported.
pub fn a_region_before_a_call_inlined_into_a_loop_runs_at_every_iteration() {
    for opt in ["-O0", "-O2"] {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/hashtable.c"), dir.join("h.c")).unwrap();
        let build =
            ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "-pthread", "h.c", "-o", "h"]), "rdb-clang");
        let recorded = record(dir, &["./h"]);
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./h"]);
        let (out, stderr, warnings) = (text(&replay.stdout), text(&replay.stderr), text(&build.stderr));
        let program: String = out.lines().filter(|l| !l.starts_with("[dbg] ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(program, text(&recorded.stdout), "{opt}: {stderr}");
        for worker in 0..3 {
            let steps: Vec<&str> = out.lines().filter(|l| l.starts_with(&format!("[dbg] worker {worker} "))).collect();
            let expected: Vec<String> =
                (0..6).map(|i| format!("[dbg] worker {worker} step {i} key k{}", (i * 7 + worker) % 9)).collect();
            assert_eq!(steps, expected, "{opt}: {stderr}\n{warnings}");
        }
        let puts = out.lines().filter(|l| l.starts_with("[dbg] insert") || l.starts_with("[dbg] update")).count();
        if opt == "-O0" {
            assert_eq!(replay.status.code(), Some(0), "{stderr}\n{warnings}");
            assert_eq!(puts, 18, "{out}");
            assert_eq!(out.lines().filter(|l| l.starts_with("[dbg] sum ")).count(), 9, "{out}");
        } else {
            // What does not run at -O2 is reported, never run elsewhere.
            assert!(puts <= 18, "{out}");
            assert!(puts == 18 || stderr.contains("could not run") || stderr.contains("cannot run"), "{stderr}");
        }
    }
}

/// `block_ends.c`: a region ending an `if` body and one ending a `while` body. Both were
/// anchored at the code that runs next, which other paths reach too: the `if` region printed at
/// every iteration (`odd 0`, `odd 2`, ...), the `while` one once more than the loop ran. Now
/// each prints only its own passes (`odd 1`, `odd 3`, `odd 5`; `while n 12`, `while n 8`) or is
/// reported, at -O0 and -O2.
pub fn a_region_ending_a_block_never_runs_on_the_paths_that_skip_it() {
    for opt in ["-O0", "-O2"] {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/block_ends.c"), dir.join("b.c")).unwrap();
        let build = ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "b.c", "-o", "b"]), "rdb-clang");
        let recorded = record(dir, &["./b"]);
        assert_eq!(text(&recorded.stdout), "odd 9 argc 16 n 8\n");
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./b"]);
        let (out, stderr, warnings) = (text(&replay.stdout), text(&replay.stderr), text(&build.stderr));
        let odd: Vec<&str> = out.lines().filter(|l| l.starts_with("rdb: odd")).collect();
        let whiles: Vec<&str> = out.lines().filter(|l| l.starts_with("rdb: while")).collect();
        if !odd.is_empty() {
            assert_eq!(odd, ["rdb: odd 1 sum 1", "rdb: odd 3 sum 4", "rdb: odd 5 sum 9"], "{opt}: {warnings}");
        } else {
            assert!(stderr.contains("region 1 cannot run"), "{opt}: {stderr}");
        }
        if !whiles.is_empty() {
            assert_eq!(whiles, ["rdb: while n 12", "rdb: while n 8"], "{opt}: {warnings}");
        } else {
            assert!(stderr.contains("region 2 cannot run"), "{opt}: {stderr}");
        }
    }
}

/// `unrolled_end.c`: a region ending a loop body, anchored at the loop's step. clang -O2 unrolls
/// the loop fully: the step has no code, and the next line with code is the next copy's first
/// statement, where `w` is already the next iteration's (before: the region ran there once, at
/// the first copy's start, printing `step 0 sum 0`). It never runs with values -O0 does not
/// print: where no copy's end can be served, the build and the replay say why.
pub fn a_region_ending_an_unrolled_loop_body_never_runs_with_another_iterations_values() {
    let replay = |opt: &str| {
        let tmp = scratch("c");
        let dir = tmp.path();
        std::fs::copy(program("support/unrolled_end.c"), dir.join("u.c")).unwrap();
        let build = ok(run(dir, rdb_clang().to_str().unwrap(), &[opt, "-g", "u.c", "-o", "u"]), "rdb-clang");
        let recorded = record(dir, &["./u"]);
        assert_eq!(text(&recorded.stdout), "step 0\nstep 1\nstep 2\nsum 60\n");
        let replay = rdb_in(dir, &["replay", "trace", "--debug", "./u"]);
        let (out, stderr) = (text(&replay.stdout), text(&replay.stderr));
        assert_eq!(replay.status.code(), Some(0), "{opt}: {out}\n{stderr}");
        let program: String = out.lines().filter(|l| !l.starts_with("rdb: ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(program, text(&recorded.stdout));
        let ran: Vec<String> = out.lines().filter(|l| l.starts_with("rdb: ")).map(str::to_string).collect();
        (ran, text(&build.stderr), stderr)
    };
    let (o0, _, _) = replay("-O0");
    assert_eq!(o0, ["rdb: step 0 sum 10", "rdb: step 1 sum 30", "rdb: step 2 sum 60"]);
    let (o2, warnings, stderr) = replay("-O2");
    if o2 != o0 {
        assert!(o2.is_empty(), "{o2:?}\n{warnings}");
        assert!(warnings.contains("the loop is unrolled: at 0x"), "{warnings}");
        assert!(stderr.contains("region 1 cannot run: the region ends its block and the loop's step"), "{stderr}");
    }
}
