//! Regions in generic functions and impls, closures run on threads, `async`
//! code run by tokio: the `bank` sample app is recorded from a plain build,
//! then replayed with `cargo rdb replay` of its instrumented variant. Every
//! region runs with the values the program itself logged, the program's
//! output is the recording's, and the main binary is the recorded one.

use rdb_tests::{
    assert_success, cargo_rdb, output, repo_root, run_cargo, run_cargo_rdb, scratch, text, timed, tools, SampleApp,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

/// `program ARGS` in `dir` as a user would run it: rdb's tools first on `PATH`, none of this
/// test run's cargo settings.
fn run(dir: &Path, program: &Path, args: &[&str]) -> Output {
    let path = format!("{}:{}", tools().display(), std::env::var("PATH").unwrap_or_default());
    output(
        timed(600, program)
            .args(args)
            .current_dir(dir)
            .env("PATH", path)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR"),
    )
}

fn record_then_replay_with_regions(release: bool) {
    let tmp = scratch("bank");
    let app = SampleApp::plain("bank", tmp.path());
    // Release: cargo's default profile (no debug information); descriptors
    // come from a twin build proven to have the same code.
    let (profile_args, dir): (&[&str], &str) = if release { (&["--release"], "release") } else { (&[], "debug") };
    let mut build = vec!["build", "-q"];
    build.extend_from_slice(profile_args);
    assert_success("cargo build bank", &run_cargo(&app.dir, &build));
    let binary = app.dir.join("target").join(dir).join("bank");
    let trace = tmp.path().join("trace");
    let rdb = tools().join("rdb");
    let rec = run(&app.dir, &rdb, &["record", "-o", trace.to_str().unwrap(), "--", binary.to_str().unwrap()]);
    assert_success("rdb record", &rec);
    let recorded = text(&rec.stdout);

    app.instrument();
    let cargo_rdb = cargo_rdb();
    let mut replay = vec!["rdb", "replay", trace.to_str().unwrap(), "-q"];
    replay.extend_from_slice(profile_args);
    let rep = run(&app.dir, &cargo_rdb, &replay);
    let replayed = text(&rep.stdout);
    let stderr = text(&rep.stderr);
    if release {
        // Some arguments are optimized out at some hits in release: those
        // hits are reported and the region is not run there (exit status 5).
        assert!(matches!(rep.status.code(), Some(0 | 5)), "replay failed:\n{replayed}\n{stderr}");
        for line in stderr.lines().filter(|l| l.contains("could not run")) {
            assert!(line.contains("optimized out at this location"), "{line}");
        }
    } else {
        assert_eq!(rep.status.code(), Some(0), "replay failed:\n{replayed}\n{stderr}");
    }
    let (debug, program): (Vec<&str>, Vec<&str>) = replayed.lines().partition(|l| l.starts_with("[rdb] "));
    let program: String = program.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(program, recorded, "the program's output differs from the recording");
    assert_eq!(
        std::fs::read(app.dir.join("target/rdb").join(dir).join("bank")).unwrap(),
        std::fs::read(&binary).unwrap(),
        "the main binary is not the recorded one"
    );

    // The thread closure and `transfer` (an `impl Write` generic) saw what
    // the program logged, transfer by transfer.
    // The program prints the logs in join order, the regions ran in
    // execution order: compare them as sets of transfers.
    let mut logged: Vec<&str> = recorded.lines().filter(|l| l.starts_with("moved ")).collect();
    logged.sort_unstable();
    let mut moved: Vec<&str> =
        debug.iter().filter_map(|l| l.strip_prefix("[rdb] ")).filter(|l| l.starts_with("moved ")).collect();
    moved.sort_unstable();
    assert_eq!(moved, logged, "region in `transfer`:\n{replayed}");
    // In release the loop around this region is unrolled (four copies of the
    // statement in one function, no DWARF entity for three): each copy runs it.
    let thread_hits = debug.iter().filter(|l| l.contains("] thread ")).count();
    assert_eq!(thread_hits, 12, "thread closure:\n{replayed}");
    for line in debug.iter().filter(|l| l.contains("] thread ")) {
        // `[rdb] thread T step I amount A` with A = (7T + I) % 13 + 1.
        let w: Vec<usize> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
        assert_eq!(w[2], (w[0] * 7 + w[1]) % 13 + 1, "{line}");
    }
    if release {
        // Both instantiations of `describe<T>`, each with its own type.
        let balances = recorded.lines().find_map(|l| l.strip_prefix("balances: ")).unwrap();
        assert!(debug.contains(&format!("[rdb] describe balances = {balances}").as_str()), "{replayed}");
        assert!(debug.contains(&"[rdb] describe threads = 3"), "{replayed}");
        // `audit`'s `round` and `total` have no DWARF location in release: they are read in
        // the future's state, with the values the program printed; under both runtimes (in the
        // spawned task, `audit` is inlined into the `async` block awaiting it, and its state is
        // a field of that block's state).
        for round in ["1", "2"] {
            let total = recorded.lines().find_map(|l| l.strip_prefix(&format!("audit {round}: "))).unwrap();
            let lines: Vec<&&str> = debug.iter().filter(|l| l.starts_with(&format!("[rdb] audit {round}: "))).collect();
            assert_eq!(lines, [&format!("[rdb] audit {round}: {total}")], "{replayed}\n{stderr}");
        }
        // `Ledger::record` is inlined into `main`'s loop, its only anchor row on alignment
        // padding no path runs: the region (first in its body) runs at the copy's entry, once
        // per thread's log.
        assert_eq!(debug.iter().filter(|l| l.starts_with("[rdb] record #")).count(), 3, "{replayed}\n{stderr}");
        return;
    }
    // The generic impl's method, with T = String: each thread's whole log.
    assert_eq!(debug.iter().filter(|l| l.starts_with("[rdb] record #")).count(), 3, "{replayed}");
    // Both instantiations of `describe<T>`, each with its own type.
    let balances = recorded.lines().find_map(|l| l.strip_prefix("balances: ")).unwrap();
    assert!(debug.contains(&format!("[rdb] describe balances = {balances}").as_str()), "{replayed}");
    assert!(debug.contains(&"[rdb] describe threads = 3"), "{replayed}");
    // The async fn under both runtimes, the async block of the spawned task.
    for round in ["1", "2"] {
        let total = recorded.lines().find_map(|l| l.strip_prefix(&format!("audit {round}: "))).unwrap();
        assert!(debug.contains(&format!("[rdb] audit {round}: {total}").as_str()), "{replayed}");
    }
    let total = recorded.lines().find_map(|l| l.strip_prefix("audit 2: ")).unwrap();
    assert!(debug.contains(&format!("[rdb] task total {total}").as_str()), "{replayed}");
    // The `sort_by` closure compared values of the balances.
    let compares = debug.iter().filter(|l| l.starts_with("[rdb] compare ")).count();
    assert!(compares >= 3, "{replayed}");
}

pub fn regions_in_generics_closures_and_async_replay_in_a_dev_build() {
    record_then_replay_with_regions(false);
}

pub fn regions_in_generics_closures_and_async_replay_in_a_release_build() {
    record_then_replay_with_regions(true);
}

/// `tests/fixtures/awaited`: `async fn`s suspended at an `.await` and resumed
/// by a later `poll` (a small executor that writes over the stack between
/// polls). Variables the program keeps across the `.await` reach the region
/// with their values; one it does not keep lives in a dead `poll` frame (a
/// dev build's DWARF still names its slot): the build says so with the
/// `.await`'s position, and the replay reports the region instead of
/// running it with a stale value.
pub fn an_async_variable_not_kept_across_an_await_is_reported_never_read_stale() {
    let tmp = scratch("awaited");
    let app = SampleApp::fixture("awaited", tmp.path());
    assert_success("cargo build awaited", &run_cargo(&app.dir, &["build", "-q"]));
    let binary = app.dir.join("target/debug/awaited");
    let trace = tmp.path().join("trace");
    let rdb = tools().join("rdb");
    let rec = run(&app.dir, &rdb, &["record", "-o", trace.to_str().unwrap(), "--", binary.to_str().unwrap()]);
    assert_success("rdb record", &rec);
    let recorded = text(&rec.stdout);

    app.instrument();
    let build = run_cargo_rdb(&app.dir, &["build"]);
    assert_success("cargo rdb build", &build);
    let warnings = text(&build.stderr);
    // `forget`'s `k` and `rounds`' `base`, each named
    // with the `.await` it is not kept across.
    for (name, at) in [("k", "src/main.rs:62:22"), ("base", "src/main.rs:77:26")] {
        assert!(
            warnings.lines().any(|l| l.contains(&format!("`{name}` is not available"))
                && l.contains(&format!("across the `.await` at {}/{at}", app.dir.display()))),
            "no build warning for `{name}`:\n{warnings}"
        );
    }
    // `keep`'s variables, the loop index of `rounds` (bound again after each
    // resume) and a value bound by an `.await` are served.
    for name in ["id", "name", "len", "i", "kept"] {
        assert!(!warnings.contains(&format!("`{name}` is not available")), "{warnings}");
    }

    let rep = run(&app.dir, &cargo_rdb(), &["rdb", "replay", trace.to_str().unwrap(), "-q"]);
    let replayed = text(&rep.stdout);
    let stderr = text(&rep.stderr);
    assert_eq!(rep.status.code(), Some(5), "{replayed}\n{stderr}");
    let (debug, program): (Vec<&str>, Vec<&str>) = replayed.lines().partition(|l| l.starts_with("[rdb] "));
    let program: String = program.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(program, recorded, "the program's output differs from the recording");
    // Exactly the served regions ran, with the program's values.
    let mut expected: Vec<String> = recorded
        .lines()
        .filter_map(|l| l.strip_prefix("kept "))
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            format!("[rdb] keep {} {} len {}", w[0], w[1], w[2])
        })
        .collect();
    expected.insert(4, "[rdb] awaited 12".to_string());
    assert_eq!(debug, expected, "{replayed}\n{stderr}");
    let not_run: Vec<&str> = stderr.lines().filter(|l| l.contains("could not run")).collect();
    assert_eq!(not_run.len(), 6, "{stderr}");
    for line in not_run {
        assert!(line.contains("is not kept across the `.await` at"), "{line}");
    }
}

