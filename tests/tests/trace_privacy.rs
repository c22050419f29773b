//! Traces are private and written safely: directories 0700 and files 0600, created
//! exclusively; `-o DIR` refuses a directory that is a symlink, not the user's, writable by
//! others or not empty (a symlink planted there is never followed); a trace root that cannot be
//! written fails at once with a message.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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
    c.arg("60").arg(p).stdin(Stdio::null());
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn record_into(dir: &Path) -> Output {
    rdb().args(["record", "-o"]).arg(dir).args(["--", "/bin/echo", "secret"]).output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn traces_are_private_to_their_owner() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("root");
    let rec = rdb().args(["record", "--", "/bin/echo", "x"]).env("RDB_TRACE_DIR", &base).output().unwrap();
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
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
    let rec = rdb().args(["record", "--", "/bin/true"]).env("RDB_TRACE_DIR", &shared_root).output().unwrap();
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    assert_eq!(mode(&shared_root), 0o755);
    assert_eq!(mode(&shared_root.join("true-0")), 0o700);
    // An existing empty directory of ours given with -o is made private.
    let out = tmp.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(record_into(&out).status.code(), Some(0));
    assert_eq!(mode(&out), 0o700);
}

#[test]
fn output_directory_of_another_user_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("theirs");
    std::fs::create_dir(&dir).unwrap();
    let nobody = 65534;
    std::os::unix::fs::chown(&dir, Some(nobody), Some(nobody)).unwrap();
    let rec = record_into(&dir);
    assert_eq!(rec.status.code(), Some(1), "{}", text(&rec.stderr));
    assert!(text(&rec.stderr).contains("not by you"), "{}", text(&rec.stderr));
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "nothing written into it");
}

#[test]
fn output_directory_writable_by_others_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let rec = record_into(&dir);
    assert_eq!(rec.status.code(), Some(1));
    assert!(text(&rec.stderr).contains("writable by other users"), "{}", text(&rec.stderr));
}

#[test]
fn planted_symlinks_are_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    // A symlink planted inside the output directory: the directory is not empty, refused.
    let dir = tmp.path().join("planted");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("summary.json")).unwrap();
    let rec = record_into(&dir);
    assert_eq!(rec.status.code(), Some(1));
    assert!(text(&rec.stderr).contains("not empty"), "{}", text(&rec.stderr));
    // The output directory itself a symlink to a directory.
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let rec = record_into(&link);
    assert_eq!(rec.status.code(), Some(1));
    assert!(text(&rec.stderr).contains("symbolic link"), "{}", text(&rec.stderr));
    assert!(std::fs::read_dir(&real).unwrap().next().is_none());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(std::fs::metadata(&victim).unwrap().uid(), std::fs::metadata(tmp.path()).unwrap().uid());
}

#[test]
fn unwritable_trace_root_fails_at_once_with_a_message() {
    // A root of the user's own that the user cannot write: run as `nobody` on a 0500
    // directory owned by nobody.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o500)).unwrap();
    let started = Instant::now();
    let rec = Command::new("timeout")
        .args(["60", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(target_dir().join("rdb"))
        .args(["record", "--", "/bin/true"])
        .env("RDB_TRACE_DIR", &root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "it must not spin");
    assert_eq!(rec.status.code(), Some(1), "{}", text(&rec.stderr));
    let err = text(&rec.stderr);
    assert!(err.contains("cannot create a trace directory in") && err.contains("Permission denied"), "{err}");
    assert!(err.contains("RDB_TRACE_DIR"), "{err}");
    // /proc/self: a directory of ours in which nothing can be created.
    let rec = rdb().args(["record", "--", "/bin/true"]).env("RDB_TRACE_DIR", "/proc/self").output().unwrap();
    assert_eq!(rec.status.code(), Some(1), "{}", text(&rec.stderr));
    assert!(text(&rec.stderr).contains("cannot create a trace directory in /proc/self"), "{}", text(&rec.stderr));
    // A root others may write to is refused (they could swap `latest` or the traces).
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let rec = rdb().args(["record", "--", "/bin/true"]).env("RDB_TRACE_DIR", tmp.path()).output().unwrap();
    assert_eq!(rec.status.code(), Some(1));
    assert!(text(&rec.stderr).contains("writable by other users"), "{}", text(&rec.stderr));
}
