//! Self-contained traces: the trace keeps the executable and the files it mapped, so a
//! rebuild, a deletion or a move of the originals changes nothing for replay; `rdb pack` makes
//! one file that replays after the trace and the originals are gone; `rdb ls` and `rdb rm`.
//! The programs are in `tests/programs/support/`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

use rdb_tests::{assert_success, clang, describe, hash_file, output, program, rdb, scratch, text, EXIT_ERROR};

/// Builds `tests/programs/support/<src>` with `VALUE` defined, to `out`, replacing it (as a
/// build does).
fn build(src: &str, value: i32, out: &Path, extra: &[&str]) {
    clang(&program(&format!("support/{src}")), out, &[&format!("-DVALUE={value}")], extra);
}

/// `rdb ARGS...` where the last arguments are paths.
fn rdb_on(args: &[&str], paths: &[&Path]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(paths.iter().map(|p| p.to_str().expect("UTF-8 path")));
    output(&mut rdb(&all))
}

/// `rdb ARGS` with the trace root `root`.
fn rdb_in(root: &Path, args: &[&str]) -> Output {
    output(rdb(args).env("RDB_TRACE_DIR", root))
}

pub fn rebuilt_or_deleted_program_and_library_still_replay_from_the_trace() {
    let tmp = scratch("kept-rebuilt");
    let lib = tmp.path().join("libvalue.so");
    let exe = tmp.path().join("prog");
    let libdir = format!("-L{}", tmp.path().display());
    let rpath = format!("-Wl,-rpath,{}", tmp.path().display());
    build("lib_value.c", 42, &lib, &["-shared", "-fPIC"]);
    build("print_lib_value.c", 0, &exe, &[&libdir, "-lvalue", &rpath]);
    for keep in ["link", "copy"] {
        let trace = tmp.path().join(format!("trace-{keep}"));
        let rec = rdb_on(&["record", "--keep-files", keep, "-o"], &[&trace, Path::new("--"), &exe]);
        assert_success("record", &rec);
        assert_eq!(rec.stdout, b"library value 42\n");
    }
    // Rebuild the library and the program with other code, as a developer would.
    build("lib_value.c", 43, &lib, &["-shared", "-fPIC"]);
    build("print_value.c", 7, &exe, &[]);
    assert_eq!(output(&mut std::process::Command::new(&exe)).stdout, b"value 7\n");
    for keep in ["link", "copy"] {
        let rep = rdb_on(&["replay"], &[&tmp.path().join(format!("trace-{keep}"))]);
        assert_success(&format!("replay ({keep}) after a rebuild"), &rep);
        assert_eq!(rep.stdout, b"library value 42\n");
    }
    std::fs::remove_file(&exe).unwrap();
    std::fs::remove_file(&lib).unwrap();
    let rep = rdb_on(&["replay"], &[&tmp.path().join("trace-link")]);
    assert_success("replay after deleting the originals", &rep);
    assert_eq!(rep.stdout, b"library value 42\n");
}

pub fn packed_trace_replays_after_the_trace_and_the_originals_are_gone() {
    let tmp = scratch("kept-pack");
    let exe = tmp.path().join("prog");
    build("print_value.c", 5, &exe, &[]);
    let trace = tmp.path().join("trace");
    assert_success("record", &rdb_on(&["record", "-o"], &[&trace, Path::new("--"), &exe]));
    let pack = tmp.path().join("elsewhere.tar.zst");
    let packed = rdb_on(&["pack"], &[&trace, Path::new("-o"), &pack]);
    assert_success("pack", &packed);
    assert!(text(&packed.stderr).contains("packed"), "{}", describe(&packed));
    assert_eq!(std::fs::metadata(&pack).unwrap().permissions().mode() & 0o777, 0o600, "a pack is private");
    std::fs::remove_dir_all(&trace).unwrap();
    std::fs::remove_file(&exe).unwrap();
    let rep = rdb_on(&["replay"], &[&pack]);
    assert_success("replay of the pack", &rep);
    assert_eq!(rep.stdout, b"value 5\n");
    let info = rdb_on(&["info"], &[&pack]);
    assert_success("info of the pack", &info);
    assert!(text(&info.stdout).contains("(packed)"), "{}", describe(&info));
    // Packing again over an existing file is refused rather than overwriting it.
    let again = rdb_on(&["pack", "x", "-o"], &[&pack]);
    assert_eq!(again.status.code(), Some(EXIT_ERROR), "{}", describe(&again));
}

