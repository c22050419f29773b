//! Helpers shared by the engine's integration tests: building a C test program, finding
//! its symbols.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `source` to `dir/<name>.c` and builds `dir/<name>` with clang-14 and `flags`
/// (followed by the source, the output and `libs`).
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str], libs: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let out = Command::new("clang-14").args(flags).arg(&src).arg("-o").arg(&exe).args(libs).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Link-time address of a symbol, from `llvm-nm-14`.
#[allow(dead_code)] // not every test binary looks symbols up
pub fn symbol(exe: &Path, name: &str) -> u64 {
    let out = Command::new("llvm-nm-14").arg(exe).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() == 3 && parts[2] == name {
            return u64::from_str_radix(parts[0], 16).unwrap();
        }
    }
    panic!("{name} not in {}", exe.display());
}
