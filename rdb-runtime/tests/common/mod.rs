//! Helpers shared by the engine's integration tests: building a C test program of
//! `tests/programs/`, finding its symbols (both from the workspace's one test-helper crate).

use std::path::{Path, PathBuf};

/// Builds `tests/programs/<program>.c` into `dir/<name>` with clang-14 and `flags` (followed by
/// the source, the output and `libs`).
pub fn compile_c(dir: &Path, program: &str, name: &str, flags: &[&str], libs: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(format!("{program}.c"));
    rdb_tests::clang(&source, &dir.join(name), flags, libs)
}

/// Link-time address of a symbol.
#[allow(dead_code)] // not every test binary looks symbols up
pub fn symbol(exe: &Path, name: &str) -> u64 {
    rdb_tests::symbol(exe, name).0
}
