//! `rdb find` (issue 13): a region's check (`rdb_check!`, C's `rdb_check`) over the sample apps'
//! bugs, searched by bisection from checkpoints and by a linear scan (`--scan`) of the same
//! trace: the answers must be the same hit (for the racy counter, whose check is not monotonic,
//! a change the scan sees), and the bisection within its probe bound.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use rdb_tests::{
    assert_success, copy_files, rdb_clang, rdb_in, repo_root, run_cargo, run_cargo_rdb, run_ok, scratch, text, timed,
    tools, SampleApp,
};

/// Puts `line` after the `nth` (from 0) line of `file` that contains `after`.
fn insert_after(file: &Path, after: &str, nth: usize, line: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = String::new();
    let mut seen = 0;
    let mut done = false;
    for l in text.split_inclusive('\n') {
        out.push_str(l);
        if !done && l.contains(after) {
            if seen == nth {
                out.push_str(line);
                out.push('\n');
                done = true;
            }
            seen += 1;
        }
    }
    assert!(done, "no line {nth} with {after:?} in {}", file.display());
    std::fs::write(file, out).unwrap();
}

/// Imports `rdb_check!` in the Rust source `file` and puts the line `check` after its first line
/// that contains `after`.
fn add_check(file: &Path, after: &str, check: &str) {
    let source =
        std::fs::read_to_string(file).unwrap().replace("rdb_begin, rdb_end}", "rdb_begin, rdb_check, rdb_end}");
    std::fs::write(file, source).unwrap();
    insert_after(file, after, 0, check);
}

/// What one `rdb find` printed: the answer line (`hit N, event E, thread T, FILE:LINE: MESSAGE`),
/// the probes made and their bound, and the transitions of a scan.
#[derive(Debug)]
struct Found {
    answer: Option<String>,
    probes: u64,
    bound: u64,
    failures_after_passes: Vec<u64>,
    stdout: String,
}

fn find(dir: &Path, args: &[&str]) -> Found {
    let out = rdb_in(dir, &[&["find"], args].concat());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(matches!(out.status.code(), Some(0) | Some(6)), "rdb find {args:?} failed:\n{stdout}\n{stderr}");
    let answer = stdout.lines().next().filter(|l| l.starts_with("hit ")).map(str::to_string);
    assert_eq!(answer.is_some(), out.status.code() == Some(0), "{stdout}\n{stderr}");
    let summary = stderr.lines().find(|l| l.contains(" probes")).unwrap_or_else(|| panic!("no summary:\n{stderr}"));
    let number_before = |word: &str| -> u64 {
        let i = summary.find(word).unwrap_or_else(|| panic!("{word:?} in {summary}"));
        summary[..i].split_whitespace().last().unwrap().trim_start_matches('(').parse().unwrap()
    };
    let probes = number_before(" probes");
    let bound = summary.split(" = ").nth(1).and_then(|r| r.split_whitespace().next()).map_or(0, |n| n.parse().unwrap());
    let failures_after_passes = stdout
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("hit "))
        .filter_map(|l| l.split_once(": fails"))
        .map(|(n, _)| n.parse().unwrap())
        .collect();
    Found { answer, probes, bound, failures_after_passes, stdout }
}

/// The hit number of an answer line.
fn hit_of(answer: &str) -> u64 {
    answer.strip_prefix("hit ").and_then(|r| r.split(',').next()).unwrap().parse().unwrap()
}

/// Bisection and scan of the same trace agree, the bisection stays within its bound and gives
/// the same answer twice.
fn bisect_equals_scan(dir: &Path, args: &[&str]) -> Found {
    let bisect = find(dir, args);
    let scan = find(dir, &[args, &["--scan"]].concat());
    assert_eq!(bisect.answer, scan.answer, "bisection and scan differ:\n{}\n---\n{}", bisect.stdout, scan.stdout);
    assert!(bisect.probes <= bisect.bound, "{} probes, bound {}", bisect.probes, bisect.bound);
    let again = find(dir, args);
    assert_eq!(again.answer, bisect.answer, "the same search found another hit");
    bisect
}