/// `tests/fixtures/inventory`, written fresh as a user would (a generic
/// function, a generic impl, closures on threads, an async task on tokio),
/// recorded from a plain build of cargo's default profile and replayed with
/// its regions. Returns the debug lines and cargo rdb's stderr.
fn replay_inventory(release: bool) -> (Vec<String>, String, String) {
    let tmp = scratch("inventory");
    // Some regions cannot run (below): reported, exit status 5.
    let run = record_and_replay_fixture("inventory", tmp.path(), release, 5);
    let (recorded, replayed, stderr) = (&run.recorded, &run.replayed, &run.stderr);
    let debug = run.debug();
    let dir = if release { "release" } else { "debug" };
    assert_eq!(
        std::fs::read(run.app.dir.join("target/rdb").join(dir).join("inventory")).unwrap(),
        std::fs::read(&run.binary).unwrap(),
        "the main binary is not the recorded one"
    );
    // The region in `Table::insert`, for both instantiations, once per call
    // (in release: inlined into an unrolled loop, one copy per iteration).
    let inserts: Vec<&str> = debug.iter().copied().filter(|l| l.starts_with("[rdb] insert ")).collect();
    assert_eq!(
        inserts,
        [
            "[rdb] insert \"pear\" -> 0 (row now 1, inserts 0)",
            "[rdb] insert \"fig\" -> 10 (row now 1, inserts 1)",
            "[rdb] insert \"pear\" -> 20 (row now 2, inserts 2)",
            "[rdb] insert \"kiwi\" -> 30 (row now 1, inserts 3)",
            "[rdb] insert 7 -> ('x', -4) (row now 1, inserts 0)",
            "[rdb] insert 7 -> ('y', 12) (row now 2, inserts 1)",
        ],
        "{replayed}\n{stderr}"
    );
    // Whatever runs in the thread closure sees its iteration's values.
    for line in debug.iter().filter(|l| l.starts_with("[rdb] worker ")) {
        // `[rdb] worker W step S value V local L`, V = 100W + S², L = sum of earlier V.
        let n: Vec<u64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
        assert_eq!(n[2], n[0] * 100 + n[1] * n[1], "{line}");
        assert_eq!(n[3], (0..n[1]).map(|s| n[0] * 100 + s * s).sum::<u64>(), "{line}");
    }
    // The async fn's region runs once (its `println!` has an overflow check's
    // panic path in the middle at opt-level 0), with the program's values.
    let settled = recorded.lines().find_map(|l| l.strip_prefix("settled task: ")).unwrap();
    let (sum, scaled) = settled.split_once(" -> ").unwrap();
    let settles: Vec<&str> = debug.iter().copied().filter(|l| l.starts_with("[rdb] settle ")).collect();
    if !release {
        assert_eq!(settles, [format!("[rdb] settle task sum {sum} scaled {scaled}")], "{replayed}");
    }
    assert!(settles.len() <= 1, "{replayed}");
    (debug.iter().map(|l| l.to_string()).collect(), stderr.clone(), replayed.clone())
}

