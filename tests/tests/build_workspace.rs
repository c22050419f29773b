//! A workspace with several members and a path dependency: regions in a
//! library member and in two binaries; every main binary is identical to the
//! plain build, every debug module holds the regions compiled into its binary.

use rdb_tests::{assert_success, hash_file, repo_root, run_cargo, run_cargo_rdb, tree_snapshot};
use std::path::Path;

const UTIL_PLAIN: &str = r#"use std::sync::atomic::{AtomicUsize, Ordering};

/// Calls of `mean` so far.
pub static CALLS: AtomicUsize = AtomicUsize::new(0);

pub fn mean(xs: &[f64]) -> f64 {
    CALLS.fetch_add(1, Ordering::Relaxed);
    let sum: f64 = xs.iter().sum();
    sum / xs.len() as f64
}
"#;

const UTIL_RDB: &str = r#"use std::sync::atomic::{AtomicUsize, Ordering};
use rdb_macros::{rdb_begin, rdb_end};

/// Calls of `mean` so far.
pub static CALLS: AtomicUsize = AtomicUsize::new(0);

pub fn mean(xs: &[f64]) -> f64 {
    CALLS.fetch_add(1, Ordering::Relaxed);
    let sum: f64 = xs.iter().sum();
    rdb_begin!();
    println!("mean of {} values, sum {sum}, call {}", xs.len(), CALLS.load(Ordering::Relaxed));
    rdb_end!();
    sum / xs.len() as f64
}
"#;

const APP_PLAIN: &str = r#"fn main() {
    let xs: Vec<f64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let m = util::mean(&xs);
    println!("{m}");
}
"#;

const APP_RDB: &str = r#"use rdb_macros::{debug_only, rdb_begin, rdb_end};

#[debug_only]
fn spread(xs: &[f64]) -> f64 {
    xs.iter().cloned().fold(f64::MIN, f64::max) - xs.iter().cloned().fold(f64::MAX, f64::min)
}

fn main() {
    let xs: Vec<f64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let m = util::mean(&xs);
    rdb_begin!();
    println!("mean {m}, spread {}, calls {}", spread(&xs), util::CALLS.load(std::sync::atomic::Ordering::Relaxed));
    rdb_end!();
    println!("{m}");
}
"#;

const TOOL_PLAIN: &str = "fn main() {\n    println!(\"{}\", util::mean(&[1.0, 2.0]));\n}\n";

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn manifest(name: &str, deps: &str, instrumented: bool) -> String {
    let macros = if instrumented {
        format!("rdb-macros = {{ path = {:?} }}\n", repo_root().join("rdb-macros").display().to_string())
    } else {
        String::new()
    };
    format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}{macros}")
}

fn workspace(dir: &Path, instrumented: bool) {
    write(
        dir,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\", \"util\"]\n\n[profile.checked]\ninherits = \"release\"\ndebug = \"full\"\n",
    );
    write(dir, "util/Cargo.toml", &manifest("util", "", instrumented));
    write(dir, "util/src/lib.rs", if instrumented { UTIL_RDB } else { UTIL_PLAIN });
    write(dir, "app/Cargo.toml", &manifest("app", "util = { path = \"../util\" }\n", instrumented));
    write(dir, "app/src/main.rs", if instrumented { APP_RDB } else { APP_PLAIN });
    write(dir, "app/src/bin/tool.rs", TOOL_PLAIN);
}

#[test]
fn workspace_with_path_dependency() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    workspace(&dir, false);
    assert_success("plain cargo build", &run_cargo(&dir, &["build"]));
    let plain_app = hash_file(&dir.join("target/debug/app"));
    let plain_tool = hash_file(&dir.join("target/debug/tool"));
    assert_success("plain cargo build --profile checked", &run_cargo(&dir, &["build", "--profile", "checked"]));
    let plain_checked = hash_file(&dir.join("target/checked/app"));

    workspace(&dir, true);
    assert_success("plain cargo build of the instrumented workspace", &run_cargo(&dir, &["build"]));
    let before = tree_snapshot(&dir);
    let out = run_cargo_rdb(&dir, &["build"]);
    assert_success("cargo rdb build", &out);
    assert_eq!(before, tree_snapshot(&dir));
    let out_dir = dir.join("target/rdb/debug");
    assert_eq!(hash_file(&out_dir.join("app")), plain_app, "app differs");
    assert_eq!(hash_file(&out_dir.join("tool")), plain_tool, "tool differs");

    let app = rdb_descriptors::load_functions(&out_dir.join("app.rdb-functions.json")).unwrap();
    let mut fns: Vec<&str> = app.functions.iter().map(|f| f.function.name.as_str()).collect();
    fns.sort();
    assert_eq!(fns, ["app::main", "util::mean"]);
    let args = rdb_descriptors::load_arguments(&out_dir.join("app.rdb-arguments.json")).unwrap();
    let statics: Vec<&str> = args
        .arguments
        .iter()
        .filter(|a| a.kind == rdb_descriptors::ArgumentKind::Static)
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(statics, ["CALLS", "CALLS"], "the static is passed in both regions");
    // Every region has a code location and every argument a location there.
    assert!(app.functions.iter().all(|f| !f.locations.is_empty()), "{:#?}", app.functions);
    assert!(args.arguments.iter().all(|a| a.locations.len() == 1 && a.size > 0), "{:#?}", args.arguments);
    // `tool` has no region of its own but runs the library's.
    let tool = rdb_descriptors::load_functions(&out_dir.join("tool.rdb-functions.json")).unwrap();
    let fns: Vec<&str> = tool.functions.iter().map(|f| f.function.name.as_str()).collect();
    assert_eq!(fns, ["util::mean"]);

    // Both debug modules hold the regions of their binaries.
    use object::{Object, ObjectSection};
    for (bin, expected) in [("app", 2), ("tool", 1)] {
        let data = std::fs::read(out_dir.join(format!("{bin}.rdb.so"))).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let section = file.section_by_name(rdb_descriptors::REGION_TABLE_SECTION).expect("region table");
        assert_eq!(section.size() / 16, expected, "{bin}");
    }

    // A custom profile of the workspace.
    assert_success("cargo rdb build --profile checked", &run_cargo_rdb(&dir, &["build", "--profile", "checked"]));
    assert_eq!(hash_file(&dir.join("target/rdb/checked/app")), plain_checked);
    assert!(dir.join("target/rdb/checked/app.rdb.so").is_file());

    // -p / --bin select one binary.
    let out = run_cargo_rdb(&dir, &["build", "-p", "app", "--bin", "tool"]);
    assert_success("cargo rdb build --bin tool", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tool.rdb.so") && !stdout.contains("app.rdb.so"), "{stdout}");
}

#[test]
fn missing_debug_info_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nodebug");
    write(&dir, "Cargo.toml", &format!("{}\n[profile.dev]\ndebug = false\n", manifest("nodebug", "", true)));
    write(&dir, "src/main.rs", "fn main() {\n    let x = 1;\n    rdb_macros::rdb_begin!();\n    println!(\"{x}\");\n    rdb_macros::rdb_end!();\n}\n");
    let out = run_cargo_rdb(&dir, &["build"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[profile.dev]\n    debug = \"full\""), "{stderr}");
    assert!(!dir.join("target/rdb/debug/nodebug").exists());
}
