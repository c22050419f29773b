//! `rdb find --expr PLACE` (issue 13, "anywhere"): every change of a place over a program
//! static, each named by its writing instruction, source line and backtrace. Checked against an
//! independent linear check (the `on_write` event callback, which sees every write of a replay
//! in order; gdb's own watch of an expression on a live run), against the expectations beside
//! the programs of tests/fixtures/find_expr, against the instructions `objdump` shows at the
//! addresses named, and by opening gdb at a change.

use std::path::Path;

use rdb_tests::{
    assert_success, clang, copy_files, output, rdb_in, repo_root, run_cargo, run_ok, rustc, scratch, text, timed,
    SampleApp,
};

use crate::callbacks::cargo_rdb_replay;

/// One change as `rdb find --expr` prints it: `event E, thread T, FILE:LINE (AT): OLD -> NEW`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    event: u64,
    file: String,
    line: u32,
    at: String,
    old: String,
    new: String,
    /// The backtrace's lines.
    backtrace: Vec<String>,
}

/// Runs `rdb find ARGS` in `dir`: its changes and its output (the exit status must be `code`).
fn find_changes(dir: &Path, args: &[&str], code: i32) -> (Vec<Change>, String) {
    let out = rdb_in(dir, &[&["find"], args].concat());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "rdb find {args:?}:\n{stdout}\n{stderr}");
    let mut changes: Vec<Change> = Vec::new();
    for l in stdout.lines() {
        if let Some(bt) = l.strip_prefix("  ") {
            changes.last_mut().expect("a backtrace after a change").backtrace.push(bt.to_string());
            continue;
        }
        let rest = l.strip_prefix("event ").unwrap_or_else(|| panic!("not a change: {l}\n{stdout}"));
        let (event, rest) = rest.split_once(", thread ").unwrap();
        let (_, rest) = rest.split_once(", ").unwrap();
        let (place, rest) = rest.split_once(" (").unwrap();
        let (at, values) = rest.split_once("): ").unwrap();
        let (old, new) = values.split_once(" -> ").unwrap();
        let (file, line) = place.rsplit_once(':').unwrap();
        changes.push(Change {
            event: event.parse().unwrap(),
            file: file.to_string(),
            line: line.parse().unwrap(),
            at: at.to_string(),
            old: old.to_string(),
            new: new.to_string(),
            backtrace: Vec::new(),
        });
    }
    (changes, format!("{stdout}\n{stderr}"))
}

/// No change is missing: each one starts from the value the one before left (the first from
/// `initial`).
fn assert_chained(changes: &[Change], initial: &str, all: &str) {
    let mut value = initial.to_string();
    for c in changes {
        assert_eq!(c.old, value, "a change between these two was not listed:\n{all}");
        value = c.new.clone();
    }
}

/// The file name of a path.
fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap()
}

