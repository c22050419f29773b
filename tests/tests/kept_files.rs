//! Self-contained traces: the trace keeps the executable and the files it mapped, so a
//! rebuild, a deletion or a move of the originals changes nothing for replay; `rdb pack` makes
//! one file that replays after the trace and the originals are gone; `rdb ls` and `rdb rm`.
//! The programs are in `tests/programs/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

/// The `rdb` binary of this workspace (built on demand when missing).
fn rdb() -> Command {
    let p = target_dir().join("rdb");
    if !p.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo).args(["build", "-p", "rdb-cli", "--bin", "rdb"]).status().expect("cargo runs");
        assert!(st.success(), "building rdb failed");
    }
    let mut c = Command::new("timeout");
    c.arg("120").arg(p).stdin(Stdio::null());
    c
}

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("programs").join("support").join(name)
}

/// Compile `tests/programs/<src>` with `VALUE` defined, to `out`, replacing it (as a build does).
fn build(src: &str, value: i32, out: &Path, extra: &[&str]) {
    let st = Command::new("clang-14")
        .arg(format!("-DVALUE={value}"))
        .arg(program(src))
        .args(extra)
        .arg("-o")
        .arg(out)
        .status()
        .expect("clang-14 runs");
    assert!(st.success(), "building {src}");
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(what: &str, out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
}

#[test]
fn rebuilt_or_deleted_program_and_library_still_replay_from_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("libvalue.so");
    let exe = tmp.path().join("prog");
    let libdir = format!("-L{}", tmp.path().display());
    let rpath = format!("-Wl,-rpath,{}", tmp.path().display());
    build("lib_value.c", 42, &lib, &["-shared", "-fPIC"]);
    build("print_lib_value.c", 0, &exe, &[&libdir, "-lvalue", &rpath]);
    for keep in ["link", "copy"] {
        let trace = tmp.path().join(format!("trace-{keep}"));
        let rec = rdb().args(["record", "--keep-files", keep, "-o"]).arg(&trace).arg("--").arg(&exe).output().unwrap();
        ok("record", &rec);
        assert_eq!(rec.stdout, b"library value 42\n");
    }
    // Rebuild the library and the program with other code, as a developer would.
    build("lib_value.c", 43, &lib, &["-shared", "-fPIC"]);
    build("print_value.c", 7, &exe, &[]);
    assert_eq!(Command::new(&exe).output().unwrap().stdout, b"value 7\n");
    for keep in ["link", "copy"] {
        let rep = rdb().arg("replay").arg(tmp.path().join(format!("trace-{keep}"))).output().unwrap();
        ok(&format!("replay ({keep}) after a rebuild"), &rep);
        assert_eq!(rep.stdout, b"library value 42\n");
    }
    std::fs::remove_file(&exe).unwrap();
    std::fs::remove_file(&lib).unwrap();
    let rep = rdb().arg("replay").arg(tmp.path().join("trace-link")).output().unwrap();
    ok("replay after deleting the originals", &rep);
    assert_eq!(rep.stdout, b"library value 42\n");
}

#[test]
fn packed_trace_replays_after_the_trace_and_the_originals_are_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("prog");
    build("print_value.c", 5, &exe, &[]);
    let trace = tmp.path().join("trace");
    ok("record", &rdb().args(["record", "-o"]).arg(&trace).arg("--").arg(&exe).output().unwrap());
    let pack = tmp.path().join("elsewhere.tar.zst");
    let packed = rdb().args(["pack"]).arg(&trace).arg("-o").arg(&pack).output().unwrap();
    ok("pack", &packed);
    assert!(text(&packed.stderr).contains("packed"), "{}", text(&packed.stderr));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&pack).unwrap().permissions().mode() & 0o777, 0o600, "a pack is private");
    std::fs::remove_dir_all(&trace).unwrap();
    std::fs::remove_file(&exe).unwrap();
    let rep = rdb().arg("replay").arg(&pack).output().unwrap();
    ok("replay of the pack", &rep);
    assert_eq!(rep.stdout, b"value 5\n");
    let info = rdb().arg("info").arg(&pack).output().unwrap();
    ok("info of the pack", &info);
    assert!(text(&info.stdout).contains("(packed)"), "{}", text(&info.stdout));
    // Packing again over an existing file is refused rather than overwriting it.
    let again = rdb().args(["pack", "x", "-o"]).arg(&pack).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
}

