//! Event callbacks (issue 11): a program is recorded from a plain build, then replayed with
//! `cargo rdb replay` of a variant that adds `#[debug_only]` callbacks. The callbacks see the
//! recorded events, print in program order, and the program's own output and binary stay the
//! recorded ones.

use std::path::Path;
use std::process::Output;

use rdb_tests::{
    assert_success, lines_where, output, program, rdb, rdb_clang, run_cargo, run_ok, scratch, text, timed, tools,
    SampleApp,
};

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
pub(crate) fn cargo_rdb_replay(dir: &Path, trace: &Path) -> Output {
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

/// Callbacks whose parameters do not fit their event are compile errors of the debug module,
/// rustc-style, each at its callback's attribute in the user's file: a call callback with a
/// wrong argument type, a return callback with the wrong value type, a syscall callback taking
/// the record by value, a symbol callback taking a slice for a register; then a memory
/// callback whose values are not the variable's size.
pub fn a_callback_with_the_wrong_signature_is_rejected_rustc_style() {
    let tmp = scratch("wrong-signature");
    let app = SampleApp::fixture("events", tmp.path());
    app.overlay("rdb");
    app.overlay("rdb-wrong-signature");
    let out = rdb_tests::run_cargo_rdb(&app.dir, &["build"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "the build succeeded:\n{stderr}");
    let main = app.dir.join("src/main.rs");
    let source = std::fs::read_to_string(&main).unwrap();
    let line_of = |attribute: &str| source.lines().position(|l| l.starts_with(attribute)).unwrap() + 1;
    let expected = [
        ("#[on_syscall(write, after)]", "error[E0277]: `fn(Syscall) {after_write}` cannot be a syscall callback"),
        (
            "#[on_call(crate::vm::Vm::push)]",
            "error[E0277]: `for<'a> fn(&'a Vm, i32) {pushed}` cannot be a callback of a function taking `(&mut Vm, i64)`",
        ),
        (
            "#[on_return(crate::vm::Vm::pop)]",
            "error[E0277]: `fn(i64) {popped}` cannot be a callback of a function taking `(Option<i64>,)`",
        ),
        (
            "#[on_call(\"write\")]",
            "error[E0277]: `for<'a> fn(i32, &'a [u8], usize) {write_called}` cannot be a callback of a symbol",
        ),
    ];
    for (attribute, message) in expected {
        let at = stderr.find(message).unwrap_or_else(|| panic!("no `{message}` in:\n{stderr}"));
        // The next location line is the attribute's, in the user's file.
        let place = stderr[at..].lines().find(|l| l.trim_start().starts_with("--> ")).unwrap();
        assert!(place.contains(&format!("{}:{}:", main.display(), line_of(attribute))), "{place}\n{stderr}");
    }
    assert!(stderr.contains("a callback takes no arguments, or the function's arguments in order"), "{stderr}");
    assert!(stderr.contains("a syscall callback is `fn(call: &rdb::Syscall)`, or `fn()`"), "{stderr}");
    assert!(stderr.contains("one per System V argument register"), "{stderr}");
    // A memory callback whose values are not the variable's size (`u32` for an `AtomicU64`):
    // checked by a constant evaluated at the attribute, once the types above are right.
    app.overlay("rdb");
    app.overlay("rdb-wrong-size");
    let out = rdb_tests::run_cargo_rdb(&app.dir, &["build"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "the build succeeded:\n{stderr}");
    let message = "error[E0080]: evaluation panicked: a memory callback's `old` and `new` values must have the size of the watched variable";
    let at = stderr.find(message).unwrap_or_else(|| panic!("no `{message}` in:\n{stderr}"));
    let place = stderr[at..].lines().find(|l| l.trim_start().starts_with("--> ")).unwrap();
    let attribute = line_of("#[on_write(crate::bank::AUDITED)]");
    assert!(place.contains(&format!("{}:{attribute}:", main.display())), "{place}\n{stderr}");
    assert!(stderr.contains("fn(u32, u32, &'a Access) {audited_changed}"), "{stderr}");
}

/// Copies the C callback programs (`tests/programs/support/callbacks/`) into a scratch
/// directory, builds `name.c` with plain clang-14 and records `./name args`; returns the
/// directory and the recorded stdout.
fn record_c(name: &str, args: &[&str]) -> (tempfile::TempDir, String) {
    let tmp = scratch(name);
    let dir = tmp.path();
    for file in [
        "account.c",
        "account.rdb.c",
        "account.misbehaving.rdb.c",
        "alloc.c",
        "alloc.rdb.c",
        "alloc.region.c",
        "threads.c",
        "threads.rdb.c",
        "threads.clone.rdb.c",
        "spread.c",
        "spread.rdb.c",
        "reads.c",
        "reads.rdb.c",
        "watchbig.c",
        "watchbig.rdb.c",
        "watchbig.region.c",
        "watchmap.c",
        "watchmap.rdb.c",
        "watchmap.region.c",
        "watchstack.c",
        "watchstack.rdb.c",
        "watchstack.region.c",
        "formatter.c",
        "formatter.rdb.c",
    ] {
        std::fs::copy(program(&format!("support/callbacks/{file}")), dir.join(file)).unwrap();
    }
    let source = format!("{name}.c");
    run_ok("clang-14", timed(600, "clang-14").args(["-O0", "-g", &source, "-o", name, "-lpthread"]).current_dir(dir));
    let mut prog = vec![format!("./{name}")];
    prog.extend(args.iter().map(|a| a.to_string()));
    let prog: Vec<&str> = prog.iter().map(String::as_str).collect();
    let recorded = rdb_tests::record(dir, Path::new("trace"), &prog);
    (tmp, text(&recorded.stdout))
}

/// `rdb-clang -O0 -g NAME.c NAME.rdb.c -o NAME`, then `rdb replay trace --debug ./NAME`.
fn replay_c(dir: &Path, name: &str) -> Output {
    replay_c_with(dir, name, &format!("{name}.rdb.c"), &[])
}

/// `rdb-clang -O0 -g NAME.c DEBUG_SOURCE -o NAME`.
fn build_c(dir: &Path, name: &str, debug_source: &str) {
    run_ok(
        "rdb-clang",
        timed(600, rdb_clang())
            .args(["-O0", "-g", &format!("{name}.c"), debug_source, "-o", name, "-lpthread"])
            .current_dir(dir),
    );
}

/// [`replay_c`] with another debug source and more `rdb replay` arguments.
fn replay_c_with(dir: &Path, name: &str, debug_source: &str, replay_args: &[&str]) -> Output {
    build_c(dir, name, debug_source);
    let debug = format!("./{name}");
    let mut args = vec!["replay", "trace", "--debug", &debug];
    args.extend_from_slice(replay_args);
    output(rdb(&args).current_dir(dir))
}

/// A C program prints a corrupted balance; `RDB_ON_WRITE(account)` in a debug source reports
/// every change of the balance with the writing line: the out-of-bounds copy is one of them.
pub fn c_on_write_names_the_line_that_corrupts_a_balance() {
    let (tmp, recorded) = record_c("account", &[]);
    assert_eq!(recorded, "Margaret has 2\n", "the bug did not show");
    let out = replay_c(tmp.path(), "account");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let source = std::fs::read_to_string(tmp.path().join("account.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("account.c").display().to_string();
    let changes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[rdb] ")).collect();
    let expected = [
        format!("[rdb] balance 0 -> 100 at deposit at {file}:{}:21", line_of("account.balance += amount")),
        format!("[rdb] balance 100 -> 128 at deposit at {file}:{}:21", line_of("account.balance += amount")),
        format!("[rdb] balance 128 -> 0 at set_owner at {file}:{}:26", line_of("account.owner[i] = name[i]")),
        format!("[rdb] balance 0 -> 2 at deposit at {file}:{}:21", line_of("account.balance += amount")),
    ];
    assert_eq!(changes.len(), expected.len(), "{stdout}");
    for (change, want) in changes.iter().zip(&expected) {
        assert!(change.starts_with(want.as_str()), "{change}\nexpected {want}");
    }
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
}

/// `RDB_ON_CALL(malloc)` (a C library function, by symbol) counts exactly the allocations the
/// program reports; a static function's callback gets its arguments; the `write` system call's
/// callback names the line that made it; a region's `rdb_watch(&head, ...)` reports each change
/// of the list's head with the line that wrote it.
pub fn c_on_call_malloc_counts_the_allocations_the_program_reports() {
    let (tmp, recorded) = record_c("alloc", &["7"]);
    assert_eq!(recorded, "sum 91, 8 allocations\n");
    std::fs::copy(tmp.path().join("alloc.region.c"), tmp.path().join("alloc.c")).unwrap();
    let out = replay_c(tmp.path(), "alloc");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let source = std::fs::read_to_string(tmp.path().join("alloc.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("alloc.c").display().to_string();
    let mut expected: String = (0..7).map(|i| format!("[rdb] insert({}) after {i} mallocs\n", i * i)).collect();
    expected.push_str("sum 91, 8 allocations\n");
    expected.push_str(&format!("[rdb] write of 22 bytes by main at {file}:{}:5\n", line_of("write(1, scratch")));
    expected.push_str("[rdb] malloc was called 8 times (176 bytes)\n");
    assert_eq!(stdout, expected, "{stderr}");
    let watch = format!("rdb: watch set at alloc.c:{}: ", line_of("rdb_watch(&head"));
    let changes: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&watch)).collect();
    assert!(changes.len() >= 7, "{stderr}");
    for change in &changes[..7] {
        assert!(change.ends_with(&format!("at insert ({file}:{}:11)", line_of("*head = push("))), "{change}");
    }
}

/// Watches that do not fit the four debug registers use page protection: a region's
/// `rdb_watch` of a 64-byte record and of a fifth counter (after four that take the registers)
/// report every change with the line that made it and the old and new bytes, a `read(2)` whose
/// recorded data the replay writes into the protected record is reported as the system
/// call's, writes elsewhere in the page and writes that change nothing are not reported, and
/// the program's output is the recorded one.
pub fn watches_beyond_the_debug_registers_use_page_protection() {
    let (tmp, recorded) = record_c("watchbig", &[]);
    assert_eq!(recorded, "7 600 Ada 2 609; 1 2 3 4 50; noise 6\n");
    std::fs::copy(tmp.path().join("watchbig.region.c"), tmp.path().join("watchbig.c")).unwrap();
    let out = replay_c(tmp.path(), "watchbig");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    assert!(stdout.contains("[rdb] read of 4 bytes\n"), "{stdout}");
    let source = std::fs::read_to_string(tmp.path().join("watchbig.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("watchbig.c").display().to_string();
    for (watched, mechanism) in [
        ("rdb_watch(&a,", "uses debug registers (1)"),
        ("rdb_watch(&d,", "uses debug registers (1)"),
        ("rdb_watch(&e,", "uses page protection (1 page(s))"),
        ("rdb_watch(&rec,", "uses page protection (1 page(s))"),
    ] {
        let armed = format!("rdb: watch set at watchbig.c:{} (", line_of(watched));
        assert!(
            stderr.lines().any(|l| l.starts_with(&armed) && l.contains(mechanism)),
            "no `{armed}... {mechanism}` in:\n{stderr}"
        );
    }
    // The record's bytes after each change, and where the change comes from.
    let mut record = [0u8; 64];
    let mut expected: Vec<(String, String, String)> = Vec::new();
    let mut change = |record: &mut [u8; 64], offset: usize, bytes: &[u8], place: String| {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let old = hex(record);
        record[offset..offset + bytes.len()].copy_from_slice(bytes);
        expected.push((old, hex(record), place));
    };
    let at = |text: &str| format!("at main ({file}:{}:", line_of(text));
    change(&mut record, 0, &7i64.to_le_bytes(), at("rec.id = 7;"));
    for balance in [100i64, 300, 600] {
        change(&mut record, 8, &balance.to_le_bytes(), at("rec.balance += 100 * i;"));
    }
    change(&mut record, 16, b"Ada\0", "by system call `read`".to_string());
    change(&mut record, 48, &2i64.to_le_bytes(), at("rec.count = 2;"));
    change(&mut record, 56, &609i64.to_le_bytes(), at("rec.checksum = "));
    let prefix = format!("rdb: watch set at watchbig.c:{}: ", line_of("rdb_watch(&rec,"));
    let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&prefix)).collect();
    assert_eq!(reports.len(), expected.len(), "{stderr}");
    for (report, (old, new, place)) in reports.iter().zip(&expected) {
        assert!(report.contains(&format!("(64 bytes) changed {old} -> {new}, thread ")), "{report}");
        assert!(report.contains(place.as_str()), "{report} (expected {place})");
    }
    let prefix = format!("rdb: watch set at watchbig.c:{}: ", line_of("rdb_watch(&e,"));
    let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&prefix)).collect();
    assert_eq!(reports.len(), 2, "{stderr}");
    assert!(reports[0].contains("changed 0 -> 5, thread ") && reports[0].contains(&at("e = 5;")), "{}", reports[0]);
    assert!(
        reports[1].contains("changed 5 -> 50, thread ") && reports[1].contains(&at("e = e * 10;")),
        "{}",
        reports[1]
    );
}

/// A page-protected watch follows the program's own changes of its memory: the program makes
/// the watched page read-only (its write there faults and its handler jumps back: the program
/// sees its own fault, not rdb's), writable again, unmaps it and maps a new page there; each
/// change of the record is reported with its line, and the output is the recorded one.
pub fn page_protection_keeps_the_programs_own_protection_and_faults() {
    let (tmp, recorded) = record_c("watchmap", &[]);
    assert_eq!(recorded, "faulted 1, id 0, balance 0, count 9\n");
    std::fs::copy(tmp.path().join("watchmap.region.c"), tmp.path().join("watchmap.c")).unwrap();
    let out = replay_c(tmp.path(), "watchmap");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    let source = std::fs::read_to_string(tmp.path().join("watchmap.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("watchmap.c").display().to_string();
    let prefix = format!("rdb: watch set at watchmap.c:{}", line_of("rdb_watch(r,"));
    assert!(
        stderr.contains(&format!("{prefix} (0x")) && stderr.contains("uses page protection (1 page(s))"),
        "{stderr}"
    );
    let word = |v: u64, at: usize| {
        let mut b = [0u8; 64];
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        b
    };
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut after_balance = word(1, 0);
    after_balance[8] = 6;
    let expected = [
        ([0u8; 64], word(1, 0), "r->id = 1;"),
        (word(1, 0), after_balance, "r->balance = 6;"),
        (after_balance, word(9, 48), "r->count = 9;"),
    ];
    let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&format!("{prefix}: "))).collect();
    assert_eq!(reports.len(), expected.len(), "{stderr}");
    for (report, (old, new, line)) in reports.iter().zip(&expected) {
        assert!(report.contains(&format!("(64 bytes) changed {} -> {}, thread ", hex(old), hex(new))), "{report}");
        assert!(report.contains(&format!("at main ({file}:{}:", line_of(line))), "{report} (expected line of {line})");
    }
}

/// A page-protected watch of a record on the stack: the kernel still writes the old signal
/// action and a signal frame on that page (rdb lifts the protection for them), the handler
/// runs, and both changes of the record are reported with their lines; the output is the
/// recorded one.
pub fn page_protection_lets_the_kernel_write_on_a_watched_stack_page() {
    let (tmp, recorded) = record_c("watchstack", &[]);
    assert_eq!(recorded, "1 2 10\n");
    std::fs::copy(tmp.path().join("watchstack.region.c"), tmp.path().join("watchstack.c")).unwrap();
    let out = replay_c(tmp.path(), "watchstack");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    assert!(stdout.contains("[rdb] rt_sigaction(10) = 0\n"), "{stdout}");
    let source = std::fs::read_to_string(tmp.path().join("watchstack.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("watchstack.c").display().to_string();
    let prefix = format!("rdb: watch set at watchstack.c:{}", line_of("rdb_watch(&r,"));
    assert!(
        stderr.contains(&format!("{prefix} (0x")) && stderr.contains("uses page protection (1 page(s))"),
        "{stderr}"
    );
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut first = [0u8; 64];
    first[0] = 1;
    let mut second = first;
    second[56] = 2;
    let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&format!("{prefix}: "))).collect();
    // Then the stack is reused after `main` returns (the watch lasts to the end of the replay).
    assert!(reports.len() >= 2, "{stderr}");
    for (report, (old, new, line)) in
        reports.iter().zip([([0u8; 64], first, "r.v[0] = 1;"), (first, second, "r.v[7] = 2;")])
    {
        assert!(report.contains(&format!("(64 bytes) changed {} -> {}, thread ", hex(&old), hex(&new))), "{report}");
        assert!(report.contains(&format!("at main ({file}:{}:", line_of(line))), "{report} (expected line of {line})");
    }
}

/// A callback that writes program memory, hangs and crashes is reported each time, like a
/// region, and the program's replay is not affected.
pub fn a_misbehaving_callback_is_reported_and_never_changes_the_replay() {
    let (tmp, recorded) = record_c("account", &[]);
    let out = replay_c_with(tmp.path(), "account", "account.misbehaving.rdb.c", &["--region-timeout", "1"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(rdb_tests::EXIT_REGION_PROBLEMS), "{stdout}\n{stderr}");
    assert_eq!(stdout, recorded);
    let warnings: Vec<&str> =
        stderr.lines().filter(|l| l.starts_with("rdb: warning: callback `account_written` (")).collect();
    assert_eq!(warnings.len(), 3, "{stderr}");
    assert!(
        warnings[0].contains("debug code wrote program memory at 0x")
            && warnings[0].contains("The program is unchanged")
    );
    assert!(warnings[1].contains("did not return within 1.0 s and was stopped"), "{}", warnings[1]);
    assert!(
        warnings[2]
            .contains("debug code crashed with SIGSEGV at 0x0: a null pointer (the program has no memory there)"),
        "{}",
        warnings[2]
    );
    assert!(stderr.contains("rdb: 3 of 12 debug calls (regions and callbacks) did not complete cleanly"), "{stderr}");
}

/// Two threads write in turns: the callbacks of every thread's calls and writes run in the
/// recorded order, each naming its thread. The writes are recorded events, so their order is
/// fixed; a call of `say` is not one, so only its place in its own thread is: between that
/// thread's previous write and the write it makes (the other thread may enter `say` in between).
pub fn callbacks_of_every_thread_run_in_the_recorded_order() {
    let (tmp, recorded) = record_c("threads", &[]);
    let out = replay_c(tmp.path(), "threads");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), recorded.lines().count() * 3, "{stdout}");
    let mut threads: std::collections::HashMap<String, String> = Default::default();
    // Per writer: the `say` callback seen since its last write.
    let mut pending: std::collections::HashMap<String, String> = Default::default();
    let mut calls = 0;
    for (k, line) in lines.iter().enumerate() {
        if let Some(call) = line.strip_prefix("[rdb] say(") {
            calls += 1;
            let (args, number) = call.split_once(") #").unwrap();
            assert_eq!(number, calls.to_string(), "{stdout}");
            let (who, i) = args.split_once(", ").unwrap();
            let earlier = pending.insert(who.to_string(), i.to_string());
            assert_eq!(earlier, None, "{who} called say twice without writing:\n{stdout}");
        } else if let Some(wrote) = line.strip_prefix("[rdb] thread ") {
            let (thread, said) = wrote.split_once(" wrote ").unwrap();
            assert_eq!(lines[k - 1], said, "the write callback does not follow its write:\n{stdout}");
            let (who, _) = said.split_once(' ').unwrap();
            let seen = threads.entry(who.to_string()).or_insert_with(|| thread.to_string());
            assert_eq!(seen, thread, "{who} wrote from two threads:\n{stdout}");
        } else {
            let (who, i) = line.split_once(' ').unwrap();
            assert_eq!(
                pending.remove(who).as_deref(),
                Some(i),
                "`{line}` without its say() callback before:\n{stdout}"
            );
        }
    }
    assert_ne!(threads["alpha"], threads["beta"]);
}

/// Under `rdb gdb`, going back with event callbacks is refused with the reason (what rdb keeps
/// for them follows the replay forwards only); gdb stays where it was, and going on forwards runs
/// every callback once, in program order, with the program's recorded output. A gdb watchpoint
/// takes a debug register the memory callback does not hold: both see every change.
pub fn going_back_with_callbacks_under_gdb_is_refused_and_forwards_still_runs_them() {
    let (tmp, recorded) = record_c("account", &[]);
    let dir = tmp.path();
    build_c(dir, "account", "account.rdb.c");
    let commands = [
        "break deposit",
        "continue",
        "continue",
        "reverse-continue",
        "delete",
        "watch account.balance",
        "continue",
        "continue",
        "continue",
        "continue",
    ];
    let mut gdb = vec!["gdb", "trace", "--debug", "./account", "--", "-batch", "-nx"];
    for command in commands {
        gdb.extend(["-ex", command]);
    }
    let out = output(rdb(&gdb).current_dir(dir));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let both = format!("{stdout}{stderr}");
    assert!(
        both.contains("cannot go back: the debug module has 1 event callback(s)")
            && both.contains("reverse execution, `run` and restoring a checkpoint need a debug build without"),
        "{stdout}\n{stderr}"
    );
    let changes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[rdb] balance")).collect();
    let moves: Vec<&str> = changes.iter().map(|l| l.split(" at ").next().unwrap()).collect();
    assert_eq!(
        moves,
        ["[rdb] balance 0 -> 100", "[rdb] balance 100 -> 128", "[rdb] balance 128 -> 0", "[rdb] balance 0 -> 2"],
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains(&recorded), "{stdout}\n{stderr}");
    let gdb_saw: Vec<&str> = stdout.lines().filter(|l| l.starts_with("New value = ")).collect();
    assert_eq!(gdb_saw, ["New value = 128", "New value = 0", "New value = 2"], "{stdout}\n{stderr}");
    assert!(!both.contains("not armed"), "{both}");
}

/// `RDB_ON_CALL(malloc)` (a symbol, resolved when libc is mapped) and `RDB_ON_WRITE(total)` (a
/// debug register) see the calls and writes of a second thread and of a forked child too, in
/// the recorded order, each write naming its thread.
pub fn symbol_and_memory_callbacks_follow_threads_and_forked_processes() {
    let (tmp, recorded) = record_c("spread", &[]);
    assert_eq!(recorded, "child total 3006\nparent total 3007\n");
    let out = replay_c(tmp.path(), "spread");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let thread = |line: &str| line.rsplit_once("(thread ").map(|(_, t)| t.trim_end_matches(')').to_string());
    let shape: Vec<String> = lines.iter().map(|l| l.split(" (thread ").next().unwrap().to_string()).collect();
    assert_eq!(
        shape,
        [
            "[rdb] malloc(1001)",
            "[rdb] total 0 -> 1001",
            "[rdb] malloc(1002)",
            "[rdb] total 1001 -> 2003",
            "[rdb] malloc(1003)",
            "[rdb] total 2003 -> 3006",
            "child total 3006",
            "[rdb] malloc(1004)",
            "[rdb] total 2003 -> 3007",
            "parent total 3007",
        ],
        "{stdout}\n{stderr}"
    );
    let (main, worker, child) = (thread(lines[1]), thread(lines[3]), thread(lines[5]));
    assert!(main.is_some() && main != worker && main != child && worker != child, "{stdout}");
    assert_eq!(thread(lines[8]), main, "{stdout}");
}

/// `RDB_ON_READ(limit)` runs at each read of a global (with the reading line), `RDB_ON_RETURN`
/// gets each returned value, and `rdb_backtrace()` in a call callback gives the program's stack
/// with functions and lines.
pub fn c_read_and_return_callbacks_and_a_backtrace() {
    let (tmp, recorded) = record_c("reads", &[]);
    assert_eq!(recorded, "sum 5\n");
    let out = replay_c(tmp.path(), "reads");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let source = std::fs::read_to_string(tmp.path().join("reads.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("reads.c").display().to_string();
    let read = format!("[rdb] limit 3 (changed: 0) read at under at {file}:{}:14", line_of("return v < limit;"));
    let lines: Vec<&str> = stdout.lines().collect();
    let expected_start = [
        read.as_str(),
        "[rdb] square returned 0",
        read.as_str(),
        "[rdb] square returned 1",
        read.as_str(),
        "[rdb] stack of square(2):",
    ];
    assert_eq!(lines[..6], expected_start, "{stdout}\n{stderr}");
    assert_eq!(lines[6], format!("#0 square at {file}:{}:12", line_of("return v * v;")), "{stdout}");
    assert_eq!(lines[7], format!("#1 main at {file}:{}:16", line_of("sum += square(i);")), "{stdout}");
    // main's caller is the C library's: named only by a symbol that holds the address (a
    // stripped libc has no symbol for its local `__libc_start_call_main`; the exported one
    // before it is not its name).
    let caller = lines[8].strip_prefix("#2 ").unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        (caller.starts_with("__libc_start_call_main")
            || caller.starts_with("__libc_start_main")
            || caller.starts_with("0x"))
            && caller.ends_with(" in libc.so.6"),
        "{stdout}"
    );
    let tail: Vec<&str> = lines.iter().skip_while(|l| !l.starts_with("[rdb] square returned 4")).copied().collect();
    assert_eq!(tail, ["[rdb] square returned 4", read.as_str(), "sum 5"], "{stdout}");
}

/// `#[on_read(crate::bank::AUDITED)]` runs at every access of the static (reads and writes,
/// `Access::changed` telling them apart) with the accessing function, and `rdb::backtrace()`
/// in it gives the program's stack, one frame per line, through the program's functions.
pub fn rust_read_callbacks_see_every_access_with_a_backtrace() {
    let rec = record_plain("events", &[]);
    rec.app.instrument();
    rec.app.overlay("rdb-reads");
    let out = cargo_rdb_replay(&rec.app.dir, &rec.trace);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "replay failed:\n{stdout}\n{stderr}");
    assert_same_binary(&rec.app, "events");
    let accesses: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[rdb] AUDITED accessed")).collect();
    assert_eq!(
        accesses,
        [
            "[rdb] AUDITED accessed: 0 -> 10 (changed: true) at events::bank::transfer line 8",
            "[rdb] AUDITED accessed: 10 -> 42 (changed: true) at events::bank::transfer line 8",
            "[rdb] AUDITED accessed: 42 -> 42 (changed: false) at events::bank::audited line 12",
        ],
        "{stdout}\n{stderr}"
    );
    let frames: Vec<&str> =
        stdout.lines().skip_while(|l| *l != "[rdb] read by:").skip(1).take_while(|l| l.starts_with('#')).collect();
    let bank = rec.app.dir.join("src/bank.rs").display().to_string();
    let main = rec.app.dir.join("src/main.rs").display().to_string();
    // Innermost the standard library's atomic load (a debug build), then the program's frames,
    // at the lines of the user's (instrumented) files.
    let audited = frames.iter().position(|f| f.contains("events::bank::audited")).expect(&stdout);
    assert!(frames[audited].contains(&format!("{bank}:12:")), "{stdout}");
    let source = std::fs::read_to_string(rec.app.dir.join("src/main.rs")).unwrap();
    let call = source.lines().position(|l| l.contains("bank::audited()")).unwrap() + 1;
    assert!(frames[audited + 1].starts_with(&format!("#{} events::main at {main}:{call}:", audited + 1)), "{stdout}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ") && !l.starts_with('#')), rec.stdout);
}

