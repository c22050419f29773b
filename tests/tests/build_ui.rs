//! The diagnostics suite: every `tests/ui/*.rs` is a malformed `src/main.rs`
//! whose expected errors are in the `.stderr` file beside it. Run with
//! `RDB_BLESS=1` to rewrite the expectations after a deliberate change.

use rdb_extract::{extract, SourceInput};
use rdb_tests::{repo_root, run_cargo_rdb};
use std::path::Path;

fn diagnostics_of(text: &str) -> Option<String> {
    let input =
        SourceInput { path: "src/main.rs".into(), text: text.into(), module_path: vec![], crate_name: "app".into() };
    extract(&[input], 1).err().map(|d| format!("{d}\n"))
}

#[test]
fn ui() {
    let dir = repo_root().join("tests/ui");
    let bless = std::env::var_os("RDB_BLESS").is_some();
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 15, "the suite needs at least 15 cases, found {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let text = std::fs::read_to_string(case).unwrap();
        let Some(actual) = diagnostics_of(&text) else {
            failures.push(format!("{}: no error reported", case.display()));
            continue;
        };
        let expected_path = case.with_extension("stderr");
        if bless {
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{}: diagnostics differ\n--- expected ({})\n{expected}\n--- actual\n{actual}",
                case.display(),
                expected_path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}\n\n(run with RDB_BLESS=1 to accept the new output)", failures.join("\n\n"));
}

/// The same diagnostics come out of `cargo rdb build`, which exits non-zero
/// and writes nothing.
#[test]
fn cargo_rdb_build_reports_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bad");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let macros = repo_root().join("rdb-macros");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"bad\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nrdb-macros = {{ path = {:?} }}\n", macros.display().to_string()),
    )
    .unwrap();
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
