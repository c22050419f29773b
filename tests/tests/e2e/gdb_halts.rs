//! Halts that happen together under `rdb gdb`: a thread halting at a caught syscall while
//! another thread of the process runs into a watchpoint. The race sample (3 threads, 60
//! operations each: load the counter, write a log line, store) recorded under the chaos
//! scheduler with a fixed seed has dozens of such points; every halt must reach gdb, once.

use std::path::Path;

use rdb_tests::{describe, output, rdb_timed, scratch, text, SampleApp};

/// Threads × operations of the recording (`race_recorded_with_chaos`).
const OPS: u64 = 3 * 60;

/// Run gdb over the race's replay with `watch` (a command: `watch -l …` or `awatch -l …`) on
/// the counter, and `catch syscall write` when `catch`, every stop silently counted, up to the
/// line of `main` that reads the final count; returns (watchpoint stops, syscall stops) and
/// what gdb and the replay printed.
fn count_stops(app: &SampleApp, trace: &Path, watch: &str, catch: bool) -> ((u64, u64), String) {
    let main = std::fs::read_to_string(app.dir.join("src/main.rs")).expect("race's main.rs");
    let line = main.lines().position(|l| l.contains("let count = COUNTER.load")).expect("the final load") + 1;
    let catch = if catch { "catch syscall write\ncommands\nsilent\nset $s = $s + 1\ncontinue\nend\n" } else { "" };
    let script = format!(
        "set pagination off\nset $w = 0\nset $s = 0\n{watch} race::COUNTER.v.value\ncommands\nsilent\nset $w = $w + 1\ncontinue\nend\n\
         {catch}break main.rs:{line}\ncontinue\nprintf \"counted %d %d\\n\", $w, $s\n"
    );
    let path = trace.with_file_name(format!("count-{}.gdb", watch.replace(' ', "")));
    std::fs::write(&path, script).expect("write the gdb script");
    let out = output(
        rdb_timed(300, &["gdb", trace.to_str().unwrap(), "--", "-batch", "-nx", "-x", path.to_str().unwrap()])
            .current_dir(&app.dir),
    );
    let all = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let counted = all.lines().find_map(|l| l.strip_prefix("counted ")).unwrap_or_else(|| panic!("no count:\n{all}"));
    let (w, s) = counted.split_once(' ').expect("two counts");
    ((w.parse().expect("a count"), s.parse().expect("a count")), all)
}

/// Check the counts of one gdb session.
fn expect_stops(app: &SampleApp, trace: &Path, watch: &str, catch: bool, expected: (u64, u64)) {
    let (got, all) = count_stops(app, trace, watch, catch);
    assert_eq!(
        got, expected,
        "`{watch}`, catch syscall {catch}: (watchpoint stops, syscall stops); gdb printed:\n{all}"
    );
}

/// Every access to the counter (a load and a store per operation) reaches gdb's `awatch` with
/// `catch syscall write` on as without it, and every write's entry and return is caught once;
/// gdb's `watch` (which stops where the value changed) sees the same changes either way.
pub fn watchpoints_and_caught_syscalls_of_threads_are_each_delivered_once() {
    let tmp = scratch("halts");
    let trace = tmp.path().join("trace");
    let (app, rec) = SampleApp::race_recorded_with_chaos(tmp.path(), &trace);
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));

    expect_stops(&app, &trace, "awatch -l", false, (2 * OPS, 0));
    expect_stops(&app, &trace, "awatch -l", true, (2 * OPS, 2 * OPS));
    let ((changes, _), all) = count_stops(&app, &trace, "watch -l", false);
    assert!(changes > 0 && changes <= OPS, "{changes} changes:\n{all}");
    expect_stops(&app, &trace, "watch -l", true, (changes, 2 * OPS));
}

/// Going back over such points: forward until a caught syscall of one thread is followed by
/// another thread's watchpoint stop, then back to just before that stop with
/// `reverse-continue`, and forward again: the same stops come again, in the same order
/// (`tests/gdb/support/reverse_over_halts.py`).
pub fn going_back_over_halts_of_several_threads_gives_the_same_stops_again() {
    let tmp = scratch("halts-back");
    let trace = tmp.path().join("trace");
    let (app, rec) = SampleApp::race_recorded_with_chaos(tmp.path(), &trace);
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
    let script = trace.with_file_name("back.gdb");
    let support = rdb_tests::repo_root().join("tests/gdb/support/reverse_over_halts.py");
    let text_of_script = format!(
        "set pagination off\nawatch -l race::COUNTER.v.value\ncatch syscall write\nsource {}\n",
        support.display()
    );
    std::fs::write(&script, text_of_script).expect("write the gdb script");
    let out = output(
        rdb_timed(300, &["gdb", trace.to_str().unwrap(), "--", "-batch", "-nx", "-x", script.to_str().unwrap()])
            .current_dir(&app.dir),
    );
    let all = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let verdict =
        all.lines().find(|l| l.starts_with("again after stop ")).unwrap_or_else(|| panic!("no verdict:\n{all}"));
    assert!(verdict.ends_with(": the same stops"), "{all}");
}