/// A text formatter overruns a heap record's buffer into the next field: a call callback
/// `rdb_watch`es that field of the first record (heap memory no debug code had read yet, in a
/// heap the program made after the replay started) and every change is reported with the
/// line that made it; `RDB_ON_WRITE` of a global, `RDB_ON_CALL(malloc)` (counting what the
/// program reports) and the `write` callback naming the line that wrote the corrupted report
/// run in program order among the program's own output.
pub fn c_watch_from_a_callback_reaches_new_heap_memory() {
    let (tmp, recorded) = record_c("formatter", &["18"]);
    assert!(recorded.ends_with("words=3 allocations=4\n"), "{recorded}");
    let out = replay_c(tmp.path(), "formatter");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let source = std::fs::read_to_string(tmp.path().join("formatter.c")).unwrap();
    let line_of = |s: &str| source.lines().position(|l| l.contains(s)).unwrap() + 1;
    let file = tmp.path().join("formatter.c").display().to_string();
    let lines: Vec<&str> = stdout.lines().collect();
    let emitted =
        |n: usize| format!("[rdb] words_emitted {} -> {n} at emit at {file}:{}:", n - 1, line_of("words_emitted++"));
    let corrupted = format!("[rdb] corrupted line written by main at {file}:{}:", line_of("write(1, msg"));
    assert_eq!(lines[0], "[rdb] watch: 0", "{stdout}\n{stderr}");
    assert_eq!(lines[1], "alpha.............", "{stdout}");
    assert!(lines[2].starts_with(&emitted(1)), "{stdout}");
    assert_eq!(lines[3], "corrupted: lines_done=667182 expected 0", "{stdout}");
    assert!(lines[4].starts_with(&corrupted), "{stdout}");
    assert_eq!(lines[lines.len() - 2], "words=3 allocations=4", "{stdout}");
    assert_eq!(lines[lines.len() - 1], "[rdb] malloc was called 4 times", "{stdout}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    let watch = format!("rdb: watch set at {}:24: ", tmp.path().join("formatter.rdb.c").display());
    let changes: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&watch)).collect();
    assert!(changes.len() >= 3, "{stderr}");
    let pad = format!("at pad_word ({file}:{}:", line_of("l->text[i] = '.'"));
    let newline = format!("at pad_word ({file}:{}:", line_of("l->text[l->width] = '\\n'"));
    assert!(changes[0].contains("changed 0 -> ") && changes[0].contains(&pad), "{stderr}");
    assert!(changes[1].contains(&pad), "{stderr}");
    assert!(changes[2].contains("-> 667182") && changes[2].contains(&newline), "{stderr}");
}