pub fn damaged_pack_is_refused() {
    let tmp = scratch("kept-damaged-pack");
    let trace = tmp.path().join("trace");
    assert_success("record", &rdb_on(&["record", "-o"], &[&trace, Path::new("--"), Path::new("/bin/true")]));
    let pack = tmp.path().join("t.tar.zst");
    assert_success("pack", &rdb_on(&["pack"], &[&trace, Path::new("-o"), &pack]));
    let mut bytes = std::fs::read(&pack).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&pack, bytes).unwrap();
    let rep = rdb_on(&["replay"], &[&pack]);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR), "{}", describe(&rep));
    assert!(rep.stdout.is_empty());
}

pub fn traces_of_one_program_in_the_trace_root_share_its_kept_files() {
    let root = scratch("kept-shared");
    let base = root.path().join("traces");
    let exe = root.path().join("prog");
    build("print_value.c", 3, &exe, &[]);
    for keep in ["copy", "copy", "link"] {
        assert_success("record", &rdb_in(&base, &["record", "--keep-files", keep, "--", exe.to_str().unwrap()]));
    }
    let hash = hash_file(&exe);
    let inodes: Vec<u64> =
        (0..3).map(|n| std::fs::metadata(base.join(format!("prog-{n}/files/{hash}"))).unwrap().ino()).collect();
    assert!(inodes.iter().all(|i| *i == inodes[0]), "one stored copy: {inodes:?}");
    assert_ne!(inodes[0], std::fs::metadata(&exe).unwrap().ino(), "the first recording copied it");
    let ls = rdb_in(&base, &["ls"]);
    assert_success("ls", &ls);
    let listing = text(&ls.stdout);
    for n in 0..3 {
        assert!(listing.contains(&format!("prog-{n} ")), "{listing}");
    }
    assert!(listing.contains("exit 0") && listing.contains("latest -> "), "{listing}");
    assert_success("rm", &rdb_in(&base, &["rm", "prog-1", "latest"]));
    assert!(!base.join("prog-2").exists() && !base.join("prog-1").exists() && base.join("prog-0").exists());
    let rep = rdb_in(&base, &["replay"]);
    assert_success("replay of latest after rm", &rep);
    assert_eq!(rep.stdout, b"value 3\n");
    assert_success("rm", &rdb_in(&base, &["rm", "prog-0"]));
    let left: Vec<_> = std::fs::read_dir(base.join(".rdb-files")).unwrap().collect();
    assert!(left.is_empty(), "kept files no trace uses are removed: {left:?}");
}

pub fn a_changed_file_is_named_without_revealing_its_current_hash() {
    let tmp = scratch("kept-changed");
    let exe = tmp.path().join("prog");
    build("print_value.c", 1, &exe, &[]);
    let trace = tmp.path().join("trace");
    assert_success("record", &rdb_on(&["record", "--keep-files", "off", "-o"], &[&trace, Path::new("--"), &exe]));
    build("print_value.c", 2, &exe, &[]);
    let now = hash_file(&exe);
    let rep = rdb_on(&["replay"], &[&trace]);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR), "{}", describe(&rep));
    let err = text(&rep.stderr);
    assert!(err.contains(exe.to_str().unwrap()) && err.contains("changed since it was recorded"), "{err}");
    assert!(!err.contains(&now), "the current hash is an oracle for the file's contents: {err}");
}
