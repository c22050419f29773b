//! Helpers shared by rdb's tests, in one place: the end-to-end harness (`tests/tests/e2e.rs`)
//! and the crates' own integration tests use them.
//!
//! - [`tools`] builds rdb's binaries once per test process (`cargo build`, so never a stale
//!   binary) and finds them; [`rdb`], [`rdb_clang`] and [`cargo_rdb`] are commands for them.
//! - Every command a test runs goes through [`timed`]: `timeout` ends it (and its process group)
//!   when it hangs, so a hang fails one test instead of stalling the suite.
//! - [`scratch`] makes a directory for one test; [`program`] names a test program's file;
//!   [`clang`] and [`rustc`] build one.
//! - [`gdb`] runs the gdb scripts of `tests/gdb/` through `rdb gdb`.
//! - Sample apps (`sample-apps/<app>/`) come in two variants: the plain crate, and the
//!   instrumented one obtained by overlaying the files of `sample-apps/<app>/rdb/` onto it
//!   ([`SampleApp`]).

pub mod cases;
pub mod gdb;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Exit codes of `rdb` (rdb-cli/src/main.rs and rdb-debugger).
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_DIVERGED: i32 = 3;
pub const EXIT_ENDS_EARLY: i32 = 4;
pub const EXIT_REGION_PROBLEMS: i32 = 5;
/// What `timeout` exits with when it had to end the command.
pub const EXIT_TIMED_OUT: i32 = 124;

/// Seconds a command may run unless a test says otherwise.
pub const DEFAULT_TIMEOUT: u64 = 300;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the repo").to_path_buf()
}

/// `target/<profile>` of the running test binary (which lives in `target/<profile>/deps`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("test binary directory");
    if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("target/<profile>").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

/// The cargo running the tests.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `program` under `timeout -k 10 SECONDS`: a hang ends with exit status 124 (the whole process
/// group of the command is signalled, tracees included).
pub fn timed(seconds: u64, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new("timeout");
    command.args(["-k", "10"]).arg(seconds.to_string()).arg(program).stdin(Stdio::null());
    command
}

/// The directory holding rdb's binaries (`rdb`, `rdb-debug-host`, `rdb-clang`, `cargo-rdb`),
/// built once per test process: the build is cargo's, so a binary is never older than its
/// sources.
pub fn tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = target_dir();
        // The profile the tests were built with: `target/debug` is cargo's `dev`.
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let out = timed(3600, std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(repo_root())
            .args(["build", "-q", "-p", "rdb-cli", "-p", "rdb-host", "-p", "rdb-codegen-llvm", "-p", "cargo-rdb"])
            .args(["--bins", "--profile", &profile])
            .output()
            .expect("run cargo build");
        assert_success("building rdb's binaries", &out);
        for tool in ["rdb", "rdb-debug-host", "rdb-clang", "cargo-rdb"] {
            assert!(dir.join(tool).is_file(), "{} missing after the build", dir.join(tool).display());
        }
        dir
    })
}

/// `rdb ARGS` under [`timed`] with `seconds`, stdin from /dev/null.
pub fn rdb_timed(seconds: u64, args: &[&str]) -> Command {
    let mut command = timed(seconds, tools().join("rdb"));
    command.args(args);
    command
}

/// `rdb ARGS` under the default timeout, stdin from /dev/null.
pub fn rdb(args: &[&str]) -> Command {
    rdb_timed(DEFAULT_TIMEOUT, args)
}

/// `rdb ARGS` in `dir` under the default timeout; its output.
pub fn rdb_in(dir: &Path, args: &[&str]) -> Output {
    output(rdb(args).current_dir(dir))
}

/// Path of `rdb-clang`.
pub fn rdb_clang() -> PathBuf {
    tools().join("rdb-clang")
}

/// Path of `cargo-rdb`.
pub fn cargo_rdb() -> PathBuf {
    tools().join("cargo-rdb")
}