#[test]
fn damaged_pack_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    ok("record", &rdb().args(["record", "-o"]).arg(&trace).args(["--", "/bin/true"]).output().unwrap());
    let pack = tmp.path().join("t.tar.zst");
    ok("pack", &rdb().arg("pack").arg(&trace).arg("-o").arg(&pack).output().unwrap());
    let mut bytes = std::fs::read(&pack).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&pack, bytes).unwrap();
    let rep = rdb().arg("replay").arg(&pack).output().unwrap();
    assert_eq!(rep.status.code(), Some(1), "{}", text(&rep.stderr));
    assert!(rep.stdout.is_empty());
}

#[test]
fn traces_of_one_program_in_the_trace_root_share_its_kept_files() {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().join("traces");
    let exe = root.path().join("prog");
    build("print_value.c", 3, &exe, &[]);
    for keep in ["copy", "copy", "link"] {
        let rec =
            rdb().args(["record", "--keep-files", keep, "--"]).arg(&exe).env("RDB_TRACE_DIR", &base).output().unwrap();
        ok("record", &rec);
    }
    use std::os::unix::fs::MetadataExt;
    let hash = blake3::hash(&std::fs::read(&exe).unwrap()).to_hex().to_string();
    let inodes: Vec<u64> =
        (0..3).map(|n| std::fs::metadata(base.join(format!("prog-{n}/files/{hash}"))).unwrap().ino()).collect();
    assert!(inodes.iter().all(|i| *i == inodes[0]), "one stored copy: {inodes:?}");
    assert_ne!(inodes[0], std::fs::metadata(&exe).unwrap().ino(), "the first recording copied it");
    let ls = rdb().arg("ls").env("RDB_TRACE_DIR", &base).output().unwrap();
    ok("ls", &ls);
    let listing = text(&ls.stdout);
    for n in 0..3 {
        assert!(listing.contains(&format!("prog-{n} ")), "{listing}");
    }
    assert!(listing.contains("exit 0") && listing.contains("latest -> "), "{listing}");
    ok("rm", &rdb().args(["rm", "prog-1", "latest"]).env("RDB_TRACE_DIR", &base).output().unwrap());
    assert!(!base.join("prog-2").exists() && !base.join("prog-1").exists() && base.join("prog-0").exists());
    let rep = rdb().arg("replay").env("RDB_TRACE_DIR", &base).output().unwrap();
    ok("replay of latest after rm", &rep);
    assert_eq!(rep.stdout, b"value 3\n");
    ok("rm", &rdb().args(["rm", "prog-0"]).env("RDB_TRACE_DIR", &base).output().unwrap());
    let left: Vec<_> = std::fs::read_dir(base.join(".rdb-files")).unwrap().collect();
    assert!(left.is_empty(), "kept files no trace uses are removed: {left:?}");
}

#[test]
fn a_changed_file_is_named_without_revealing_its_current_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("prog");
    build("print_value.c", 1, &exe, &[]);
    let trace = tmp.path().join("trace");
    ok(
        "record",
        &rdb().args(["record", "--keep-files", "off", "-o"]).arg(&trace).arg("--").arg(&exe).output().unwrap(),
    );
    build("print_value.c", 2, &exe, &[]);
    let now = blake3::hash(&std::fs::read(&exe).unwrap()).to_hex().to_string();
    let rep = rdb().arg("replay").arg(&trace).output().unwrap();
    assert_eq!(rep.status.code(), Some(1));
    let err = text(&rep.stderr);
    assert!(err.contains(exe.to_str().unwrap()) && err.contains("changed since it was recorded"), "{err}");
    assert!(!err.contains(&now), "the current hash is an oracle for the file's contents: {err}");
}