/// The C linked list of the sample app, recorded in `dir` (`trace`) inserting 150 numbers in
/// order, then 151 (in the middle: every node after it is lost), then 50 more; rebuilt as
/// `./list` with `lines` after the region's `long len = list_len(head);`.
fn list_recorded(dir: &Path, lines: &str) {
    let app = repo_root().join("sample-apps/c/list");
    copy_files(&app.join("plain"), dir);
    run_ok("clang-14", timed(600, "clang-14").args(["-O0", "-g", "list.c", "-o", "list"]).current_dir(dir));
    let mut args: Vec<String> = (1..=150).map(|i| (2 * i).to_string()).collect();
    args.push("151".into());
    args.extend((151..=200).map(|i| (2 * i).to_string()));
    let mut prog = vec!["./list"];
    prog.extend(args.iter().map(String::as_str));
    rdb_tests::record(dir, Path::new("trace"), &prog);
    copy_files(&app.join("instrumented"), dir);
    insert_after(&dir.join("list.c"), "long len = list_len(head);", 0, lines);
    run_ok(
        "rdb-clang",
        timed(600, rdb_clang()).args(["-O0", "-g", "list.c", "dump.rdb.c", "-o", "list"]).current_dir(dir),
    );
}

/// The C linked list loses every node after an insertion in the middle: `rdb_check(len == i)`
/// after each insertion fails from that insertion on. `--then gdb` stops there.
pub fn c_list_losing_nodes() {
    let tmp = scratch("find-list");
    let dir = tmp.path();
    list_recorded(dir, "    rdb_check(len == i, \"%ld nodes after %d insertions\", len, i);");
    let found = bisect_equals_scan(dir, &["trace", "--debug", "./list"]);
    let answer = found.answer.unwrap();
    assert_eq!(hit_of(&answer), 151, "{answer}");
    assert!(answer.ends_with("list.c:44: 76 nodes after 151 insertions"), "{answer}");
    assert!(found.stdout.contains("#0 main at"), "no backtrace:\n{}", found.stdout);
    assert_eq!(found.bound, 10);
    // The last hit where the check holds is the one before.
    let last = find(dir, &["trace", "--debug", "./list", "--last-true", "--at", "list.c:42"]);
    assert_eq!(hit_of(&last.answer.unwrap()), 150);

    // gdb opens at the hit: the 151st insertion is done, the list starts at 2.
    let out = rdb_in(
        dir,
        &[
            "find",
            "trace",
            "--debug",
            "./list",
            "--then",
            "gdb",
            "--",
            "-batch",
            "-ex",
            "print i",
            "-ex",
            "print head->value",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("$1 = 151") && stdout.contains("$2 = 2"), "{stdout}\n{}", text(&out.stderr));
}

/// jobq loses a job when two random priorities collide: `queue.len() == JOBS_CREATED` at the top
/// of each iteration fails from the first collision on. An interrupted search resumes with
/// `--between`.
pub fn jobq_losing_a_job() {
    let tmp = scratch("find-jobq");
    let app = SampleApp::plain("jobq", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    // 300 priorities out of 64: a collision is certain.
    rdb_tests::record(&app.dir, Path::new("trace"), &["target/debug/jobq", "300"]);
    app.instrument();
    add_check(
        &app.dir.join("src/main.rs"),
        "rdb_begin!();",
        "        rdb_check!(queue.len() == JOBS_CREATED.load(Ordering::Relaxed), \"{} queued, {} created\", queue.len(), JOBS_CREATED.load(Ordering::Relaxed));",
    );
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let found = bisect_equals_scan(&app.dir, &["trace", "--debug", "target/rdb/debug/jobq", "--region", "1"]);
    let answer = found.answer.unwrap();
    let hit = hit_of(&answer);
    assert!(answer.contains(&format!("{} queued, {} created", hit - 2, hit - 1)), "{answer}");
    // Resumed from an interval that holds the answer, the same hit.
    let resumed = find(
        &app.dir,
        &["trace", "--debug", "target/rdb/debug/jobq", "--region", "1", "--between", "1", &(hit + 5).to_string()],
    );
    assert_eq!(resumed.answer.as_deref(), Some(answer.as_str()));
}

/// The bc-like VM's stack depth: `BranchIfFalse` needs a value on the stack; the `for (;;)` bug
/// pops an empty one at the last instruction the VM runs.
pub fn minibc_stack_depth() {
    let tmp = scratch("find-minibc");
    let app = SampleApp::plain("minibc", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    rdb_tests::record(&app.dir, Path::new("trace"), &["target/debug/minibc", "examples/loops.bc"]);
    app.instrument();
    add_check(
        &app.dir.join("src/vm.rs"),
        "rdb_begin!();",
        "            rdb_check!(!matches!(inst, Inst::BranchIfFalse(_)) || !self.stack.is_empty(), \"pc={pc} {:?} on stack {:?}\", inst, self.stack);",
    );
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let found = bisect_equals_scan(&app.dir, &["trace", "--debug", "target/rdb/debug/minibc", "--at", "src/vm.rs:58"]);
    let answer = found.answer.unwrap();
    assert!(answer.contains("BranchIfFalse") && answer.ends_with("on stack []"), "{answer}");
}

/// The racy counter: `COUNTER == seen` just before a thread's store fails when the store loses
/// updates. It is not monotonic (a later store may lose none): the bisection finds a hit where
/// it fails right after one where it held, one of the changes the scan lists, the same every time.
pub fn race_lost_update() {
    let tmp = scratch("find-race");
    let trace = tmp.path().join("trace");
    let (app, rec) = SampleApp::race_recorded_with_chaos(tmp.path(), &trace);
    assert!(text(&rec.stderr).contains("rdb: recorded"), "{}", text(&rec.stderr));
    app.instrument();
    add_check(
        &app.dir.join("src/main.rs"),
        "rdb_begin!();",
        "        rdb_check!(COUNTER.load(Ordering::Relaxed) == seen, \"thread {t} op {i} read {seen}, the counter is {} now\", COUNTER.load(Ordering::Relaxed));",
    );
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let args = [trace.to_str().unwrap(), "--debug", "target/rdb/debug/race"];
    let scan = find(&app.dir, &[&args[..], &["--scan"]].concat());
    let Some(&last_change) = scan.failures_after_passes.iter().filter(|&&h| h > 1).max() else {
        // No store lost an update in this recording: nothing to search.
        assert!(scan.answer.is_none(), "{}", scan.stdout);
        return;
    };
    // Between hit 1 (it holds there: no store has happened yet) and the last store that lost
    // updates, the bisection lands on a change the scan saw.
    let hi = last_change.to_string();
    let between = [&args[..], &["--between", "1", &hi]].concat();
    let bisect = find(&app.dir, &between);
    let answer = bisect.answer.clone().expect("a hit between a pass and a failure");
    let hit = hit_of(&answer);
    assert!(
        scan.failures_after_passes.contains(&hit),
        "hit {hit} is no change the scan saw:
{}",
        scan.stdout
    );
    let line = scan.stdout.lines().find(|l| l.trim_start().starts_with(&format!("hit {hit}: fails"))).unwrap();
    assert!(line.ends_with(&format!("({answer})")), "{line}\n{answer}");
    assert_eq!(find(&app.dir, &between).answer, bisect.answer, "the same search found another hit");
}

/// Ctrl-C on the terminal while the bisection probes: `rdb find` prints the interval known so
/// far and the command that resumes it, and exits 130; the resumed search finds what an
/// uninterrupted one finds. (The list's check spins a while in the debug code, so that the
/// bisection lasts long enough to be interrupted.)
pub fn ctrl_c_prints_the_interval_and_the_resumed_search_finds_the_same() {
    let tmp = scratch("find-ctrl-c");
    let dir = tmp.path();
    list_recorded(
        dir,
        "    for (volatile long spin = 0; spin < 300000000; spin++) {}\n    rdb_check(len == i, \"%ld nodes after %d insertions\", len, i);",
    );
    let whole = find(dir, &["trace", "--debug", "./list"]).answer.expect("an answer");
    assert_eq!(hit_of(&whole), 151, "{whole}");

    // Under `script`, rdb's stderr is a terminal (the progress line shows, after 100 ms rather
    // than a second) and a 0x03 written to it is the terminal's Ctrl-C: SIGINT to rdb's
    // process group.
    let command = format!("{} find trace --debug ./list", tools().join("rdb").display());
    let mut child = Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .current_dir(dir)
        .env_remove("RDB_NO_PROGRESS")
        .env("RDB_PROGRESS_DELAY_MS", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut screen = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = screen.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            let _ = tx.send(String::from_utf8_lossy(&all).into_owned());
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    // The progress line of the bisection ("probes: N done of at most M"), then Ctrl-C.
    let mut stdin = child.stdin.take().unwrap();
    let mut seen = String::new();
    while !seen.contains("probes: ") {
        match rx.recv() {
            Ok(s) => seen = s,
            Err(_) => panic!("rdb find ended before its progress line showed the probes:\n{seen}"),
        }
    }
    stdin.write_all(b"\x03").unwrap();
    stdin.flush().unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    let screen = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{screen}");
    assert!(screen.contains("rdb: interrupted after "), "{screen}");
    let resume = screen.lines().find_map(|l| l.split_once("rdb: resume with: rdb find ")).map(|(_, r)| r.trim());
    let resume = resume.unwrap_or_else(|| panic!("no command to resume:\n{screen}"));
    let args: Vec<&str> = resume.split_whitespace().collect();
    let between = args.iter().position(|&a| a == "--between").expect("--between");
    let (lo, hi): (u64, u64) = (args[between + 1].parse().unwrap(), args[between + 2].parse().unwrap());
    assert!(lo < 151 && 151 <= hi, "the interval {lo}..{hi} does not hold the answer:\n{screen}");
    let resumed = find(dir, &args);
    assert_eq!(resumed.answer.as_deref(), Some(whole.as_str()), "{}", resumed.stdout);
}

/// Counting stubs (the counting replay without a stop per hit) number a region's hits in three
/// threads as the breakpoints (`RDB_FIND_BREAKPOINTS=1`, a stop at every hit) and the scan do,
/// with checkpoints and their checks taken by the counting replay.
pub fn counting_stubs_number_hits_as_breakpoints_do() {
    let tmp = scratch("find-counting");
    let dir = tmp.path();
    std::fs::copy(rdb_tests::program("support/find_counting_threads.c"), dir.join("threads.c")).unwrap();
    run_ok(
        "rdb-clang",
        timed(600, rdb_clang()).args(["-O0", "-g", "threads.c", "-lpthread", "-o", "threads"]).current_dir(dir),
    );
    rdb_tests::record(dir, Path::new("trace"), &["./threads", "3000", "12000"]);
    let stubs = bisect_equals_scan(dir, &["trace", "--debug", "./threads"]);
    let out = rdb_in(dir, &["find", "trace", "--debug", "./threads"]);
    assert!(text(&out.stderr).contains("counted without a stop"), "{}", text(&out.stderr));
    let out = rdb_tests::output(
        rdb_tests::rdb(&["find", "trace", "--debug", "./threads"]).env("RDB_FIND_BREAKPOINTS", "1").current_dir(dir),
    );
    assert!(text(&out.stderr).contains("a stop at every hit"), "{}", text(&out.stderr));
    let stops = text(&out.stdout).lines().next().map(str::to_string);
    assert_eq!(stubs.answer, stops, "counting stubs and breakpoints differ");
    let answer = stubs.answer.unwrap();
    assert!(answer.contains("threads.c:21: total "), "{answer}");
    assert!(hit_of(&answer) > 1000, "{answer}");
}

/// A region with two copies (`describe<T>` of the bank sample, monomorphized for `Vec<i64>` and
/// `usize`): the counting stubs of both copies share one count, and hit 2 (the second copy)
/// is found as the breakpoints and the scan find it.
pub fn counting_stubs_count_the_copies_of_a_generic_region() {
    let tmp = scratch("find-copies");
    let app = SampleApp::plain("bank", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    rdb_tests::record(&app.dir, Path::new("trace"), &["target/debug/bank"]);
    app.instrument();
    add_check(
        &app.dir.join("src/main.rs"),
        "println!(\"[rdb] describe {label} = {:?}\", value);",
        "    rdb_check!(label == \"balances\", \"described {label}\");",
    );
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let args = ["trace", "--debug", "target/rdb/debug/bank", "--at", "src/main.rs:25"];
    let stubs = bisect_equals_scan(&app.dir, &args);
    let with_find = [&["find"], &args[..]].concat();
    let out = rdb_in(&app.dir, &with_find);
    assert!(text(&out.stderr).contains("counted without a stop"), "{}", text(&out.stderr));
    let out = rdb_tests::output(rdb_tests::rdb(&with_find).env("RDB_FIND_BREAKPOINTS", "1").current_dir(&app.dir));
    let stops = text(&out.stdout).lines().next().map(str::to_string);
    assert_eq!(stubs.answer, stops, "counting stubs and breakpoints differ");
    let answer = stubs.answer.unwrap();
    assert_eq!(hit_of(&answer), 2, "{answer}");
    assert!(answer.ends_with("described threads"), "{answer}");
}

/// A search over a trace cut short (a killed recorder: its last chunk incomplete) says so and
/// exits 4, as `rdb replay` and `rdb gdb` do, with counting stubs, with a stop at every hit, in
/// a scan and over a place's changes: never an answer about the hits before the cut as if the
/// program had ended there.
pub fn a_search_on_a_trace_cut_short_says_so_and_exits_4() {
    let tmp = scratch("find-cut");
    let dir = tmp.path();
    std::fs::copy(rdb_tests::program("support/lines_slowly.c"), dir.join("lines.c")).unwrap();
    run_ok("clang-14", timed(600, "clang-14").args(["-O0", "-g", "lines.c", "-o", "lines"]).current_dir(dir));
    rdb_tests::record(dir, Path::new("trace"), &["./lines"]);
    // Cut the events file in the middle of its last chunk of events (see rdb-runtime's
    // `trace/chunk.rs`: a 52-byte header whose bytes 4..8 are the payload's length).
    std::fs::remove_file(dir.join("trace/summary.json")).unwrap();
    let events = dir.join("trace/events");
    let bytes = std::fs::read(&events).unwrap();
    let mut chunks = Vec::new();
    let mut at = 0;
    while at + 52 <= bytes.len() {
        chunks.push((at, &bytes[at..at + 4] == b"RDBC"));
        at += 52 + u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    let starts: Vec<usize> = chunks.iter().filter(|(_, events)| *events).map(|(at, _)| *at).collect();
    assert!(starts.len() >= 2, "the recording of over a second has several chunks: {chunks:?}");
    let cut = starts[starts.len() - 1] as u64 + 60;
    std::fs::OpenOptions::new().write(true).open(&events).unwrap().set_len(cut).unwrap();
    insert_after(&dir.join("lines.c"), "#include <unistd.h>", 0, "#include \"rdb.h\"");
    insert_after(
        &dir.join("lines.c"),
        "printed++;",
        0,
        "        rdb_begin\n        rdb_check(i >= 0, \"line %d\", i);\n        rdb_end",
    );
    run_ok("rdb-clang", timed(600, rdb_clang()).args(["-O0", "-g", "lines.c", "-o", "lines"]).current_dir(dir));
    for (args, stops) in
        [(&[][..], false), (&[][..], true), (&["--scan"][..], false), (&["--expr", "printed", "--changes"][..], false)]
    {
        let mut command = rdb_tests::rdb(&[&["find", "trace", "--debug", "./lines"], args].concat());
        if stops {
            command.env("RDB_FIND_BREAKPOINTS", "1");
        }
        let out = rdb_tests::output(command.current_dir(dir));
        let said = format!("{args:?} (a stop at every hit: {stops}):\n{}", rdb_tests::describe(&out));
        assert_eq!(out.status.code(), Some(rdb_tests::EXIT_ENDS_EARLY), "{said}");
        // The search replayed the trace up to its cut (the chunks before it hold most of the run).
        let after = text(&out.stderr)
            .split("the trace ends early after ")
            .nth(1)
            .map(|r| r.split(' ').next().unwrap().to_string());
        assert!(after.is_some_and(|n| n.parse::<u64>().unwrap() > 100), "{said}");
        assert!(!text(&out.stdout).contains("hit "), "{said}");
    }
}