pub fn a_fresh_program_replays_its_regions_in_a_dev_build() {
    let (debug, stderr, replayed) = replay_inventory(false);
    // The generic function, both instantiations, every iteration.
    let weighted = debug.iter().filter(|l| l.starts_with("[rdb] weighted item ")).count();
    assert_eq!(weighted, 5, "{replayed}");
    // Every iteration of every thread.
    assert_eq!(debug.iter().filter(|l| l.starts_with("[rdb] worker ")).count(), 12, "{replayed}");
    // `let half = got / 2; half` leaves no variable `half` in the DWARF:
    // reported, never run with a made-up value.
    assert!(stderr.contains("argument `half` (position 1) is optimized out"), "{stderr}");
}

pub fn a_fresh_program_replays_its_regions_in_a_release_build() {
    let (debug, stderr, replayed) = replay_inventory(true);
    // The thread closure's loop is unrolled and `local += value` has no code
    // of its own: the next line stands in, every copy is hit (3 threads x 4
    // steps) and `local` (changed in between) is reported, not read.
    let worker_hits = debug.iter().filter(|l| l.starts_with("[rdb] worker ")).count()
        + stderr.lines().filter(|l| l.contains("could not run: region 4 ")).count();
    assert_eq!(worker_hits, 12, "{replayed}\n{stderr}");
    assert!(stderr.contains("argument `local` (position 3) is possibly changed already: line"), "{stderr}");
}

/// The lines `[rdb] TAG ...` by TAG (a thread, a task, or `main`): in program order within
/// each TAG whatever the schedule.
fn by_tag<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in lines.into_iter().filter(|l| l.starts_with("[rdb] ")) {
        let tag = line.split(' ').nth(1).unwrap_or_default().to_string();
        out.entry(tag).or_default().push(line.to_string());
    }
    out
}

