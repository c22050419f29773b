//! The accepted-constructs suite: every `tests/ui-accepted/*.rs` is a
//! `src/main.rs` whose regions sit in places real Rust puts code (generic
//! functions and impls, trait methods, closures, `async` code, nested
//! functions), or that declares event callbacks. Each must extract without
//! diagnostics; the debug text and the regions and callbacks found are pinned
//! in `.debug.rs` and `.regions` files beside it
//! (`RDB_BLESS=1` rewrites them). Each case is also built with `cargo rdb
//! build` (its own test case): the debug module compiles.

use libtest_mimic::{Failed, Trial};
use rdb_extract::{extract, SourceInput};
use rdb_tests::{assert_success, repo_root, run_cargo_rdb, scratch, SampleApp};
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    let dir = repo_root().join("tests/ui-accepted");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.to_string_lossy().ends_with(".debug.rs"))
        .collect();
    cases.sort();
    cases
}

/// One trial per accepted case for its extraction (against its golden files) and one for its
/// `cargo rdb build`, plus the suite's size.
pub fn trials() -> Vec<Trial> {
    let cases = cases();
    let count = cases.len();
    let mut trials = vec![Trial::test("ui_accepted::suite_has_at_least_5_cases", move || {
        if count >= 5 {
            Ok(())
        } else {
            Err(Failed::from(format!("found {count} cases")))
        }
    })];
    for case in cases {
        let name = case.file_stem().unwrap().to_string_lossy().into_owned();
        let built = case.clone();
        trials.push(Trial::test(format!("ui_accepted::{name}"), move || extracts_cleanly(&case)));
        trials.push(Trial::test(format!("ui_accepted::{name}::cargo_rdb_build"), move || {
            cargo_rdb_builds(&built);
            Ok(())
        }));
    }
    trials
}

/// The case extracts without diagnostics; its debug text and regions are the golden ones.
fn extracts_cleanly(case: &Path) -> Result<(), Failed> {
    let bless = std::env::var_os("RDB_BLESS").is_some();
    let text = std::fs::read_to_string(case).unwrap();
    let input = SourceInput { path: "src/main.rs".into(), text, module_path: vec![], crate_name: "app".into() };
    let extraction = match extract(&[input], 1) {
        Ok(x) => x,
        Err(d) => return Err(format!("{}: rejected:\n{d}", case.display()).into()),
    };
    let mut regions = String::new();
    for r in &extraction.regions {
        let args: Vec<String> = r
            .arguments
            .iter()
            .map(|a| match a.after_await {
                Some(at) => format!("{}:{:?} after .await {}:{}", a.name, a.kind, at.line, at.column),
                None => format!("{}:{:?}", a.name, a.kind),
            })
            .collect();
        let nesting: Vec<String> =
            r.nesting.iter().map(|n| format!("{:?}@{}:{}", n.kind, n.at.line, n.at.column)).collect();
        regions.push_str(&format!(
            "region {} in `{}` at {}:{} anchor {}:{} nesting [{}] args [{}]\n",
            r.id,
            r.function,
            r.begin.line,
            r.begin.column,
            r.anchor.line,
            r.anchor.column,
            nesting.join(", "),
            args.join(", ")
        ));
    }
    for c in &extraction.callbacks {
        regions.push_str(&format!(
            "callback {} `{}` in [{}] at {}:{} {:?}\n",
            c.id,
            c.function,
            c.module_path.join("::"),
            c.at.line,
            c.at.column,
            c.kind
        ));
    }
    let mut failures = Vec::new();
    for (suffix, actual) in [("debug.rs", &extraction.files[0].debug), ("regions", &regions)] {
        let golden = case.with_extension(suffix);
        if bless {
            std::fs::write(&golden, actual).unwrap();
        } else if std::fs::read_to_string(&golden).unwrap_or_default() != *actual {
            failures.push(format!("{}: {suffix} differs:\n{actual}", case.display()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n\n(run with RDB_BLESS=1 to accept the new output)", failures.join("\n\n")).into())
    }
}

/// `cargo rdb build` of the case as a package's `src/main.rs`: the debug module compiles.
fn cargo_rdb_builds(case: &Path) {
    let tmp = scratch("accepted");
    let dir = SampleApp::fixture("accepted", tmp.path()).dir;
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::copy(case, dir.join("src/main.rs")).unwrap();
    let out = run_cargo_rdb(&dir, &["build"]);
    assert_success(&format!("cargo rdb build of {}", case.display()), &out);
}