/// Runs a command and returns its output; panics only when it cannot start.
pub fn output(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

/// Runs a command and panics with its output unless it succeeded.
pub fn run_ok(what: &str, command: &mut Command) -> Output {
    let out = output(command);
    assert_success(what, &out);
    out
}

/// `rdb record -o TRACE -- PROG...` in `dir`; panics unless the recording completed
/// (`rdb: recorded` on stderr). Returns the output: the program's, plus rdb's `rdb: ` lines.
pub fn record(dir: &Path, trace: &Path, prog: &[&str]) -> Output {
    let mut args = vec!["record", "-o", trace.to_str().expect("UTF-8 path"), "--"];
    args.extend_from_slice(prog);
    let out = output(rdb(&args).current_dir(dir));
    assert!(text(&out.stderr).contains("rdb: recorded"), "recording {prog:?} failed:\n{}", describe(&out));
    out
}

/// `rdb replay TRACE` in `dir`.
pub fn replay(dir: &Path, trace: &Path) -> Output {
    output(rdb(&["replay", trace.to_str().expect("UTF-8 path")]).current_dir(dir))
}

/// Lossy UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines of `s` that `keep` accepts, each ending in a newline.
pub fn lines_where(s: &str, keep: impl Fn(&str) -> bool) -> String {
    s.lines().filter(|l| keep(l)).map(|l| format!("{l}\n")).collect()
}

/// What a program wrote to stderr under rdb: its stderr without rdb's own `rdb: ` lines.
pub fn program_stderr(out: &Output) -> String {
    lines_where(&text(&out.stderr), |l| !l.starts_with("rdb: "))
}

/// A command's status, stdout and stderr, for failure messages.
pub fn describe(out: &Output) -> String {
    format!("status: {}\n--- stdout\n{}\n--- stderr\n{}", out.status, text(&out.stdout), text(&out.stderr))
}

/// Panics with the command's output unless it succeeded.
pub fn assert_success(what: &str, out: &Output) {
    assert!(out.status.success(), "{what} failed:\n{}", describe(out));
}

/// A fresh directory for one test, removed when dropped.
pub fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("rdb-test-{name}-")).tempdir().expect("create a scratch directory")
}

/// A file of `tests/programs/` (test programs and their support files).
pub fn program(rel: &str) -> PathBuf {
    let path = repo_root().join("tests/programs").join(rel);
    assert!(path.exists(), "{} missing", path.display());
    path
}

/// `clang-14 FLAGS SOURCE -o OUT LIBS` (under a timeout); returns `out`.
pub fn clang(source: &Path, out: &Path, flags: &[&str], libs: &[&str]) -> PathBuf {
    run_ok("clang-14", timed(DEFAULT_TIMEOUT, "clang-14").args(flags).arg(source).arg("-o").arg(out).args(libs));
    out.to_path_buf()
}

/// `rustc FLAGS SOURCE -o OUT` (under a timeout); returns `out`.
pub fn rustc(source: &Path, out: &Path, flags: &[&str]) -> PathBuf {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    run_ok("rustc", timed(DEFAULT_TIMEOUT, rustc).args(flags).arg(source).arg("-o").arg(out));
    out.to_path_buf()
}

/// Link-time address of a symbol of an ELF file, and whether the file is position-independent.
pub fn symbol(binary: &Path, name: &str) -> (u64, bool) {
    use object::{Object, ObjectKind, ObjectSymbol};
    let data = std::fs::read(binary).unwrap_or_else(|e| panic!("read {}: {e}", binary.display()));
    let file = object::File::parse(&*data).unwrap_or_else(|e| panic!("parse {}: {e}", binary.display()));
    let sym = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no symbol {name} in {}", binary.display()));
    (sym.address(), file.kind() == ObjectKind::Dynamic)
}

/// Copies the files (not directories) of `from` into `to`.
pub fn copy_files(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())) {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Runs `cargo rdb <args>` in `dir`.
pub fn run_cargo_rdb(dir: &Path, args: &[&str]) -> Output {
    output(
        timed(DEFAULT_TIMEOUT * 2, cargo_rdb())
            .current_dir(dir)
            .arg("rdb")
            .args(args)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR"),
    )
}

/// Runs plain `cargo <args>` in `dir`, as a user would (none of this test run's flags).
pub fn run_cargo(dir: &Path, args: &[&str]) -> Output {
    output(
        timed(DEFAULT_TIMEOUT * 2, std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(dir)
            .args(args)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR"),
    )
}

/// BLAKE3 of a file, hex.
pub fn hash_file(path: &Path) -> String {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    blake3::hash(&data).to_hex().to_string()
}

/// Hash of every file under `dir` except in `target/`, by relative path.
pub fn tree_snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.file_name() != "target")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().strip_prefix(dir).unwrap().to_path_buf(), hash_file(e.path())))
        .collect()
}