/// What the regions of fixture `name` must print: its instrumented source with each region's
/// code run in place as plain code (the `rdb_begin!();`/`rdb_end!();` lines and the
/// `#[debug_only]` marks taken out), built as a plain program and run natively. Returns its
/// output.
fn regions_as_plain_code(name: &str, tmp: &Path) -> String {
    let app = SampleApp::fixture(name, &tmp.join("native"));
    let source =
        std::fs::read_to_string(repo_root().join("tests/fixtures").join(name).join("rdb/src/main.rs")).unwrap();
    let plain: String = source
        .lines()
        .filter(|l| {
            let t = l.trim();
            !matches!(t, "rdb_begin!();" | "rdb_end!();" | "#[debug_only]") && !t.starts_with("use rdb_macros::")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(app.dir.join("src/main.rs"), plain).unwrap();
    assert_success(&format!("cargo build {name} (regions as plain code)"), &run_cargo(&app.dir, &["build", "-q"]));
    let run = output(timed(120, app.dir.join("target/debug").join(name)).current_dir(&app.dir));
    assert_success(&format!("{name} (regions as plain code)"), &run);
    text(&run.stdout)
}

/// `tests/fixtures/wordy`, a fresh program as a new user writes it (issue 10), with a region
/// in a generic impl's method and in the `sort_by` closure of another, in a default trait
/// method before a statement holding a one-line closure, in the `fold` closure of an `impl
/// Iterator` function, in a const-generic function, in closures run on threads, in an `async
/// fn` run as tokio tasks (before its loop's `.await`) and in the `async` block given to
/// `block_on`. Recorded from plain builds of cargo's dev and release profiles.
///
/// Dev: every region runs exactly where and as often as its code run as plain code does,
/// with the same values (the same program's native run is the oracle), nothing else runs,
/// and the program's output is the recording's. Release (optimized-out variables are
/// recovered elsewhere): the binary is the recorded one, the program's output is the
/// recording's, what the regions print is what they print in dev (per thread and task, in
/// order), what cannot run is reported with its reason, and no region crashes. Copies of a
/// region's code where it cannot run (vectorized, unrolled, a loop turned into a `memcpy`)
/// are reported at build time and at each pass; the `sort_by` closure inlined into the
/// sort's code runs as often as natively.
pub fn a_fresh_program_runs_each_region_as_its_code_run_in_place_would() {
    let tmp = scratch("wordy");
    let native = regions_as_plain_code("wordy", tmp.path());
    let expected = by_tag(native.lines());
    assert!(expected.len() >= 9, "threads, tasks and main:\n{native}");
    for release in [false, true] {
        let dir = tmp.path().join(if release { "release" } else { "dev" });
        std::fs::create_dir_all(&dir).unwrap();
        let run = record_and_replay_fixture("wordy", &dir, release, if release { 5 } else { 0 });
        let (replayed, stderr) = (&run.replayed, &run.stderr);
        let program: String = native.lines().filter(|l| !l.starts_with("[rdb] ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(program, run.recorded, "the regions as plain code change the program's output");
        let profile = if release { "release" } else { "debug" };
        assert_eq!(
            std::fs::read(run.app.dir.join("target/rdb").join(profile).join("wordy")).unwrap(),
            std::fs::read(&run.binary).unwrap(),
            "the main binary is not the recorded one"
        );
        assert!(!stderr.contains("crashed"), "release {release}:\n{stderr}");
        let got = by_tag(run.debug());
        if !release {
            // Including the `sort_by` and `fold` closures of generic code (found by their
            // instantiations' names), `score` only in its own code (not also in the closure
            // on its anchor's line), and the `async fn` only where its statement starts (not
            // also where a resumed future continues at the `.await`).
            assert!(!stderr.contains("warning"), "{stderr}");
            assert_eq!(got, expected, "{replayed}\n{stderr}");
            continue;
        }
        for (tag, lines) in &got {
            let mut wanted = expected.get(tag).map(|l| l.iter()).into_iter().flatten();
            for line in lines {
                assert!(wanted.any(|w| w == line), "release, {tag}: `{line}` is not a dev line in order:\n{replayed}");
            }
        }
        for line in stderr.lines().filter(|l| l.starts_with("rdb: ") && l.contains("could not run")) {
            assert!(
                line.contains("optimized out at this location") || line.contains("is a copy where it cannot run"),
                "{line}"
            );
        }
        // Run or reported as often as in dev: the `async fn`'s region once per word (not
        // also where the future is resumed), the one before `block_on`'s `for` loop once
        // (not again at the loop's `next()` after each resumed `.await`).
        let hits = |region: u32, text: &str| {
            run.debug().iter().filter(|l| l.contains(text)).count()
                + stderr.lines().filter(|l| l.contains(&format!("region {region} could not run"))).count()
        };
        assert_eq!(hits(8, "] task"), 15, "{replayed}\n{stderr}");
        assert_eq!(hits(10, "] main block_on "), 1, "{replayed}\n{stderr}");
        // The `sort_by` closure is inlined into the sort's code, where a test that ends the
        // comparison early jumps past its anchor's rows: it runs at each copy's entry (the
        // region is the first statement of the closure), as often as its code run natively
        // (4 of 25 before).
        let native_count = |text: &str| native.lines().filter(|l| l.contains(text)).count();
        assert_eq!(hits(2, "] main cmp "), native_count("] main cmp "), "{replayed}\n{stderr}");
        // What cannot run is never skipped silently: `weight` is vectorized in `score`'s
        // `map(..).sum()` (4 calls per pass), `fold`'s closure unrolled, `widest`'s loop
        // turned into a `memcpy`. The build says so per copy with its address, the replay
        // at each pass, and the end of the run counts the passes per region.
        for (region, what) in [
            (4, "vectorized: the optimizer computes several calls at once"),
            (6, "the optimizer unrolled the loop"),
            (7, "no loop in this copy's code"),
        ] {
            let build = stderr
                .lines()
                .filter(|l| l.starts_with("warning: ") && l.contains(&format!("region {region} (")) && l.contains(what))
                .count();
            assert!(build > 0, "no build warning for region {region}:\n{stderr}");
            let passes = stderr
                .lines()
                .filter(|l| l.contains(&format!("region {region} could not run: its code at 0x")) && l.contains(what))
                .count();
            assert!(passes > 0, "region {region}:\n{stderr}");
            assert!(
                stderr.contains(&format!(
                    "region {region} did not run at {passes} pass{} through copies of its code where it cannot run",
                    if passes == 1 { "" } else { "es" }
                )),
                "region {region}:\n{stderr}"
            );
            assert_eq!(hits(region, "\u{0}"), passes, "region {region} ran somewhere:\n{replayed}\n{stderr}");
        }
        // 15 calls of `weight`: 3 passes of the vector loop computing 4 each (the 3 calls
        // left run in scalar code with no trace of `weight`, which the warning says).
        assert!(stderr.contains("region 4 did not run at 3 passes"), "{stderr}");
    }
}

/// `tests/fixtures/looped`: a region just before a `for` loop over `text.split(' ')`, whose
/// header line may have no code of its own in release (the iterator is all inlined). Dev and
/// release print what the regions run as plain code print, in order: `count`'s region runs
/// once per text. `main`'s copy, in an outer loop the optimizer unrolled, is reported at build
/// time and at replay, exit 5, never run at a wrong place. `tests/fixtures/unrolled` is that
/// `main` alone: there the first row of the `for` line is inside the first copy of the loop,
/// on a path no pass takes (before: placed there, never reached, exit 0 with no warning); now
/// the three copies of the loop, two without rows of their own, are reported with the first
/// copy's entry, exit 5.
pub fn a_region_before_a_for_loop_runs_once_before_it_in_release() {
    let tmp = scratch("looped");
    let native = regions_as_plain_code("looped", tmp.path());
    let expected = by_tag(native.lines());
    assert_eq!(expected.get("count").map(Vec::len), Some(3), "{native}");
    for release in [false, true] {
        let dir = tmp.path().join(if release { "release" } else { "dev" });
        std::fs::create_dir_all(&dir).unwrap();
        let run = record_and_replay_fixture("looped", &dir, release, if release { 5 } else { 0 });
        let (replayed, stderr) = (&run.replayed, &run.stderr);
        let got = by_tag(run.debug());
        if !release {
            assert_eq!(got, expected, "{replayed}\n{stderr}");
            continue;
        }
        assert_eq!(got.get("count"), expected.get("count"), "{replayed}\n{stderr}");
        for (tag, lines) in &got {
            let mut wanted = expected.get(tag).map(|l| l.iter()).into_iter().flatten();
            for line in lines {
                assert!(wanted.any(|w| w == line), "release, {tag}: `{line}` is not a dev line in order:\n{replayed}");
            }
        }
        // `main`'s region: run as natively, or reported at build time and at each pass.
        if got.get("main").map(Vec::len) != expected.get("main").map(Vec::len) {
            assert!(
                stderr
                    .lines()
                    .any(|l| l.starts_with("warning: ") && l.contains("region 2 (") && l.contains("cannot run it")),
                "{stderr}"
            );
            assert!(stderr.contains("region 2 could not run: its code at 0x"), "{stderr}");
        }
    }
    let dir = tmp.path().join("unrolled");
    std::fs::create_dir_all(&dir).unwrap();
    let run = record_and_replay_fixture("unrolled", &dir, true, 5);
    let stderr = &run.stderr;
    assert!(run.debug().is_empty(), "{}", run.replayed);
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: ") && l.contains("region 1 (") && l.contains("3 copies")),
        "{stderr}"
    );
    assert!(stderr.contains("region 1 could not run: its code at 0x"), "{stderr}");
}

/// A fixture built with cargo's dev or release profile, recorded with `rdb record`, then
/// replayed with its regions by `cargo rdb replay`; the replay exited with the status expected
/// and the program's output is the recording's.
struct FixtureReplay {
    app: SampleApp,
    /// The recorded executable (cargo's plain build).
    binary: std::path::PathBuf,
    recorded: String,
    replayed: String,
    stderr: String,
}

impl FixtureReplay {
    /// The regions' lines (`[rdb] ...`).
    fn debug(&self) -> Vec<&str> {
        self.replayed.lines().filter(|l| l.starts_with("[rdb] ")).collect()
    }
}

fn record_and_replay_fixture(name: &str, tmp: &Path, release: bool, exit: i32) -> FixtureReplay {
    record_and_replay(SampleApp::fixture(name, tmp), tmp, release, exit)
}

fn record_and_replay(app: SampleApp, tmp: &Path, release: bool, exit: i32) -> FixtureReplay {
    let name = app.name.as_str();
    let (profile_args, dir): (&[&str], &str) = if release { (&["--release"], "release") } else { (&[], "debug") };
    let mut build = vec!["build", "-q"];
    build.extend_from_slice(profile_args);
    assert_success(&format!("cargo build {name}"), &run_cargo(&app.dir, &build));
    let binary = app.dir.join("target").join(dir).join(name);
    let trace = tmp.join("trace");
    let rdb = tools().join("rdb");
    let rec = run(&app.dir, &rdb, &["record", "-o", trace.to_str().unwrap(), "--", binary.to_str().unwrap()]);
    assert_success("rdb record", &rec);
    let recorded = text(&rec.stdout);

    app.instrument();
    let mut replay = vec!["rdb", "replay", trace.to_str().unwrap(), "-q"];
    replay.extend_from_slice(profile_args);
    let rep = run(&app.dir, &cargo_rdb(), &replay);
    let (replayed, stderr) = (text(&rep.stdout), text(&rep.stderr));
    assert_eq!(rep.status.code(), Some(exit), "{name}, release {release}:\n{replayed}\n{stderr}");
    let program: String = replayed.lines().filter(|l| !l.starts_with("[rdb] ")).map(|l| format!("{l}\n")).collect();
    assert_eq!(program, recorded, "{name}: the program's output differs from the recording");
    FixtureReplay { app, binary, recorded, replayed, stderr }
}

/// `tests/fixtures/shared`: a `let` in one region is visible in a later
/// region of the same call. A recursive function on two threads: each
/// call's second region sees its own call's first-region values (kept per
/// call by its frame address), in dev and release builds.
pub fn debug_only_locals_are_shared_per_call_across_recursion_and_threads() {
    for release in [false, true] {
        let tmp = scratch("shared");
        let run = record_and_replay_fixture("shared", tmp.path(), release, 0);
        let (recorded, replayed, stderr) = (&run.recorded, &run.replayed, &run.stderr);
        let debug = run.debug();
        // `TAG N BELOW` from the program; `[rdb] TAG depth N: entered 10N,
        // below BELOW, checked 10N + BELOW` from the second region of the
        // same call, in the same order within each thread (TAG). Across the two
        // threads the order is the recorded schedule's: a thread may reach its
        // region before the other thread's earlier lines are written.
        let expected: Vec<String> = recorded
            .lines()
            .filter(|l| !l.starts_with("joined"))
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                let (n, below): (u32, u32) = (w[1].parse().unwrap(), w[2].parse().unwrap());
                format!("[rdb] {} depth {n}: entered {}, below {below}, checked {}", w[0], n * 10, n * 10 + below)
            })
            .collect();
        assert_eq!(debug.len(), expected.len(), "release {release}:\n{replayed}\n{stderr}");
        for tag in ["a", "b"] {
            let of = |lines: Vec<&str>| -> Vec<String> {
                lines.into_iter().filter(|l| l.starts_with(&format!("[rdb] {tag} "))).map(str::to_string).collect()
            };
            let mine = of(expected.iter().map(String::as_str).collect());
            assert!(!mine.is_empty(), "no line of thread {tag}:\n{recorded}");
            assert_eq!(of(debug.clone()), mine, "release {release}, thread {tag}:\n{replayed}\n{stderr}");
        }
    }
}

/// `tests/fixtures/threaded`: a release build jumps from after `grow(x)` in
/// `if x > 0 { r = grow(x); } /* region */ if x == 0 { .. }` straight past the
/// second test, whose outcome it knows there, so the anchor's code is not on
/// that path. The locator serves the path (a location at its jump, found in
/// the function's control-flow graph): release runs the region as often, with
/// the same values, as dev, and the build says nothing about it.
pub fn a_path_the_optimizer_threads_past_the_anchor_runs_the_region_in_release() {
    let mut outputs = Vec::new();
    for release in [false, true] {
        let tmp = scratch("threaded");
        let run = record_and_replay_fixture("threaded", tmp.path(), release, 0);
        assert!(!run.stderr.contains("skips the code"), "{}", run.stderr);
        outputs.push(run.debug().join("\n"));
    }
    assert_eq!(outputs[0], "[rdb] step -2\n[rdb] step 0\n[rdb] step 5\n[rdb] step 9");
    assert_eq!(outputs[1], outputs[0]);
}

/// `tests/fixtures/entry`: at the end of `weigh` a release build keeps `values` (a slice)
/// nowhere: its location list stops at the loop. `values` is a parameter bound without `mut`,
/// so its value there is the one it had on entry, which the replay keeps at each call's entry
/// (descriptor class `entry_value`): the region prints in release what it prints in dev.
pub fn a_parameter_optimized_out_in_release_reads_its_value_on_entry() {
    let mut outputs = Vec::new();
    for release in [false, true] {
        let tmp = scratch("entry");
        let run = record_and_replay_fixture("entry", tmp.path(), release, 0);
        let debug = run.debug();
        if release {
            let arguments =
                std::fs::read_to_string(run.app.dir.join("target/rdb/release/entry.rdb-arguments.json")).unwrap();
            assert!(arguments.contains("\"class\": \"entry_value\""), "{arguments}");
        }
        outputs.push(debug.join("\n"));
    }
    let expected = "[rdb] chunk0: 6 values from 1, scale 2, total 42\n\
                    [rdb] chunk1: 6 values from 7, scale 3, total 171\n\
                    [rdb] chunk2: 6 values from 13, scale 4, total 372\n\
                    [rdb] chunk3: 2 values from 19, scale 5, total 195";
    assert_eq!(outputs, [expected, expected]);
}

/// The same fixture recorded from a plain build of a manifest that already declares
/// `rdb-macros` (a project that keeps it): cargo hashes every dependency into the symbol
/// names, so that is another binary than the one without it, and `cargo rdb replay` finds
/// which of the two was recorded.
pub fn a_program_recorded_with_rdb_macros_declared_replays_its_regions() {
    let tmp = scratch("entry-declared");
    let app = SampleApp::fixture("entry", tmp.path());
    app.declare_rdb_macros();
    let run = record_and_replay(app, tmp.path(), false, 0);
    assert_eq!(run.debug().len(), 4, "{}", run.replayed);
}

/// `tests/fixtures/state`: regions in an `async fn` and in an `async` block run by tokio read
/// variables held across an `.await`. A release build's DWARF gives them no location, but they
/// live in the future's state object, at offsets the DWARF's layout of it gives, through the
/// poll function's first parameter (descriptor class `indirect`, or `stack` where the executor
/// keeps the future in its own frame): cargo's default release profile prints each hit's values.
pub fn async_locals_kept_across_an_await_are_read_in_the_state_in_release() {
    let tmp = scratch("state");
    let run = record_and_replay_fixture("state", tmp.path(), true, 0);
    assert!(!run.stderr.contains("could not run"), "{}\n{}", run.replayed, run.stderr);
    let arguments = std::fs::read_to_string(run.app.dir.join("target/rdb/release/state.rdb-arguments.json")).unwrap();
    assert!(arguments.contains("\"class\": \"indirect\""), "{arguments}");
    let mut expected = Vec::new();
    for id in 1..=3u64 {
        let mut sum = 0;
        for (step, x) in (1..=3u64).enumerate() {
            sum += (x * 10 + id) * id;
            expected.push(format!("[rdb] task {id}: step {}, sum {sum}", step + 1));
        }
    }
    expected.extend(["[rdb] collected []", "[rdb] collected [63]", "[rdb] collected [63, 132]"].map(String::from));
    expected.sort();
    let mut debug: Vec<String> = run.debug().into_iter().map(String::from).collect();
    debug.sort();
    assert_eq!(debug, expected, "{}\n{}", run.replayed, run.stderr);
}

/// The lines of `lines` whose text after `[rdb] TAG ` starts with one of `what`.
fn lines_of<'a>(lines: &'a [String], what: &[&str]) -> Vec<&'a str> {
    lines
        .iter()
        .map(String::as_str)
        .filter(|l| l.splitn(3, ' ').nth(2).is_some_and(|rest| what.iter().any(|w| rest.starts_with(w))))
        .collect()
}

