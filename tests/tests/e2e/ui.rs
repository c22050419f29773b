//! The diagnostics suite: every `tests/ui/*.rs` is a malformed `src/main.rs`
//! whose expected errors are in the `.stderr` file beside it; each is a test case. Run with
//! `RDB_BLESS=1` to rewrite the expectations after a deliberate change.

use libtest_mimic::{Failed, Trial};
use rdb_extract::{extract, SourceInput};
use rdb_tests::{repo_root, run_cargo_rdb, scratch, SampleApp};
use std::path::Path;

fn diagnostics_of(text: &str) -> Option<String> {
    let input =
        SourceInput { path: "src/main.rs".into(), text: text.into(), module_path: vec![], crate_name: "app".into() };
    extract(&[input], 1).err().map(|d| format!("{d}\n"))
}

/// One trial per `tests/ui/*.rs`: its diagnostics against the `.stderr` file beside it.
pub fn trials() -> Vec<Trial> {
    let dir = repo_root().join("tests/ui");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    let count = cases.len();
    let mut trials = vec![Trial::test("ui::suite_has_at_least_15_cases", move || {
        if count >= 15 {
            Ok(())
        } else {
            Err(Failed::from(format!("the suite needs at least 15 cases, found {count}")))
        }
    })];
    for case in cases {
        let name = format!("ui::{}", case.file_stem().unwrap().to_string_lossy());
        trials.push(Trial::test(name, move || check(&case)));
    }
    trials
}

fn check(case: &Path) -> Result<(), Failed> {
    let text = std::fs::read_to_string(case).unwrap();
    let Some(actual) = diagnostics_of(&text) else {
        return Err(format!("{}: no error reported", case.display()).into());
    };
    let expected_path = case.with_extension("stderr");
    if std::env::var_os("RDB_BLESS").is_some() {
        std::fs::write(&expected_path, &actual).unwrap();
        return Ok(());
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    if expected != actual {
        return Err(format!(
            "{}: diagnostics differ\n--- expected ({})\n{expected}\n--- actual\n{actual}\n(run with RDB_BLESS=1 to accept the new output)",
            case.display(),
            expected_path.display()
        )
        .into());
    }
    Ok(())
}

/// The same diagnostics come out of `cargo rdb build`, which exits non-zero
/// and writes nothing.
pub fn cargo_rdb_build_reports_and_writes_nothing() {
    let tmp = scratch("build");
    let dir = SampleApp::fixture("bad", tmp.path()).dir;
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let case = repo_root().join("tests/ui/return_in_region.rs");
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(dir.join("src/main.rs"), &text).unwrap();
    let out = run_cargo_rdb(&dir, &["build"]);
    assert!(!out.status.success());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = diagnostics_of(&text).unwrap();
    assert!(stderr.contains(expected.trim_end()), "stderr:\n{stderr}\nexpected:\n{expected}");
    assert!(!dir.join("target/rdb").exists(), "cargo rdb build wrote to target/rdb despite errors");
    assert!(!Path::new(&dir.join("target/rdb/debug/bad")).exists());
}
