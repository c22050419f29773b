//! The trace: one codec, used by the recorder, the replayer, `rdb info`/`ls`/`pack`,
//! `cargo rdb` and the fuzzer.
//!
//! ```text
//! TRACE/                 mode 0700; every file 0600, created exclusively
//!   rdb-trace.json       header: format name + version (checked on open), program, argv, …
//!   events               chunks of encoded events (see `chunk`), bound to the header by a digest chain
//!   summary.json         written when recording finished; its blake3 is in the stream's end chunk
//!   files/<blake3>       kept executables and mapped files (see `files`)
//! ```
//!
//! API: [`Trace::open`] checks everything (format, version, every chunk's header, checksum and
//! chain digest, every event's encoding, the summary against the stream) reading one chunk at
//! a time, then gives [`Trace::header`], [`Trace::summary`], [`Trace::events`] (a streaming
//! reader that checks again as it goes) and [`Trace::kept_file`]. [`Trace::peek`] reads only
//! the header and summary (for listings). [`TraceWriter`] writes one. [`pack`] makes and
//! unpacks single-file archives; [`root`] resolves a trace named on a command line. The format
//! and its stability policy are documented in `rdb-runtime/src/trace/FORMAT.md`.

mod chunk;
pub mod event;
pub mod files;
pub mod fuzz;
pub mod pack;
pub mod progress;
mod reader;
pub mod root;
pub mod safe_fs;
mod writer;

use std::fs;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use chunk::Digest;
pub use event::{Event, MappedFile, MemWrite, Stream, Tid};
pub use files::{KeepFiles, KeepMode, KeptFile};
pub use reader::{EventReader, Trace, TraceState};
pub use writer::TraceWriter;

/// Name stored in the header's `format` field.
pub const FORMAT_NAME: &str = "rdb-trace";
/// Version of the directory layout, the framing and the event encoding (see FORMAT.md).
pub const FORMAT_VERSION: u32 = 3;

/// The header file.
pub const HEADER_FILE: &str = "rdb-trace.json";
/// The event stream.
pub const EVENTS_FILE: &str = "events";
/// The summary, written when the recording finished.
pub const SUMMARY_FILE: &str = "summary.json";
/// Kept files.
pub const FILES_DIR: &str = "files";
/// Largest header or summary file a reader accepts.
const MAX_JSON: u64 = 64 << 20;
/// The writer closes a chunk when it has been open this long, so a killed recorder loses little.
const CHUNK_MAX_AGE_NS: u64 = 500_000_000;

/// Trace header (`rdb-trace.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// rdb version that wrote the trace.
    pub rdb_version: String,
    /// Executable of the root process (absolute path).
    pub program: String,
    /// Arguments, lossily decoded for display (the exact bytes are in the `Start` event).
    pub argv: Vec<String>,
    /// blake3 of the executable, hex.
    pub program_blake3: String,
    pub cwd: String,
    /// Seconds since the epoch when recording started.
    pub started_unix: u64,
    /// CPU the recorder and tracees were pinned to, if any.
    pub pinned_cpu: Option<usize>,
    /// CPU model and a hash of its feature flags: `cpuid` cannot be trapped on machines
    /// without CPUID faulting, so replay on another CPU model may diverge.
    #[serde(default)]
    pub cpu: String,
    /// The CPU's feature flags (`/proc/cpuinfo`), to say which differ on another machine.
    #[serde(default)]
    pub cpu_flags: Vec<String>,
    /// Kernel release (`uname -r`) of the recording machine.
    #[serde(default)]
    pub kernel: String,
    /// Seed of the randomised thread schedule (`rdb record --chaos`), if one was used.
    #[serde(default)]
    pub chaos_seed: Option<u64>,
    /// Every `cpuid` of the program was trapped (CPUID faulting) and its result recorded as a
    /// `Cpuid` event; false when `cpuid` ran natively (hosts without CPUID faulting,
    /// `rdb record --no-cpuid-trap`).
    #[serde(default)]
    pub cpuid_trapped: bool,
    /// What the executable tells about its build (compilers, build directory, debug
    /// information, section digests, Cargo project), so that a rebuilt binary that differs
    /// can be explained; absent when the recorder was not given it or it is not an ELF file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_build: Option<rdb_descriptors::ProgramBuild>,
}

/// This machine's CPU: model and a hash of its feature flags (from `/proc/cpuinfo`), and the
/// flags themselves.
pub fn cpu_identity() -> (String, Vec<String>) {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let flags = field("flags");
    let digest = blake3::hash(flags.as_bytes()).to_hex();
    let id = format!("{} (flags {})", field("model name"), &digest.as_str()[..16]);
    (id, flags.split_whitespace().map(str::to_string).collect())
}