fn copy_tree(from: &Path, to: &Path, skip: &[&str]) {
    for entry in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|e| e.depth() != 1 || !skip.iter().any(|s| e.file_name() == *s))
    {
        let entry = entry.expect("walk sample app");
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A sample app (`sample-apps/<name>`) or a test fixture project (`tests/fixtures/<name>`)
/// copied into a directory of its own. Its `rdb/` directory, if any, holds the instrumented
/// variant's files; `rdb-macros` and `rdb-api` dependencies, whatever relative path they give,
/// are pointed at this repository's copies.
pub struct SampleApp {
    pub name: String,
    pub dir: PathBuf,
    source: PathBuf,
}

impl SampleApp {
    /// Copies the plain variant of `sample-apps/<name>` to `parent/<name>`.
    pub fn plain(name: &str, parent: &Path) -> SampleApp {
        SampleApp::copy(repo_root().join("sample-apps").join(name), parent)
    }

    /// Copies the plain variant of the project `tests/fixtures/<name>` to `parent/<name>`.
    pub fn fixture(name: &str, parent: &Path) -> SampleApp {
        SampleApp::copy(repo_root().join("tests/fixtures").join(name), parent)
    }

    fn copy(source: PathBuf, parent: &Path) -> SampleApp {
        let name = source.file_name().expect("project name").to_string_lossy().into_owned();
        let dir = parent.join(&name);
        copy_tree(&source, &dir, &["rdb", "target", "Cargo.lock"]);
        point_at_rdb_macros(&dir);
        SampleApp { name, dir, source }
    }

    /// The race sample (`sample-apps/race`) copied to `parent`, built (dev profile) and recorded
    /// at `trace` with 3 threads of 60 operations under the chaos scheduler with seed 1 (so it
    /// loses updates, the same in every recording); returns the app and the recording's output.
    pub fn race_recorded_with_chaos(parent: &Path, trace: &Path) -> (SampleApp, Output) {
        let app = SampleApp::plain("race", parent);
        assert_success("cargo build", &run_cargo(&app.dir, &["build", "-q"]));
        let trace = trace.to_str().expect("UTF-8 path");
        let rec =
            rdb_in(&app.dir, &["record", "--chaos", "--seed", "1", "-o", trace, "--", "target/debug/race", "3", "60"]);
        (app, rec)
    }

    /// Overlays the instrumented files (`rdb/`).
    pub fn instrument(&self) {
        self.overlay("rdb");
    }

    /// Removes the `[profile.release]` table of the project's manifest: a
    /// release build then uses cargo's default profile (no debug information).
    pub fn default_release_profile(&self) {
        let manifest = self.dir.join("Cargo.toml");
        let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(&manifest).unwrap().parse().unwrap();
        if let Some(profiles) = doc.get_mut("profile").and_then(|p| p.as_table_mut()) {
            profiles.remove("release");
        }
        std::fs::write(&manifest, doc.to_string()).unwrap();
    }

    /// Gives the project the instrumented variant's manifest only: a plain
    /// build then declares `rdb-macros` (as a project that keeps it does).
    pub fn declare_rdb_macros(&self) {
        std::fs::copy(self.source.join("rdb/Cargo.toml"), self.dir.join("Cargo.toml")).unwrap();
        point_at_rdb_macros(&self.dir);
    }

    /// Overlays the files of the project's directory `name` (an instrumented variant).
    pub fn overlay(&self, name: &str) {
        copy_tree(&self.source.join(name), &self.dir, &[]);
        point_at_rdb_macros(&self.dir);
    }
}

/// Rewrites `rdb-macros = { path = "..." }` and `rdb-api = { path = "..." }` in every manifest
/// under `dir` to this repository's copies.
fn point_at_rdb_macros(dir: &Path) {
    for entry in walkdir::WalkDir::new(dir).into_iter().filter_map(|e| e.ok()) {
        if entry.file_name() != "Cargo.toml" {
            continue;
        }
        let mut text = std::fs::read_to_string(entry.path()).unwrap();
        for krate in ["rdb-macros", "rdb-api"] {
            let key = format!("{krate} = {{ path = \"");
            let absolute = repo_root().join(krate).display().to_string();
            let Some(start) = text.find(&key).map(|i| i + key.len()) else { continue };
            let end = start + text[start..].find('"').expect("closing quote");
            text = format!("{}{}{}", &text[..start], absolute, &text[end..]);
        }
        std::fs::write(entry.path(), text).unwrap();
    }
}
