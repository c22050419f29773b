//! Helpers shared by the engine's integration tests: building a C test program of
//! `tests/programs/`, finding its symbols (both from the workspace's one test-helper crate), and
//! the options of a recording made through the library API.

#![allow(dead_code)] // not every test binary uses every helper

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rdb_runtime::{RecordOptions, ReplayOptions, Session};
use rdb_tracee::Memory;

/// Builds `tests/programs/<program>.c` into `dir/<name>` with clang-14 and `flags` (followed by
/// the source, the output and `libs`).
pub fn compile_c(dir: &Path, program: &str, name: &str, flags: &[&str], libs: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(format!("{program}.c"));
    rdb_tests::clang(&source, &dir.join(name), flags, libs)
}

/// Link-time address of a symbol.
pub fn symbol(exe: &Path, name: &str) -> u64 {
    rdb_tests::symbol(exe, name).0
}

/// Options recording `program ARGS` into `trace`: unpinned, files kept as `rdb record` keeps
/// them by default.
pub fn record_options(trace: &Path, program: impl Into<OsString>, args: &[OsString]) -> RecordOptions {
    RecordOptions {
        program: program.into(),
        args: args.to_vec(),
        trace_dir: trace.to_path_buf(),
        pin_cpu: false,
        keep_files: Default::default(),
        program_build: None,
        trap_cpuid: true,
    }
}

/// Options replaying `trace` unpinned, without echoing the program's output.
pub fn replay_options(trace: &Path) -> ReplayOptions {
    ReplayOptions { trace_dir: trace.to_path_buf(), pin_cpu: false, echo_output: false }
}

/// The 8 bytes at `addr` of the session's debugged process.
pub fn read_u64(session: &Session<'_>, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    session.read_exact(addr, &mut b).unwrap();
    u64::from_le_bytes(b)
}
