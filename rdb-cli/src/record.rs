//! `rdb record`.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Result;
use rdb_runtime::trace::{KeepFiles, KeepMode};
use rdb_runtime::{record_with, RecordOptions, Schedule};

use crate::progress::Progress;
use crate::traces;

/// How `rdb record` keeps the files a trace depends on.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Keep {
    /// Hard links where the filesystem allows, else copies.
    Link,
    /// Copies (safe even if an original is later rewritten in place).
    Copy,
    /// Nothing: replay needs the originals, unchanged.
    Off,
}

/// Record a run of a program
///
/// Runs PROG with ARGS under rdb's recorder: it reads its input and writes its output as
/// usual, and rdb exits with its exit status. The trace (by default `<prog>-<n>` in the trace
/// root, $RDB_TRACE_DIR or ~/.local/share/rdb; `rdb ls` lists them) holds everything needed to
/// replay that exact run. It keeps the executable and every file the program mapped
/// (libraries included), so rebuilding or upgrading them later changes nothing for replay. A
/// trace holds everything the program read and its environment: it is private to you (see the
/// README before sharing one).
#[derive(clap::Args)]
#[command(override_usage = "rdb record [OPTIONS] [--] <PROG> [ARGS]...")]
pub struct Args {
    /// Trace directory to create, or an empty directory of yours (default:
    /// $RDB_TRACE_DIR/<prog>-<n> or ~/.local/share/rdb/<prog>-<n>).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Do not pin the recorder and the program to one CPU (pinning makes recording faster;
    /// threads run one at a time either way).
    #[arg(long)]
    no_pin: bool,
    /// Let the program's `cpuid` instructions run natively even where the host offers CPUID
    /// faulting (a replay then needs the same CPU model; `rdb info` says which was done).
    #[arg(long)]
    no_cpuid_trap: bool,
    /// Randomise the thread schedule (switch points and which thread runs next) to expose
    /// rare interleavings; the seed is stored in the trace.
    #[arg(long)]
    chaos: bool,
    /// Seed for --chaos (default: from the clock; printed).
    #[arg(long, requires = "chaos")]
    seed: Option<u64>,
    /// Time slice in microseconds: a thread that has had its turn this long is switched out at
    /// its next syscall when another thread is ready.
    #[arg(long, default_value_t = 1000, value_name = "MICROSECONDS")]
    slice_us: u64,
    /// Stop the recording when a thread runs user code this many seconds without a syscall
    /// while other threads wait (it warns after one period, stops after two).
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    watchdog: u64,
    /// Switch out a thread that runs user code this many milliseconds without a syscall while
    /// another thread of its process waits (at an interruption point replay finds again).
    #[arg(long, default_value_t = 20, value_name = "MILLISECONDS")]
    preempt_ms: u64,
    /// How to keep the executable and the mapped files in the trace (traces in the trace root
    /// share one copy of each file).
    #[arg(long, value_enum, default_value = "link", value_name = "HOW")]
    keep_files: Keep,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROG ARGS")]
    command: Vec<OsString>,
}

pub fn run(a: Args) -> Result<i32> {
    let program = a.command[0].clone();
    let (dir, default_place) = match a.output {
        Some(d) => (d, false),
        None => (traces::new_trace_dir(&program.to_string_lossy())?, true),
    };
    let mode = match a.keep_files {
        Keep::Link => KeepMode::Link,
        Keep::Copy => KeepMode::Copy,
        Keep::Off => KeepMode::Off,
    };
    // Before anything runs: a warning about what a later replay with regions will lack must
    // come before the one recording that matters.
    let program_build = crate::why::describe_for_recording(&program);
    let opts = RecordOptions {
        program,
        args: a.command[1..].to_vec(),
        trace_dir: dir.clone(),
        pin_cpu: !a.no_pin && std::env::var_os("RDB_NO_PIN").is_none(),
        keep_files: KeepFiles { mode, store: traces::store_for(&dir) },
        program_build,
        trap_cpuid: !a.no_cpuid_trap,
    };
    let chaos = a.chaos.then(|| {
        a.seed.unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
        })
    });
    if let Some(seed) = chaos {
        eprintln!("rdb: chaos schedule, seed {seed}");
    }
    let schedule = Schedule {
        slice: std::time::Duration::from_micros(a.slice_us),
        chaos,
        watchdog: std::time::Duration::from_secs(a.watchdog.max(1)),
        preempt: std::time::Duration::from_millis(a.preempt_ms.max(1)),
    };
    let existed = std::fs::symlink_metadata(&dir).is_ok();
    let progress = Progress::start("recorded", None);
    let result = record_with(&opts, &schedule);
    drop(progress);
    let out = match result {
        Ok(out) => out,
        Err(e) => {
            // Leave no empty trace directory of ours behind (a partial trace stays: it
            // replays; a directory that was there before is not ours to remove).
            if !existed || default_place {
                let _ = std::fs::remove_dir(&dir);
            }
            return Err(e.into());
        }
    };
    if default_place {
        traces::set_latest(&dir)?;
    }
    eprintln!(
        "rdb: recorded {} events ({} syscalls, {} processes, {} bytes) to {}",
        out.events,
        out.syscalls,
        out.processes,
        out.event_bytes,
        out.trace_dir.display()
    );
    let s = out.exit_status;
    Ok(if s & 0x7f == 0 { (s >> 8) & 0xff } else { 128 + (s & 0x7f) })
}