/// The events fixture's `bank::AUDITED` (an `AtomicU64`) changes twice in `bank::transfer`:
/// the changes `rdb find --expr` lists (old, new, function and line) are the ones the
/// `#[on_write]` callback of the same static sees in a replay, where each write is reported;
/// the same in two searches; `--first-change` stops at the first.
pub fn rust_static_changes_are_the_ones_the_write_callback_sees() {
    let tmp = scratch("find-expr-events");
    let app = SampleApp::fixture("events", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    rdb_tests::record(&app.dir, &trace, &[app.dir.join("target/debug/events").to_str().unwrap()]);
    let args =
        [trace.to_str().unwrap(), "--debug", "target/debug/events", "--expr", "crate::bank::AUDITED", "--changes"];
    let (changes, all) = find_changes(&app.dir, &args, 0);
    // The linear check: every write the callback sees, the changing ones kept.
    app.instrument();
    let out = cargo_rdb_replay(&app.dir, &trace);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let seen: Vec<(String, String, String)> = text(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("[rdb] AUDITED "))
        .filter(|l| l.contains("(changed: true)"))
        .map(|l| {
            let (values, at) = l.split_once(" (changed: true) at ").unwrap();
            let (old, new) = values.split_once(" -> ").unwrap();
            (old.to_string(), new.to_string(), at.to_string())
        })
        .collect();
    assert_eq!(seen.len(), 2, "{}", text(&out.stdout));
    let found: Vec<(String, String, String)> = changes
        .iter()
        .map(|c| {
            // The statement's frame in the backtrace names its function.
            let place = format!("{}:{}:", c.file, c.line);
            let frame = c.backtrace.iter().find(|f| f.contains(&place)).unwrap_or_else(|| panic!("{all}"));
            let function = frame.split_whitespace().nth(1).unwrap();
            (c.old.clone(), c.new.clone(), format!("{function} line {}", c.line))
        })
        .collect();
    assert_eq!(found, seen, "rdb find and the write callback differ:\n{all}");
    assert_chained(&changes, "0", &all);
    for c in &changes {
        assert_eq!(base(&c.file), "bank.rs", "{all}");
        assert!(c.at.contains("in core::sync::atomic::atomic_add"), "the writing instruction: {}\n{all}", c.at);
    }
    // Called from main's two transfers.
    assert!(changes[0].backtrace.iter().any(|f| f.contains("events::main at") && f.contains("main.rs:32:")), "{all}");
    assert!(changes[1].backtrace.iter().any(|f| f.contains("events::main at") && f.contains("main.rs:33:")), "{all}");
    let (again, _) = find_changes(&app.dir, &args, 0);
    assert_eq!(again, changes, "a second search found other changes");
    let first = [&args[..5], &["--first-change"]].concat();
    let (one, _) = find_changes(&app.dir, &first, 0);
    assert_eq!(one, changes[..1], "--first-change");
}

/// The expectations beside a program of `tests/fixtures/find_expr` (`overrun`, `list`):
/// (place, `FILE:LINE`, old, new).
fn expected_changes(program: &str) -> Vec<(String, String, String, String)> {
    let text =
        std::fs::read_to_string(repo_root().join(format!("tests/fixtures/find_expr/{program}.expected"))).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, rest) = l.split_once(' ').unwrap();
            let (place, values) = rest.split_once(' ').unwrap();
            let (old, new) = values.split_once(" -> ").unwrap();
            (name.to_string(), place.to_string(), old.to_string(), new.to_string())
        })
        .collect()
}