/// At `-O2` clang inlines the formatter's static `pad_word` into its only caller: rdb-clang
/// says at build time that `RDB_ON_CALL(pad_word)` will see no call (rather than look for a
/// shared library's `pad_word` at run time), and the other callbacks still run in program
/// order.
pub fn c_call_callback_of_an_inlined_function_is_reported_at_build_time() {
    let tmp = scratch("formatter-o2");
    let dir = tmp.path();
    for file in ["formatter.c", "formatter.rdb.c"] {
        std::fs::copy(program(&format!("support/callbacks/{file}")), dir.join(file)).unwrap();
    }
    run_ok("clang-14", timed(600, "clang-14").args(["-O2", "-g", "formatter.c", "-o", "formatter"]).current_dir(dir));
    let recorded = text(&rdb_tests::record(dir, Path::new("trace"), &["./formatter", "18"]).stdout);
    let build = output(
        timed(600, rdb_clang())
            .args(["-O2", "-g", "formatter.c", "formatter.rdb.c", "-o", "formatter"])
            .current_dir(dir),
    );
    let build_stderr = text(&build.stderr);
    assert!(build.status.success(), "{build_stderr}");
    assert!(
        build_stderr.contains("rdb-clang: warning: callback ")
            && build_stderr.contains("`pad_word`: every call of it was inlined"),
        "{build_stderr}"
    );
    let out = output(rdb(&["replay", "trace", "--debug", "./formatter"]).current_dir(dir));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("callback `padding` ("), "{stderr}");
    assert!(stderr.contains("was never called in this replay"), "{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[1].starts_with("[rdb] words_emitted 0 -> 1 at "), "{stdout}");
    assert_eq!(lines[lines.len() - 1], "[rdb] malloc was called 4 times", "{stdout}");
}

