//! The accepted-constructs suite: every `tests/ui-accepted/*.rs` is a
//! `src/main.rs` whose regions sit in places real Rust puts code (generic
//! functions and impls, trait methods, closures, `async` code, nested
//! functions). Each must extract without diagnostics; the debug text and the
//! regions found are pinned in `.debug.rs` and `.regions` files beside it
//! (`RDB_BLESS=1` rewrites them). `cargo_rdb_builds_every_accepted_case`
//! then builds each case with `cargo rdb build`: the debug module compiles.

use rdb_extract::{extract, SourceInput};
use rdb_tests::{assert_success, repo_root, run_cargo_rdb};
use std::path::PathBuf;

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

#[test]
fn accepted_constructs_extract_cleanly() {
    let bless = std::env::var_os("RDB_BLESS").is_some();
    let cases = cases();
    assert!(cases.len() >= 5, "found {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let text = std::fs::read_to_string(case).unwrap();
        let input = SourceInput { path: "src/main.rs".into(), text, module_path: vec![], crate_name: "app".into() };
        let extraction = match extract(&[input], 1) {
            Ok(x) => x,
            Err(d) => {
                failures.push(format!("{}: rejected:\n{d}", case.display()));
                continue;
            }
        };
        let mut regions = String::new();
        for r in &extraction.regions {
            let args: Vec<String> = r.arguments.iter().map(|a| format!("{}:{:?}", a.name, a.kind)).collect();
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
        for (suffix, actual) in [("debug.rs", &extraction.files[0].debug), ("regions", &regions)] {
            let golden = case.with_extension(suffix);
            if bless {
                std::fs::write(&golden, actual).unwrap();
            } else if std::fs::read_to_string(&golden).unwrap_or_default() != *actual {
                failures.push(format!("{}: {suffix} differs:\n{actual}", case.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}\n\n(run with RDB_BLESS=1 to accept the new output)", failures.join("\n\n"));
}

#[test]
fn cargo_rdb_builds_every_accepted_case() {
    let tmp = tempfile::tempdir().unwrap();
    let macros = repo_root().join("rdb-macros");
    for case in cases() {
        let name = case.file_stem().unwrap().to_string_lossy().replace('_', "-");
        let dir = tmp.path().join(&name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nrdb-macros = {{ path = {:?} }}\n",
                macros.display().to_string()
            ),
        )
        .unwrap();
        std::fs::copy(&case, dir.join("src/main.rs")).unwrap();
        let out = run_cargo_rdb(&dir, &["build"]);
        assert_success(&format!("cargo rdb build of {}", case.display()), &out);
    }
}
