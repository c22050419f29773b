//! The function-by-function proof that a twin built with debug information
//! has the recorded build's code (`prove_twin`), on real rustc builds.

use rdb_tests::{run_ok, scratch, symbol, timed};
use std::path::{Path, PathBuf};

/// The twin flags `cargo rdb build` gives a build without debug information.
const TWIN_FLAGS: &[&str] =
    &["-Cdebuginfo=2", "-Zinline-mir-preserve-debug=no", "-Zunstable-options", "-Csymbol-mangling-version=legacy"];

fn build(dir: &Path, name: &str, flags: &[&str], twin: bool) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/twin.rs");
    let out = dir.join(name);
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = timed(300, rustc);
    cmd.args(["-O", "--edition=2021"]).args(flags).arg(&source).arg("-o").arg(&out);
    if twin {
        let script = dir.join("gdb.ld");
        std::fs::write(
            &script,
            "SECTIONS { .debug_gdb_scripts (INFO) : { KEEP(*(.debug_gdb_scripts)) } } INSERT AFTER .comment;\n",
        )
        .unwrap();
        cmd.env("RUSTC_BOOTSTRAP", "1").args(TWIN_FLAGS).arg(format!("-Clink-arg=-Wl,-T,{}", script.display()));
    }
    run_ok("rustc", &mut cmd);
    out
}

fn function(binary: &Path, needle: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let name = file
        .symbols()
        .filter_map(|s| s.name().ok().map(String::from))
        .find(|n| n == needle || (needle != "main" && n.contains(needle)))
        .unwrap_or_else(|| panic!("no symbol with {needle}"));
    symbol(binary, &name).0
}

#[test]
fn twin_of_an_optimized_build_maps_every_function_but_main() {
    let dir = scratch("twin");
    let main = build(dir.path(), "plain", &[], false);
    let twin = build(dir.path(), "twin", &[], true);
    let map = rdb_locate::prove_twin(&main, &twin).expect("same layout");
    assert!(!map.identical, "rustc's `main` loads the gdb scripts section in the twin");
    let differing: Vec<&str> = map.differing().map(|f| f.name.as_str()).collect();
    assert_eq!(differing, ["main"]);
    for f in ["8checksum", "5scale"] {
        let address = function(&twin, f);
        let (mapped, symbol, offset) = map.map(address + 4).expect("proven");
        assert_eq!((mapped, offset), (function(&main, f) + 4, 4));
        assert!(symbol.contains(f), "{symbol}");
    }
    let why = map.map(function(&twin, "main") + 1).unwrap_err();
    assert!(why.contains("`main`") && why.contains("differs"), "{why}");
}

#[test]
fn a_function_with_other_code_is_not_served() {
    let dir = scratch("twin");
    let main = build(dir.path(), "plain", &["--cfg", "other_scale"], false);
    let twin = build(dir.path(), "twin", &[], true);
    let map = rdb_locate::prove_twin(&main, &twin).expect("same layout");
    let differing: Vec<&str> = map.differing().map(|f| f.name.as_str()).collect();
    assert!(differing.iter().any(|n| n.contains("5scale")), "{differing:?}");
    assert!(map.map(function(&twin, "5scale")).unwrap_err().contains("differs"));
    assert!(map.map(function(&twin, "8checksum")).is_ok());
}

#[test]
fn a_twin_with_another_layout_is_refused() {
    let dir = scratch("twin");
    let main = build(dir.path(), "plain", &[], false);
    // Without the link script the gdb scripts section shifts every later section.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/twin.rs");
    let twin = dir.path().join("twin");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    run_ok(
        "rustc",
        timed(300, rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["-O", "--edition=2021"])
            .args(TWIN_FLAGS)
            .arg(&source)
            .arg("-o")
            .arg(&twin),
    );
    let e = rdb_locate::prove_twin(&main, &twin).unwrap_err().to_string();
    assert!(e.contains("lays out section"), "{e}");
}
