//! Traces are private and written safely: directories 0700 and files 0600, created
//! exclusively; `-o DIR` refuses a directory that is a symlink, not the user's, writable by
//! others or not empty (a symlink planted there is never followed); a trace root that cannot be
//! written fails at once with a message.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use rdb_tests::{assert_success, describe, output, rdb, scratch, text, timed, tools, EXIT_ERROR};

/// The `nobody` user and group.
const NOBODY: u32 = 65534;

fn record_into(dir: &Path) -> Output {
    output(&mut rdb(&["record", "-o", dir.to_str().expect("UTF-8 path"), "--", "/bin/echo", "secret"]))
}

/// `rdb record -- PROG` with the trace root `root`.
fn record_in_root(root: &Path, prog: &str) -> Output {
    output(rdb(&["record", "--", prog]).env("RDB_TRACE_DIR", root))
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn refused_saying(out: &Output, why: &str) {
    assert_eq!(out.status.code(), Some(EXIT_ERROR), "{}", describe(out));
    assert!(text(&out.stderr).contains(why), "stderr lacks {why:?}:\n{}", describe(out));
}

pub fn traces_are_private_to_their_owner() {
    let tmp = scratch("private");
    let base = tmp.path().join("root");
    assert_success("record", &output(rdb(&["record", "--", "/bin/echo", "x"]).env("RDB_TRACE_DIR", &base)));
    let trace = base.join("echo-0");
    assert_eq!(mode(&base), 0o700);
    assert_eq!(mode(&trace), 0o700);
    assert_eq!(mode(&trace.join("files")), 0o700);
    assert_eq!(mode(&base.join(".rdb-files")), 0o700);
    for f in ["rdb-trace.json", "events", "summary.json"] {
        assert_eq!(mode(&trace.join(f)), 0o600, "{f}");
    }
    // An existing trace root keeps its mode (it may be $HOME); the traces in it are private.
    let shared_root = tmp.path().join("root755");
    std::fs::create_dir(&shared_root).unwrap();
    std::fs::set_permissions(&shared_root, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_success("record", &record_in_root(&shared_root, "/bin/true"));
    assert_eq!(mode(&shared_root), 0o755);
    assert_eq!(mode(&shared_root.join("true-0")), 0o700);
    // An existing empty directory of ours given with -o is made private.
    let out = tmp.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_success("record into an empty directory", &record_into(&out));
    assert_eq!(mode(&out), 0o700);
}

pub fn output_directory_of_another_user_is_refused() {
    let tmp = scratch("private-theirs");
    let dir = tmp.path().join("theirs");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    refused_saying(&record_into(&dir), "not by you");
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "nothing written into it");
}

pub fn output_directory_writable_by_others_is_refused() {
    let tmp = scratch("private-shared");
    let dir = tmp.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    refused_saying(&record_into(&dir), "writable by other users");
}

pub fn planted_symlinks_are_never_followed() {
    let tmp = scratch("private-symlinks");
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    // A symlink planted inside the output directory: the directory is not empty, refused.
    let dir = tmp.path().join("planted");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("summary.json")).unwrap();
    refused_saying(&record_into(&dir), "not empty");
    // The output directory itself a symlink to a directory.
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    refused_saying(&record_into(&link), "symbolic link");
    assert!(std::fs::read_dir(&real).unwrap().next().is_none());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(std::fs::metadata(&victim).unwrap().uid(), std::fs::metadata(tmp.path()).unwrap().uid());
}

pub fn unwritable_trace_root_fails_at_once_with_a_message() {
    // A root of the user's own that the user cannot write: run as `nobody` on a 0500
    // directory owned by nobody.
    let tmp = scratch("private-unwritable");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o500)).unwrap();
    let started = Instant::now();
    let rec = output(
        timed(60, "setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(tools().join("rdb"))
            .args(["record", "--", "/bin/true"])
            .env("RDB_TRACE_DIR", &root),
    );
    assert!(started.elapsed() < Duration::from_secs(30), "it must not spin");
    refused_saying(&rec, "cannot create a trace directory in");
    let err = text(&rec.stderr);
    assert!(err.contains("Permission denied") && err.contains("RDB_TRACE_DIR"), "{err}");
    // /proc/self: a directory of ours in which nothing can be created.
    refused_saying(
        &record_in_root(Path::new("/proc/self"), "/bin/true"),
        "cannot create a trace directory in /proc/self",
    );
    // A root others may write to is refused (they could swap `latest` or the traces).
    let open = scratch("private-open-root");
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    refused_saying(&record_in_root(open.path(), "/bin/true"), "writable by other users");
}