/// A trait impl's method is a call callback's target by its type's path (the trait imported by
/// a `#[debug_only] use`) and by the trait's path, and a generic function's return by its
/// instantiation (`tally::<u32>`): each runs at every call, before the line the call feeds.
pub fn call_callbacks_of_a_trait_impls_method_and_a_generic_functions_return() {
    let rec = record_plain("scorer", &[]);
    assert_eq!(
        rec.stdout,
        "text 0: 4 words, doubled 8, score 48\ntext 1: 5 words, doubled 10, score 58\ntext 2: 4 words, doubled 8, score 98\n"
    );
    rec.app.instrument();
    let out = cargo_rdb_replay(&rec.app.dir, &rec.trace);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "replay failed:\n{stdout}\n{stderr}");
    assert_same_binary(&rec.app, "scorer");
    assert!(!stderr.contains("never"), "{stderr}");
    let mut expected = String::new();
    for (i, (words, letters, line)) in [
        (4, 16, "text 0: 4 words, doubled 8, score 48"),
        (5, 19, "text 1: 5 words, doubled 10, score 58"),
        (4, 32, "text 2: 4 words, doubled 8, score 98"),
    ]
    .into_iter()
    .enumerate()
    {
        expected.push_str(&format!("[rdb] tally returned {}\n", words * 2));
        // Both callbacks of the one function run at its call, in the order they are declared.
        expected.push_str(&format!("[rdb] Counter::score(id {i}, weight 3) with {letters} letters\n"));
        expected.push_str(&format!("[rdb] Scorer::score(id {i})\n"));
        expected.push_str(&format!("{line}\n"));
    }
    assert_eq!(stdout, expected, "{stderr}");
}

/// The system call that creates a thread (`clone3`, or `clone`) runs its `before` callbacks
/// too: at its entry the thread's next recorded event is the new thread, and the call's own
/// record (its result, the new thread's id) follows it. Before and after see the same result.
pub fn syscall_callbacks_see_the_calls_that_create_threads_before_and_after() {
    let (tmp, recorded) = record_c("threads", &[]);
    let out = replay_c_with(tmp.path(), "threads", "threads.clone.rdb.c", &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(lines_where(&stdout, |l| !l.starts_with("[rdb] ")), recorded);
    let calls: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[rdb] ")).collect();
    assert_eq!(calls.len(), 4, "{stdout}\n{stderr}");
    for pair in calls.chunks(2) {
        let before = pair[0].strip_prefix("[rdb] before ").unwrap_or_else(|| panic!("{stdout}"));
        let after = pair[1].strip_prefix("[rdb] after ").unwrap_or_else(|| panic!("{stdout}"));
        assert_eq!(before, after, "{stdout}");
        let result: i64 = before.rsplit_once("result ").unwrap().1.parse().unwrap();
        assert!(result > 0, "{stdout}");
    }
    assert_ne!(calls[0], calls[2]);
}
