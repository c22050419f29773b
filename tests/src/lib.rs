//! End-to-end tests of rdb live in `tests/tests/`; helpers shared by them live here.
//!
//! Sample apps (`sample-apps/<app>/`) come in two variants: the plain crate,
//! and the instrumented one obtained by overlaying the files of
//! `sample-apps/<app>/rdb/` onto it ([`SampleApp`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the repo").to_path_buf()
}

/// The cargo running the tests.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Path of a freshly built `cargo-rdb` (built once per test process).
pub fn cargo_rdb() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let root = repo_root();
        let status = cargo()
            .current_dir(&root)
            .args(["build", "-q", "-p", "cargo-rdb", "--bin", "cargo-rdb"])
            .status()
            .expect("run cargo build -p cargo-rdb");
        assert!(status.success(), "building cargo-rdb failed");
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
        target.join("debug").join("cargo-rdb")
    })
}

/// Runs `cargo rdb <args>` in `dir`.
pub fn run_cargo_rdb(dir: &Path, args: &[&str]) -> Output {
    Command::new(cargo_rdb())
        .current_dir(dir)
        .arg("rdb")
        .args(args)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("run cargo-rdb")
}

/// Runs plain `cargo <args>` in `dir`.
pub fn run_cargo(dir: &Path, args: &[&str]) -> Output {
    cargo()
        .current_dir(dir)
        .args(args)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("run cargo")
}

/// Panics with the command's output unless it succeeded.
pub fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

/// A sample app copied into a directory of its own.
pub struct SampleApp {
    pub name: String,
    pub dir: PathBuf,
}

impl SampleApp {
    /// Copies the plain variant of `sample-apps/<name>` to `parent/<name>`.
    pub fn plain(name: &str, parent: &Path) -> SampleApp {
        let src = repo_root().join("sample-apps").join(name);
        let dir = parent.join(name);
        copy_tree(&src, &dir, &["rdb", "target", "Cargo.lock"]);
        SampleApp { name: name.to_string(), dir }
    }

    /// Overlays the instrumented files (`sample-apps/<name>/rdb/`), pointing
    /// the `rdb-macros` dependency at this repository's copy.
    pub fn instrument(&self) {
        let overlay = repo_root().join("sample-apps").join(&self.name).join("rdb");
        copy_tree(&overlay, &self.dir, &[]);
        let manifest = self.dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        let macros = repo_root().join("rdb-macros");
        std::fs::write(&manifest, text.replace("\"../../rdb-macros\"", &format!("{:?}", macros.display().to_string())))
            .unwrap();
    }
}