/// A C global corrupted by an out-of-bounds store (`table[4]` is `limit`) and a global the
/// kernel writes (`read` into `header`): the changes are the expected ones, each writing
/// instruction is a store to memory in `objdump`, the kernel's write is the `read` system
/// call's event, `--then gdb` stops right after the overrun, a static larger than the debug
/// registers hold is watched with page protection, and what cannot be watched is refused
/// saying why.
pub fn c_global_overrun_and_kernel_write() {
    let tmp = scratch("find-expr-c");
    let dir = tmp.path();
    copy_files(&repo_root().join("tests/fixtures/find_expr"), dir);
    clang(&dir.join("overrun.c"), &dir.join("overrun"), &["-O0", "-g"], &[]);
    rdb_tests::record(dir, Path::new("trace"), &["./overrun"]);
    let mut found = Vec::new();
    let mut all_changes = Vec::new();
    for name in ["limit", "header"] {
        let (changes, all) = find_changes(dir, &["trace", "--debug", "./overrun", "--expr", name, "--changes"], 0);
        for c in &changes {
            found.push((name.to_string(), format!("{}:{}", base(&c.file), c.line), c.old.clone(), c.new.clone()));
        }
        all_changes.push((name, changes, all));
    }
    assert_eq!(found, expected_changes("overrun"));
    assert_chained(&all_changes[0].1, "100", &all_changes[0].2);
    // Each instruction named is a store into the static's memory.
    let dump = text(
        &run_ok("objdump", timed(60, "objdump").args(["-d", "--no-show-raw-insn", "overrun"]).current_dir(dir)).stdout,
    );
    let (_, limit, all) = &all_changes[0];
    for c in limit {
        let address =
            u64::from_str_radix(c.at.split_whitespace().next().unwrap().trim_start_matches("0x"), 16).unwrap();
        // A PIE runs at 0x555555554000 (rdb replays without address randomization).
        let relative = format!("{:x}:", address - 0x5555_5555_4000);
        let instruction =
            dump.lines().find(|l| l.trim_start().starts_with(&relative)).unwrap_or_else(|| panic!("{relative} {all}"));
        let to_memory = instruction.contains("<limit>") || instruction.trim_end().ends_with(')');
        assert!(instruction.contains("mov") && to_memory, "not a store: {instruction}\n{all}");
    }
    assert!(limit[1].at.ends_with(" in fill"), "{all}");
    assert!(
        limit[1].backtrace[1].starts_with("#1 main at") && limit[1].backtrace[1].contains("overrun.c:28:"),
        "{all}"
    );
    // The kernel's write: the read system call's own event.
    let (_, header, all) = &all_changes[1];
    assert!(header[0].at.starts_with("read system call at"), "{all}");
    let info = text(&rdb_in(dir, &["info", "trace", "--events"]).stdout);
    let event = format!("#{}", header[0].event);
    let listed = info.lines().find(|l| l.split_whitespace().next() == Some(event.as_str())).unwrap();
    assert!(listed.contains(" read(0x3, ") && listed.ends_with(") = 8"), "{listed}\n{all}\n{info}");

    // gdb opens right after the out-of-bounds store: i is 4, limit holds it.
    let out = rdb_in(
        dir,
        &[
            "find",
            "trace",
            "--debug",
            "./overrun",
            "--expr",
            "limit",
            "--change",
            "2",
            "--then",
            "gdb",
            "--",
            "-batch",
            "-ex",
            "print i",
            "-ex",
            "print limit",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("$1 = 4") && stdout.contains("$2 = 40"), "{stdout}\n{}", text(&out.stderr));
    // No change 4 of limit.
    let out = rdb_in(dir, &["find", "trace", "--debug", "./overrun", "--expr", "limit", "--change", "4"]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no change 4"), "{}", text(&out.stderr));

    // 64 bytes, more than the debug registers hold: watched with page protection, the
    // strcpy's stores (as many as the C library's copy makes) at its line, the last one
    // leaving "written".
    let (journal, all) = find_changes(dir, &["trace", "--debug", "./overrun", "--expr", "journal"], 0);
    assert!(all.contains("watched with page protection"), "{all}");
    assert!(!journal.is_empty(), "{all}");
    let initial: String = "too large for the debug registers"
        .bytes()
        .chain(std::iter::repeat_n(0, 31))
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_chained(&journal, &format!("0x{initial} (bytes)"), &all);
    for c in &journal {
        assert_eq!(format!("{}:{}", base(&c.file), c.line), "overrun.c:37", "{all}");
    }
    let written: String = "written\0".bytes().map(|b| format!("{b:02x}")).collect();
    assert!(journal.last().unwrap().new.starts_with(&format!("0x{written}")), "{all}");

    // Refused, saying why: an index past the array (the overrun's own), a name the DWARF
    // does not have.
    for (expr, why) in [
        ("table[4]", "column 7: index 4 is out of range: `table` (int[4]) has 4 elements"),
        ("nosuch", "no static `nosuch`"),
    ] {
        let out = output(rdb_tests::rdb(&["find", "trace", "--debug", "./overrun", "--expr", expr]).current_dir(dir));
        assert_eq!(out.status.code(), Some(1), "{expr}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(why), "{expr}: {}", text(&out.stderr));
    }
}

/// The race sample's `COUNTER`, stored by three threads (recorded under the chaos scheduler,
/// losing updates): the watch follows the threads created after it was set, every change is
/// the worker's store and starts from the value the one before left, the last one is the
/// count the program printed, and a second search lists the same changes; `--first COND` finds
/// the listing's first change that satisfies it.
pub fn racy_counter_changes_in_every_thread() {
    let tmp = scratch("find-expr-race");
    let trace = tmp.path().join("trace");
    let (app, rec) = SampleApp::race_recorded_with_chaos(tmp.path(), &trace);
    let printed = text(&rec.stdout);
    let count = printed.strip_prefix("final count ").and_then(|r| r.split_whitespace().next()).unwrap().to_string();
    let args = [trace.to_str().unwrap(), "--debug", "target/debug/race", "--expr", "COUNTER", "--changes"];
    let (changes, all) = find_changes(&app.dir, &args, 0);
    assert_chained(&changes, "0", &all);
    assert_eq!(changes.last().map(|c| c.new.as_str()), Some(count.as_str()), "{printed}\n{all}");
    let store = std::fs::read_to_string(app.dir.join("src/main.rs"))
        .unwrap()
        .lines()
        .position(|l| l.contains("COUNTER.store(seen + 1"))
        .unwrap() as u32
        + 1;
    for c in &changes {
        assert_eq!((base(&c.file), c.line), ("main.rs", store), "{all}");
        assert!(c.backtrace.iter().any(|f| f.contains("race::worker at")), "{all}");
    }
    let threads: std::collections::BTreeSet<&str> =
        all.lines().filter_map(|l| l.strip_prefix("event ")).filter_map(|l| l.split(", ").nth(1)).collect();
    assert_eq!(threads.len(), 3, "changes by {threads:?}:\n{all}");
    let (again, _) = find_changes(&app.dir, &args, 0);
    assert_eq!(again, changes, "a second search found other changes");
    // `--first 'value >= K'` (K the value after the middle change) stops at the listing's first
    // change to at least K, in whichever thread made it.
    let k: u64 = changes[changes.len() / 2].new.parse().unwrap();
    let linear = changes.iter().position(|c| c.new.parse::<u64>().unwrap() >= k).unwrap();
    let cond = format!("value >= {k}");
    let (first, out) = find_changes(&app.dir, &[&args[..5], &["--first", &cond]].concat(), 0);
    assert_eq!(first, changes[linear..=linear], "--first {cond:?}:\n{out}");
}

/// Places over C globals (`tests/fixtures/find_expr/list.c`): `LIST.head->next->value` changes
/// by stores to the value and to the pointers on its way (a node pushed in front, the buggy
/// unlink, the kernel's `read` into `next`), and the watch follows the place (the store into
/// the node `next` then points to is seen); fields and constant indices; the changes are the
/// expected ones, gdb opened at each change prints the new value for the same expression, and
/// gdb's own watch of the expression on a live run (the linear check) lists the same changes
/// up to the kernel's store, which it cannot see.
/// A place larger than the debug registers hold behind a pointer is watched with page
/// protection, which follows the pointer too (the old target's writes are not changes). Bad
/// places are refused with the column and the reason.
pub fn c_places_follow_their_pointers() {
    let tmp = scratch("find-expr-list");
    let dir = tmp.path();
    copy_files(&repo_root().join("tests/fixtures/find_expr"), dir);
    clang(&dir.join("list.c"), &dir.join("list"), &["-O0", "-g"], &[]);
    rdb_tests::record(dir, Path::new("trace"), &["./list"]);
    let mut found = Vec::new();
    let mut value_changes = Vec::new();
    for expr in ["LIST.head->next->value", "CFG.limits[2]", "CFG.range.hi"] {
        let (changes, all) = find_changes(dir, &["trace", "--debug", "./list", "--expr", expr, "--changes"], 0);
        for c in &changes {
            found.push((expr.to_string(), format!("{}:{}", base(&c.file), c.line), c.old.clone(), c.new.clone()));
        }
        if expr.starts_with("LIST") {
            assert!(all.contains("watched with 3 debug registers"), "{all}");
            value_changes = changes;
        }
    }
    assert_eq!(found, expected_changes("list"));
    // The unlink is named by drop_first's store to `first->next`, called from main.
    assert!(value_changes[4].at.ends_with(" in drop_first"), "{value_changes:?}");
    assert!(value_changes[5].at.starts_with("read system call at"), "{value_changes:?}");
    // gdb, at each change with a value, evaluates the same expression to the new value.
    for (n, c) in value_changes.iter().enumerate().filter(|(_, c)| !c.new.starts_with('<')) {
        let change = (n + 1).to_string();
        let args = ["trace", "--debug", "./list", "--expr", "LIST.head->next->value", "--change", &change];
        let out = rdb_in(
            dir,
            &[&["find"][..], &args, &["--then", "gdb", "--", "-batch", "-ex", "print LIST.head->next->value"]].concat(),
        );
        let stdout = text(&out.stdout);
        assert!(stdout.contains(&format!("$1 = {}", c.new)), "change {change}: {stdout}\n{}", text(&out.stderr));
    }

    // gdb's own watch of the expression on a live run of the program (it follows the
    // pointers too, with hardware watchpoints) sees the same changes by the program's stores,
    // a value that cannot be read being `<unreadable>` there; it misses the kernel's store
    // into `next` (no debug register fires for it) and so everything after it.
    let continues: Vec<&str> = std::iter::repeat_n(["-ex", "continue"], 12).flatten().collect();
    // (gdb's status is 1: the `continue`s after the program exited fail.)
    let live = text(
        &output(
            timed(120, "gdb")
                .args(["-nx", "-batch", "-ex", "watch LIST.head->next->value", "-ex", "run"])
                .args(&continues)
                .arg("./list")
                .current_dir(dir),
        )
        .stdout,
    );
    assert!(live.contains("exited normally"), "{live}");
    let olds = live.lines().filter_map(|l| l.strip_prefix("Old value = "));
    let by_gdb: Vec<(String, String)> = olds
        .zip(live.lines().filter_map(|l| l.strip_prefix("New value = ")))
        .map(|(o, n)| (o.into(), n.into()))
        .collect();
    let unreadable = |v: &str| if v.starts_with("<none: ") { "<unreadable>".to_string() } else { v.to_string() };
    let by_rdb: Vec<(String, String)> = value_changes
        .iter()
        .take_while(|c| !c.at.contains("system call"))
        .map(|c| (unreadable(&c.old), unreadable(&c.new)))
        .filter(|(o, n)| o != n)
        .collect();
    assert_eq!(by_rdb, by_gdb, "rdb find and gdb's watch on a live run differ:\n{live}");

    // 48 bytes behind a pointer: page protection. The dynamic loader relocates JOURNAL
    // (the place had no readable value before), then strcpy writes FIRST, JOURNAL moves to
    // SECOND and strcpy writes it; the later strcpy into FIRST is not a change.
    let (journal, all) = find_changes(dir, &["trace", "--debug", "./list", "--expr", "JOURNAL->text"], 0);
    assert!(all.contains("watched with page protection"), "{all}");
    assert!(journal[0].old.starts_with("<none: `JOURNAL->text` at "), "{all}");
    let hex =
        |s: &str| -> String { s.bytes().chain(std::iter::repeat(0)).take(48).map(|b| format!("{b:02x}")).collect() };
    assert_eq!(journal[0].new, format!("0x{} (bytes)", hex("first")), "{all}");
    let mut lines: Vec<String> = journal[1..].iter().map(|c| format!("{}:{}", base(&c.file), c.line)).collect();
    lines.dedup();
    assert_eq!(lines, ["list.c:71", "list.c:72", "list.c:73"], "{all}");
    assert_eq!(journal.last().unwrap().new, format!("0x{} (bytes)", hex("second, written")), "{all}");
    assert_chained(&journal, &journal[0].old, &all);

    for (expr, why) in [
        ("LIST.head->nxt", "column 12: struct node has no field `nxt` (its fields: value, next)"),
        ("CFG.limits[4]", "column 12: index 4 is out of range: `CFG.limits` (int[4]) has 4 elements"),
        ("LIST.head.value", "column 10: `LIST.head` is a pointer (struct node *): write `LIST.head->value`"),
        ("CFG->range", "column 4: `CFG` is not a pointer (struct config): write `CFG.range`"),
        ("CFG.limits[i]", "column 12: only constant indices are supported"),
        ("LIST + 1", "column 6: unsupported syntax, found `+ 1`"),
        ("*CFG", "column 1: `CFG` (struct config) is not a pointer"),
    ] {
        let out = output(rdb_tests::rdb(&["find", "trace", "--debug", "./list", "--expr", expr]).current_dir(dir));
        assert_eq!(out.status.code(), Some(1), "{expr}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(why), "{expr}: {}", text(&out.stderr));
    }
}

/// Places over Rust statics (`tests/fixtures/find_expr/queue.rs`): `STATE.jobs[1].id` (a
/// `Vec` element) changes when the buggy `finish_first` removes job 1 (the C library's
/// `memmove`, named by the `remove` line), follows the buffer when it grows (the allocator
/// frees the old one, which the place reads until the `Vec` stores its new pointer: changes
/// at the `push` line, the value back to 3), and sees the later store into the new buffer;
/// through `Option<Box<Node>>` (auto-deref), a raw pointer, an array, a tuple field and a
/// slice pointed elsewhere (relocated by the dynamic loader first). The changes are the
/// expected ones, and the same in a second search. Bad places are refused with the column.
pub fn rust_places_follow_vec_box_and_pointers() {
    let tmp = scratch("find-expr-queue");
    let dir = tmp.path();
    copy_files(&repo_root().join("tests/fixtures/find_expr"), dir);
    rustc(&dir.join("queue.rs"), &dir.join("queue"), &["-g", "-C", "opt-level=0"]);
    rdb_tests::record(dir, Path::new("trace"), &["./queue"]);
    let search = |expr: &str| find_changes(dir, &["trace", "--debug", "./queue", "--expr", expr, "--changes"], 0);
    let (jobs, all) = search("STATE.jobs[1].id");
    assert_eq!(search("STATE.jobs[1].id").0, jobs, "a second search found other changes");
    let at = |c: &Change| format!("{}:{} {} -> {}", base(&c.file), c.line, c.old, c.new);
    assert_eq!(at(&jobs[0]), "queue.rs:39 <none: index 1 is out of range for `STATE.jobs`> -> 2", "{all}");
    assert_eq!(at(&jobs[1]), "queue.rs:33 2 -> 3", "{all}");
    assert_eq!(at(jobs.last().unwrap()), "queue.rs:45 3 -> 9", "{all}");
    let growth = &jobs[2..jobs.len() - 1];
    assert!(growth.iter().all(|c| base(&c.file) == "queue.rs" && c.line == 43), "{all}");
    assert_eq!(growth.last().map(|c| c.new.as_str()), Some("3"), "{all}");
    assert_chained(&jobs, "<none: index 1 is out of range for `STATE.jobs`>", &all);
    assert!(all.contains("watched with 3 debug registers"), "{all}");

    let mut found = Vec::new();
    for expr in ["STATE.head.next.value", "(*CURRENT).value", "STATE.slots[2]", "STATE.pair.1", "STATE.names[1]"] {
        let (changes, all) = search(expr);
        let mut changes = changes.as_slice();
        if expr == "STATE.names[1]" {
            // The slice's pointer, relocated by the dynamic loader before main.
            assert!(changes[0].old.starts_with("<none: `STATE.names[1]` at 0x"), "{all}");
            assert_eq!(changes[0].new, "20", "{all}");
            changes = &changes[1..];
        }
        for c in changes {
            found.push((expr.to_string(), format!("{}:{}", base(&c.file), c.line), c.old.clone(), c.new.clone()));
        }
    }
    assert_eq!(found, expected_changes("queue"));

    for (expr, why) in [
        ("STATE.jobs[1].idd", "column 15: queue::Job has no field `idd` (its fields: id, done)"),
        ("STATE.slots[4]", "column 13: index 4 is out of range: `STATE.slots` ([u16; 4]) has 4 elements"),
        ("STATE.pair.2", "column 12: (u8, u32) has no field `2` (its fields: 0, 1)"),
        ("STATE.head->value", "column 11: `->` is C's"),
        ("STATE.jobs.len()", "column 15: a method call is not a place"),
        ("*STATE.pair", "column 1: `STATE.pair` ((u8, u32)) is not a pointer"),
    ] {
        let out = output(rdb_tests::rdb(&["find", "trace", "--debug", "./queue", "--expr", expr]).current_dir(dir));
        assert_eq!(out.status.code(), Some(1), "{expr}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(why), "{expr}: {}", text(&out.stderr));
    }
}

/// `--first 'value OP N'` over a place (`tests/fixtures/find_expr/list.c`'s
/// `LIST.head->next->value`, whose value is none, then 30, 20, 21, 30, 77 by the kernel's
/// `read`, 78): for each condition, the change found is the first one of the linear listing
/// (`--changes`) after which the condition holds, with the same statement and backtrace, and a
/// second search finds the same; a value that is none satisfies no condition; a condition that
/// never holds exits 6, one that holds from the start says so; `--then gdb` opens gdb right after
/// the change found; a condition over a value that is no integer is refused.
pub fn expr_first_condition_is_the_linear_listings_first() {
    let tmp = scratch("find-expr-first");
    let dir = tmp.path();
    copy_files(&repo_root().join("tests/fixtures/find_expr"), dir);
    clang(&dir.join("list.c"), &dir.join("list"), &["-O0", "-g"], &[]);
    rdb_tests::record(dir, Path::new("trace"), &["./list"]);
    let place = ["trace", "--debug", "./list", "--expr", "LIST.head->next->value"];
    let (all_changes, all) = find_changes(dir, &[&place[..], &["--changes"]].concat(), 0);
    let values: Vec<Option<i64>> = all_changes.iter().map(|c| c.new.parse().ok()).collect();
    assert_eq!(values, [None, Some(30), Some(20), Some(21), Some(30), Some(77), Some(78)], "{all}");
    type Check = fn(i64) -> bool;
    let conditions: [(&str, Check); 7] = [
        ("value == 30", |v| v == 30),
        ("value < 25", |v| v < 25),
        ("value >= 0x4d", |v| v >= 77),
        ("value != 30", |v| v != 30),
        ("value > 77", |v| v > 77),
        ("value <= 21", |v| v <= 21),
        ("value > -1", |v| v > -1),
    ];
    let mut numbers = Vec::new();
    for (cond, check) in conditions {
        let linear = all_changes.iter().position(|c| c.new.parse().is_ok_and(check)).expect("the listing has one");
        let (found, out) = find_changes(dir, &[&place[..], &["--first", cond]].concat(), 0);
        assert_eq!(found, all_changes[linear..=linear], "--first {cond:?}:\n{out}\nthe listing:\n{all}");
        assert!(out.contains(&format!("change {} of `LIST.head->next->value` is the first", linear + 1)), "{out}");
        numbers.push(linear + 1);
    }
    // Not all the same change: none (1), 30 (2), 20 (3), the kernel's 77 (6), 78 (7).
    assert_eq!(numbers, [2, 3, 6, 3, 7, 3, 2]);
    let again = find_changes(dir, &[&place[..], &["--first", "value >= 0x4d"]].concat(), 0).0;
    assert_eq!(again, all_changes[5..6], "a second search found another change");
    let (none, out) = find_changes(dir, &[&place[..], &["--first", "value > 78"]].concat(), 6);
    assert!(none.is_empty() && out.contains("`value > 78` never holds: 7 changes"), "{out}");
    let limit = ["trace", "--debug", "./list", "--expr", "CFG.limits[2]", "--first", "value == 3"];
    let (none, out) = find_changes(dir, &limit, 0);
    assert!(none.is_empty() && out.contains("`value == 3` holds from the start (`CFG.limits[2]` is 3)"), "{out}");
    let limit = ["trace", "--debug", "./list", "--expr", "CFG.limits[2]", "--first", "value > 3"];
    let (one, out) = find_changes(dir, &limit, 0);
    assert_eq!((one.len(), one[0].new.as_str(), base(&one[0].file), one[0].line), (1, "33", "list.c", 56), "{out}");
    let out = rdb_in(
        dir,
        &[
            &["find"][..],
            &place,
            &["--first", "value < 25", "--then", "gdb", "--", "-batch", "-ex", "print LIST.head->next->value"],
        ]
        .concat(),
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("$1 = 20"), "{stdout}\n{}", text(&out.stderr));
    for (expr, cond, why) in
        [("CFG.range", "value > 1", "is not one"), ("LIST.head->next->value", "value => 1", "expected `value OP N`")]
    {
        let out = rdb_in(dir, &["find", "trace", "--debug", "./list", "--expr", expr, "--first", cond]);
        let stderr = text(&out.stderr);
        assert!(!out.status.success() && stderr.contains(why), "--expr {expr} --first {cond:?}: {stderr}");
    }
}

/// Watched values (`rdb find --watch NAME`, `tests/fixtures/watched`): a job queue in a static
/// whose urgent job overwrites the oldest one. The debug-only `ordered(&Queue) -> bool`, run in
/// the debug host over the pages it read, first is false right after the overwrite, and
/// `oldest(&Queue) -> Option<u32>` first changes at the first push: each answer (event,
/// thread, statement, instruction, backtrace) is the one `--expr` finds over the same memory
/// with hardware watchpoints (`QUEUE.jobs[0]`, its first change and its first value above 1),
/// the same in a second search; an unknown name is refused with the names there are, and
/// `--first-false` over a value that is no bool; a replay of the debug build calls neither.
pub fn watched_values_find_the_statement_expr_finds() {
    let tmp = scratch("find-watch");
    let app = SampleApp::fixture("watched", tmp.path());
    assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
    let trace = tmp.path().join("trace");
    rdb_tests::record(&app.dir, &trace, &[app.dir.join("target/debug/watched").to_str().unwrap()]);
    app.instrument();
    assert_success("cargo rdb build", &rdb_tests::run_cargo_rdb(&app.dir, &["build"]));
    let debug = ["trace", "--debug", "target/rdb/debug/watched"];
    let _ = std::fs::rename(&trace, app.dir.join("trace"));
    let expr = |args: &[&str]| find_changes(&app.dir, &[&debug[..], &["--expr", "QUEUE.jobs[0]"], args].concat(), 0);
    let watch = |args: &[&str]| find_changes(&app.dir, &[&debug[..], args].concat(), 0);
    let same = |a: &Change, b: &Change| {
        (a.event, &a.file, a.line, &a.at, &a.backtrace) == (b.event, &b.file, b.line, &b.at, &b.backtrace)
    };
    let (overwrite, all) = expr(&["--first", "value > 1"]);
    assert_eq!(overwrite.len(), 1, "{all}");
    assert!(overwrite[0].backtrace.iter().any(|f| f.contains("watched::submit_urgent at")), "{all}");
    let (ordered, out) = watch(&["--watch", "ordered", "--first-false"]);
    assert_eq!(ordered.len(), 1, "{out}");
    assert_eq!((ordered[0].old.as_str(), ordered[0].new.as_str()), ("true", "false"), "{out}");
    assert!(same(&ordered[0], &overwrite[0]), "--watch ordered:\n{out}\n--expr:\n{all}");
    assert_eq!(watch(&["--watch", "ordered", "--first-false"]).0, ordered, "a second search");
    let (push, all) = expr(&["--first-change"]);
    let (oldest, out) = watch(&["--watch", "oldest", "--changes"]);
    assert_eq!(oldest.len(), 1, "{out}");
    assert_eq!((oldest[0].old.as_str(), oldest[0].new.as_str()), ("None", "Some(1)"), "{out}");
    assert!(same(&oldest[0], &push[0]), "--watch oldest:\n{out}\n--expr:\n{all}");
    let out = rdb_in(&app.dir, &[&["find"][..], &debug, &["--watch", "newest"]].concat());
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("no watched function `newest`")
            && stderr.contains("`ordered`, `oldest`"),
        "{stderr}"
    );
    let out = rdb_in(&app.dir, &[&["find"][..], &debug, &["--watch", "oldest", "--first-false"]].concat());
    let stderr = text(&out.stderr);
    assert!(!out.status.success() && stderr.contains("returns a bool; `oldest` gave None"), "{stderr}");
    // A replay with the debug build: no event calls a watched value, and none is reported as
    // a callback never called.
    let out = rdb_in(&app.dir, &["replay", "trace", "--debug", "target/rdb/debug/watched"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success() && !stderr.contains("never called"), "{stderr}");
    assert!(text(&out.stdout).contains("30 jobs queued, 30 ran, 61 submitted"), "{}", text(&out.stdout));
}

/// A watched value in threads (the race sample's `COUNTER`, stored by three threads under the
/// chaos scheduler): `below(&AtomicU64) -> bool` (the count under half the final one) first is
/// false at the store `--expr COUNTER --first 'value >= K'` finds, `count` first changes at the
/// store `--expr COUNTER --first-change` finds (same event, statement, instruction, backtrace).
pub fn watched_values_in_threads_find_the_store_expr_finds() {
    let tmp = scratch("find-watch-race");
    let trace = tmp.path().join("trace");
    let (app, rec) = SampleApp::race_recorded_with_chaos(tmp.path(), &trace);
    let printed = text(&rec.stdout);
    let count: u64 =
        printed.strip_prefix("final count ").and_then(|r| r.split_whitespace().next()).unwrap().parse().unwrap();
    let k = count / 2;
    app.instrument();
    let main = app.dir.join("src/main.rs");
    let mut source = std::fs::read_to_string(&main).unwrap();
    source.push_str(&format!(
        "\n#[debug_only]\n#[rdb_macros::watched(crate::COUNTER)]\nfn below(c: &AtomicU64) -> bool {{ c.load(Ordering::Relaxed) < {k} }}\n\
         \n#[debug_only]\n#[rdb_macros::watched(crate::COUNTER)]\nfn count(c: &AtomicU64) -> u64 {{ c.load(Ordering::Relaxed) }}\n"
    ));
    std::fs::write(&main, source).unwrap();
    assert_success("cargo rdb build", &rdb_tests::run_cargo_rdb(&app.dir, &["build"]));
    let debug = [trace.to_str().unwrap(), "--debug", "target/rdb/debug/race"];
    let run = |args: &[&str]| find_changes(&app.dir, &[&debug[..], args].concat(), 0);
    let same = |a: &Change, b: &Change| {
        (a.event, &a.file, a.line, &a.at, &a.backtrace) == (b.event, &b.file, b.line, &b.at, &b.backtrace)
    };
    let cond = format!("value >= {k}");
    let (store, all) = run(&["--expr", "COUNTER", "--first", &cond]);
    let (below, out) = run(&["--watch", "below", "--first-false"]);
    assert_eq!((below.len(), below[0].old.as_str(), below[0].new.as_str()), (1, "true", "false"), "{out}");
    assert!(same(&below[0], &store[0]), "--watch below:\n{out}\n--expr:\n{all}");
    assert!(below[0].backtrace.iter().any(|f| f.contains("race::worker at")), "{out}");
    let (first, all) = run(&["--expr", "COUNTER", "--first-change"]);
    let (changed, out) = run(&["--watch", "count"]);
    assert_eq!((changed[0].old.as_str(), changed[0].new.as_str()), ("0", "1"), "{out}");
    assert!(same(&changed[0], &first[0]), "--watch count:\n{out}\n--expr:\n{all}");
}