/// `tests/fixtures/sched`, a small job scheduler written fresh as a user would (issue 10): a
/// region in a generic function with type and const parameters, an `impl Trait` argument and a
/// `where` clause; in a generic impl's methods (one after a `?`); in a trait's default method
/// (dynamic dispatch) and in an impl overriding another default; in a nested function; after a
/// `?` in a function returning `Result`; in a recursive function whose second region reads a
/// debug-only `let` of the first; at the end of a `for` body in a `move` closure on
/// `thread::spawn`; in `filter_map`'s closure and at the end of a `thread::scope` closure; in
/// `retain`'s and `sort_unstable_by_key`'s closures; in an `async fn` run by tokio's
/// current-thread and multi-thread runtimes and in an `async` block. Recorded from plain builds
/// of cargo's default dev and release profiles; the oracle is the same regions run in place as
/// plain code, compared per thread, scoped thread and task in program order.
///
/// Dev: every region runs as its code in place does, except what the build reports with its
/// reason: a variable that is the function's tail expression (`let w = ..; region; w`: rustc
/// builds it in the return place and describes no variable for it) and an `async fn`'s
/// parameter that the program never uses (not kept across the `.await`). Release: the binary
/// is the recorded one, everything a region prints is a dev line in order, the regions outside
/// the classes listed in the README's limitations (copies without line rows of their own,
/// arguments optimized out) print exactly their dev lines, and whatever does not run is
/// reported.
pub fn a_scheduler_written_fresh_runs_its_regions_as_in_place_code_would() {
    let tmp = scratch("sched");
    let native = regions_as_plain_code("sched", tmp.path());
    let expected = by_tag(native.lines());
    // main, 3 threads, 3 scoped threads, 4 tasks.
    assert_eq!(expected.len(), 11, "{native}");
    let all: Vec<String> = expected.values().flatten().cloned().collect();
    // Not served in dev (reported): tail-expression variables and the unused `async fn` parameter.
    let tail = ["show ", "weight ", "current got "];
    for release in [false, true] {
        let dir = tmp.path().join(if release { "release" } else { "dev" });
        std::fs::create_dir_all(&dir).unwrap();
        let run = record_and_replay_fixture("sched", &dir, release, 5);
        let (replayed, stderr) = (&run.replayed, &run.stderr);
        let program: String = native.lines().filter(|l| !l.starts_with("[rdb] ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(program, run.recorded, "the regions as plain code change the program's output");
        let profile = if release { "release" } else { "debug" };
        assert_eq!(
            std::fs::read(run.app.dir.join("target/rdb").join(profile).join("sched")).unwrap(),
            std::fs::read(&run.binary).unwrap(),
            "the main binary is not the recorded one"
        );
        assert!(!stderr.contains("crashed"), "release {release}:\n{stderr}");
        // The program's own unused parameters and pattern bindings are not called a cause of
        // a differing binary.
        assert!(!stderr.contains("only debug code uses"), "{stderr}");
        let got = by_tag(run.debug());
        let not_run: Vec<&str> = stderr.lines().filter(|l| l.contains("could not run")).collect();
        if !release {
            let mut served = expected.clone();
            for lines in served.values_mut() {
                lines.retain(|l| {
                    let rest = l.splitn(3, ' ').nth(2).unwrap_or_default();
                    !l.starts_with("[rdb] task") && !tail.iter().any(|t| rest.starts_with(t))
                });
            }
            served.retain(|_, lines| !lines.is_empty());
            assert_eq!(got, served, "{replayed}\n{stderr}");
            // Each hit not served is reported with its reason.
            let reported = |region: u32, why: &str| {
                not_run
                    .iter()
                    .filter(|l| l.contains(&format!("region {region} could not run")) && l.contains(why))
                    .count()
            };
            assert_eq!(reported(6, "argument `text` (position 2) is optimized out"), 4, "{stderr}");
            assert_eq!(reported(8, "argument `w` (position 1) is optimized out"), 8, "{stderr}");
            assert_eq!(reported(17, "argument `got` (position 0) is optimized out"), 1, "{stderr}");
            assert_eq!(reported(11, "argument `id` (position 0) is not kept across the `.await`"), 11, "{stderr}");
            assert_eq!(not_run.len(), 24, "{stderr}");
            continue;
        }
        for (tag, lines) in &got {
            let mut wanted = expected.get(tag).map(|l| l.iter()).into_iter().flatten();
            for line in lines {
                assert!(wanted.any(|w| w == line), "release, {tag}: `{line}` is not a dev line in order:\n{replayed}");
            }
        }
        // What does not run is an argument optimized out, or a copy the optimizer unrolled or
        // merged (`chunk_sums`, region 5, inlined into `main` and unrolled: reported at build
        // time and at each pass, where it was skipped silently before).
        let copy = |l: &str| l.contains("cannot run it:") || l.contains("is a copy where it cannot run");
        for line in &not_run {
            assert!(line.contains("optimized out at this location") || copy(line), "{line}");
        }
        assert!(not_run.iter().any(|l| l.contains("region 5") && copy(l)), "{stderr}");
        // Served whole in release: after a `?`, the generic impl's `push`, the default method
        // through `dyn`, the override, both regions of the recursion (a debug-only `let`
        // shared), the end of the scoped threads' closure.
        let whole = ["parsed ", "push ", "describe ", "retries ", "tree ", "kept "];
        let debug: Vec<String> = run.debug().iter().map(|l| l.to_string()).collect();
        let mut want = lines_of(&all, &whole);
        let mut have = lines_of(&debug, &whole);
        want.sort_unstable();
        have.sort_unstable();
        assert_eq!(have, want, "{replayed}\n{stderr}");
    }
}

/// `tests/fixtures/exits`: regions in loop bodies right before the statement leaving the loop.
/// `return Some(i)` has code in a dev build and the region runs there once per find; `break`
/// has none (the `if`'s jump goes to the code after the loop), and the code of the next line,
/// which also runs when the branch is not taken, used to stand in for it: the region printed
/// at every call. Now it is reported with what to do instead; in release, each region prints
/// the dev lines or is reported.
pub fn regions_before_a_loops_exit_run_there_or_are_reported() {
    let tmp = scratch("exits");
    let found = ["[rdb] found 1 at 0", "[rdb] found 4 at 1", "[rdb] found 7 at 2", "[rdb] found 10 at 3"];
    for release in [false, true] {
        let dir = tmp.path().join(if release { "release" } else { "dev" });
        std::fs::create_dir_all(&dir).unwrap();
        let run = record_and_replay_fixture("exits", &dir, release, 0);
        assert_eq!(run.recorded, "hits 10 at 10\n");
        let stderr = &run.stderr;
        let got: Vec<&str> = run.replayed.lines().filter(|l| l.starts_with("[rdb] ")).collect();
        assert!(!got.iter().any(|l| l.starts_with("[rdb] big")), "release {release}: {got:?}\n{stderr}");
        assert!(stderr.contains("region 2 cannot run"), "release {release}: {stderr}");
        assert!(stderr.contains("testing its condition inside the region"), "{stderr}");
        if !release || got.len() == found.len() {
            assert_eq!(got, found, "release {release}: {stderr}");
        } else {
            assert!(got.is_empty(), "{got:?}\n{stderr}");
            assert!(stderr.contains("region 1 cannot run"), "{stderr}");
        }
    }
}

/// `tests/fixtures/calc`, a program written fresh to judge issue 10, unlike the other
/// fixtures in shape: a tokenizer (`impl Iterator` return, a `filter_map` closure) and a
/// recursive prefix evaluator with a nested fn and debug-only locals shared between two
/// regions of each call, run in closures on threads; a const-generic `Pool<T, N>` with a
/// generic `apply<F: Fn(&mut T)>`; `impl<T> Trait for Wrapper<T>` and the trait's default
/// method; `sort_by_key` and `retain` closures; `async fn`s and an `async move` block run
/// as tasks on tokio's current-thread and multi-thread runtimes. Recorded from plain builds
/// of cargo's dev and default release profiles.
///
/// Dev: every region runs where and as often as its code run in place natively, with the
/// same values, per thread and task in order. The `async move` block's region sits before
/// `let (label, acc) = settle(..).await;`, whose first code in `poll` is the resume point
/// of that `.await`: it ran there at every resumption (4 times per task, once with a stale
/// `values`), not once. The `retain` closure's region, before its tail expression `keep`,
/// is the one exception: rustc keeps no debug information for `keep` (merged into the
/// return value), which the build and each pass report. Release: the binary is the
/// recorded one, the program's output is the recording's, what the regions print is what
/// they print in dev (per thread and task, in order), what cannot run is reported with its
/// reason, and no region crashes.
pub fn a_calculator_written_fresh_runs_its_regions_as_in_place_code_would() {
    let tmp = scratch("calc");
    let native = regions_as_plain_code("calc", tmp.path());
    let expected = by_tag(native.lines());
    assert!(expected.len() >= 10, "threads, tasks and main:\n{native}");
    for release in [false, true] {
        let dir = tmp.path().join(if release { "release" } else { "dev" });
        std::fs::create_dir_all(&dir).unwrap();
        let run = record_and_replay_fixture("calc", &dir, release, 5);
        let (replayed, stderr) = (&run.replayed, &run.stderr);
        let program: String = native.lines().filter(|l| !l.starts_with("[rdb] ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(program, run.recorded, "the regions as plain code change the program's output");
        let profile = if release { "release" } else { "debug" };
        assert_eq!(
            std::fs::read(run.app.dir.join("target/rdb").join(profile).join("calc")).unwrap(),
            std::fs::read(&run.binary).unwrap(),
            "the main binary is not the recorded one"
        );
        assert!(!stderr.contains("crashed"), "release {release}:\n{stderr}");
        let got = by_tag(run.debug());
        let not_run = |reason: &str| {
            stderr
                .lines()
                .filter(|l| l.starts_with("rdb: ") && l.contains("could not run") && l.contains(reason))
                .count()
        };
        if !release {
            let mut wanted = expected.clone();
            wanted.get_mut("main").expect("main's lines").retain(|l| !l.contains(" retain "));
            assert_eq!(got, wanted, "{replayed}\n{stderr}");
            let retained = native.lines().filter(|l| l.starts_with("[rdb] main retain ")).count();
            assert_eq!(not_run("argument `keep` (position 1) is optimized out at this location"), retained, "{stderr}");
            assert_eq!(stderr.lines().filter(|l| l.contains("could not run")).count(), retained, "{stderr}");
            continue;
        }
        for (tag, lines) in &got {
            let mut wanted = expected.get(tag).map(|l| l.iter()).into_iter().flatten();
            for line in lines {
                assert!(wanted.any(|w| w == line), "release, {tag}: `{line}` is not a dev line in order:\n{replayed}");
            }
        }
        for line in stderr.lines().filter(|l| l.starts_with("rdb: ") && l.contains("could not run")) {
            assert!(
                line.contains("optimized out at this location") || line.contains("is a copy where it cannot run"),
                "{line}"
            );
        }
        // The `async move` block's region, once per task at most, never at a resumption.
        for task in ["mt0", "mt1", "mt2"] {
            let blocks = got.get(task).map_or(0, |l| l.iter().filter(|l| l.contains(" block ")).count());
            assert!(blocks <= 1, "release, {task}:\n{replayed}");
        }
    }
}
