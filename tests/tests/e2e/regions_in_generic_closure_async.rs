//! Regions in generic functions and impls, closures run on threads, `async`
//! code run by tokio: the `bank` sample app is recorded from a plain build,
//! then replayed with `cargo rdb replay` of its instrumented variant. Every
//! region runs with the values the program itself logged, the program's
//! output is the recording's, and the main binary is the recorded one.

use rdb_tests::{assert_success, cargo_rdb, output, run_cargo, scratch, text, timed, tools, SampleApp};
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