/// This machine's kernel release.
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// What differs between the machine a trace was recorded on and this one, one line per
/// difference (empty when nothing that matters does).
pub fn machine_differences(h: &Header) -> Vec<String> {
    let mut out = Vec::new();
    let (cpu, flags) = cpu_identity();
    if !h.cpu.is_empty() && h.cpu != cpu {
        let model = |s: &str| s.rsplit_once(" (flags").map_or(s.to_string(), |(m, _)| m.to_string());
        if model(&h.cpu) != model(&cpu) {
            out.push(format!("CPU model: recorded on {}, this is {}", model(&h.cpu), model(&cpu)));
        }
        let missing: Vec<&str> =
            h.cpu_flags.iter().filter(|f| !flags.contains(f)).map(String::as_str).take(12).collect();
        let extra: Vec<&str> = flags.iter().filter(|f| !h.cpu_flags.contains(f)).map(String::as_str).take(12).collect();
        if !missing.is_empty() {
            out.push(format!("CPU features the recording machine had and this one lacks: {}", missing.join(" ")));
        }
        if !extra.is_empty() {
            out.push(format!("CPU features this machine has and the recording machine lacked: {}", extra.join(" ")));
        }
        if missing.is_empty() && extra.is_empty() && model(&h.cpu) == model(&cpu) {
            out.push(format!("CPU feature flags differ: recorded {}, this is {}", h.cpu, cpu));
        }
    }
    let kernel = kernel_release();
    if !h.kernel.is_empty() && h.kernel != kernel {
        out.push(format!("kernel: recorded on {}, this is {}", h.kernel, kernel));
    }
    out
}

/// Written when recording finished (`summary.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Summary {
    /// Raw wait status of the root process.
    pub exit_status: i32,
    pub events: u64,
    pub syscalls: u64,
    pub processes: u64,
    pub chunks: u64,
    /// Size of the event file.
    pub event_bytes: u64,
    pub duration_ms: u64,
    /// Distinct files mapped by the recorded processes, with their blake3.
    pub mapped_files: Vec<(String, String)>,
    /// Files kept in `files/`.
    #[serde(default)]
    pub kept_files: Vec<KeptFile>,
}

/// Trace errors (opening, reading, writing). Every variant names the file concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    #[error("{path}: not an rdb trace directory ({why})")]
    NotATrace { path: PathBuf, why: String },
    #[error("{path}: trace format version {found} is not supported (this rdb reads version {FORMAT_VERSION}; record again with this rdb)")]
    Version { path: PathBuf, found: u32 },
    #[error("corrupt trace: {path}: {why} (at byte {offset})")]
    Corrupt { path: PathBuf, offset: u64, why: String },
    #[error("cannot use {path}")]
    Io { path: PathBuf, source: io::Error },
    /// No trace was named and there is none to default to.
    #[error("{why}")]
    NoTrace { why: String },
}

impl TraceError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> TraceError {
        let path = path.into();
        move |source| TraceError::Io { path, source }
    }
}

/// Hex of a blake3 hash.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash named by 64 hex digits.
pub fn unhex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_of(cpu: String, cpu_flags: Vec<String>, kernel: String) -> Header {
        Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            rdb_version: "test".into(),
            program: "/bin/true".into(),
            argv: vec![],
            program_blake3: String::new(),
            cwd: "/".into(),
            started_unix: 0,
            pinned_cpu: None,
            cpu,
            cpu_flags,
            kernel,
            chaos_seed: None,
            cpuid_trapped: false,
            program_build: None,
        }
    }

    #[test]
    fn the_same_machine_has_no_differences_and_another_one_is_described() {
        let (cpu, flags) = cpu_identity();
        assert!(machine_differences(&header_of(cpu.clone(), flags.clone(), kernel_release())).is_empty());
        let mut other_flags = flags.clone();
        other_flags.retain(|f| f != "sse2");
        other_flags.push("avx512_imaginary".into());
        let other = header_of("Other CPU 9000 (flags 0123456789abcdef)".into(), other_flags, "1.2.3".into());
        let d = machine_differences(&other).join("\n");
        assert!(d.contains("CPU model: recorded on Other CPU 9000"), "{d}");
        assert!(d.contains("lacks: avx512_imaginary"), "{d}");
        assert!(d.contains("kernel: recorded on 1.2.3"), "{d}");
        if flags.iter().any(|f| f == "sse2") {
            assert!(d.contains("this machine has and the recording machine lacked: sse2"), "{d}");
        }
    }

    #[test]
    fn hashes_round_trip_through_hex() {
        let h = *blake3::hash(b"x").as_bytes();
        assert_eq!(unhex(&hex(&h)), Some(h));
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex(&"g".repeat(64)), None);
        assert_eq!(unhex(&"+1".repeat(32)), None);
        assert_eq!(unhex(&hex(&h).to_uppercase()), None);
    }
}
