//! Replay debugging: replay a trace and run the debug regions of a rebuilt
//! binary at their code locations.
//!
//! This crate joins the two halves of rdb. The trace was recorded from a plain
//! build; the user then added regions and rebuilt with `cargo rdb build` (or
//! `rdb-clang`), which produced a main binary byte-identical to the recorded
//! executable plus a debug module and descriptors beside it. [`replay_with_regions`]:
//!
//! 1. refuses a binary whose hash differs from the recorded executable's (only
//!    region code and debug-only items may change between recording and
//!    replay), and descriptors written for another binary;
//! 2. starts a [`DebugHost`] for the debug module;
//! 3. replays the trace with a [`ReplayObserver`] that breaks at every region
//!    location in every process running that executable, and at each hit
//!    calls the region's debug function through the host, which sees a
//!    read-only mirror of the stopped program;
//! 4. reports every hit that did not complete cleanly (write to program
//!    memory, panic, crash, timeout) on stderr with the region and its source
//!    location, and carries on: the program's replay is never affected.
//!
//! The region logic itself — which addresses run which regions, running them in the host,
//! counting, the end-of-run report — is [`Regions`], shared with [`run_on_target`], which
//! drives any target implementing the tracee layer's `Control` (a GDB stub through
//! `rdb-remote`: `rdb attach --remote`) with the same regions, checks and report.
//!
//! The module's event callbacks (`callbacks`) run beside the regions, with the same host.
//!
//! [`find`] searches the replay for where a region's check (`rdb_check!`) starts failing
//! (`rdb find`).

mod callbacks;

mod attach;
pub mod find;
pub mod find_expr;
pub mod find_watch;
mod regions;

pub use attach::{run_on_target, AttachOptions, AttachOutcome};
pub use regions::{RegionReport, Regions, EXIT_REGION_PROBLEMS};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rdb_descriptors::FunctionDescriptors;
use rdb_host::{HostError, HostOptions};
use rdb_runtime::{BreakpointStop, ProcessImage, ReplayObserver, ReplayOptions, ReplayOutcome, SyscallStop, Trace};

/// What to replay, and with which regions.
#[derive(Debug)]
pub struct DebugReplayOptions {
    pub replay: ReplayOptions,
    /// The rebuilt main binary; its debug module and descriptors sit beside it.
    pub binary: PathBuf,
    pub host: HostOptions,
}

/// How a replay with regions went.
#[derive(Debug)]
pub struct DebugReplayOutcome {
    pub replay: ReplayOutcome,
    pub report: RegionReport,
}

/// Why a replay with regions could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DebugError {
    #[error(
        "{binary} is not the executable the trace was recorded from ({recorded}): its hash is {actual}, \
         the recorded one is {expected}.\n\
         Only code inside rdb_begin!/rdb_end! regions and #[debug_only] items may change between recording and \
         replay; rebuild the source the trace was recorded from, plus regions, with `cargo rdb build` \
         (same profile as the recorded build)"
    )]
    BinaryMismatch { binary: PathBuf, recorded: String, expected: String, actual: String },
    #[error(
        "{descriptors} describes another build of {binary} (descriptor hash {expected}, binary hash {actual}): \
         run `cargo rdb build` again"
    )]
    StaleDescriptors { descriptors: PathBuf, binary: PathBuf, expected: String, actual: String },
    #[error(
        "{binary} is not the executable the stub runs ({exe}): its hash is {actual}, the running one's is {expected}.\n\
         Only code inside rdb_begin!/rdb_end! regions and #[debug_only] items may differ; rebuild the running \
         program's source, plus regions, with `cargo rdb build` (or `rdb-clang`), or name the right file with --exe"
    )]
    NotTheRunningExecutable { binary: PathBuf, exe: PathBuf, expected: String, actual: String },
    #[error(
        "the program the stub runs is not {binary}: its loaded code differs at {address:#x}.\n\
         Only code inside rdb_begin!/rdb_end! regions and #[debug_only] items may differ from the running program"
    )]
    CodeDiffers { binary: PathBuf, address: u64 },
    #[error("the target failed {what} (after {calls} region calls)")]
    Target { what: String, calls: u64, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Descriptors(#[from] rdb_descriptors::Error),
    #[error(transparent)]
    Trace(#[from] rdb_runtime::TraceError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Replay(#[from] rdb_runtime::Error),
}

/// How long the host busy-waits (yielding the CPU it shares) for the next hit before sleeping.
const HOST_SPIN: std::time::Duration = std::time::Duration::from_micros(200);

fn blake3_file(path: &Path) -> Result<String, DebugError> {
    let bytes = std::fs::read(path).map_err(|source| DebugError::Io { path: path.to_path_buf(), source })?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

/// Checks that `binary` may replay the trace in `trace_dir` with regions:
/// same bytes as the recorded executable, descriptors written for it.
/// Returns the binary's hash and its function descriptors.
pub fn check_binary(trace_dir: &Path, binary: &Path) -> Result<(String, FunctionDescriptors), DebugError> {
    // The header only: the replay that follows checks the whole trace.
    let (header, _) = Trace::peek(trace_dir)?;
    let actual = blake3_file(binary)?;
    if actual != header.program_blake3 {
        return Err(DebugError::BinaryMismatch {
            binary: binary.to_path_buf(),
            recorded: header.program,
            expected: header.program_blake3,
            actual,
        });
    }
    let functions = check_descriptors(binary, &actual)?;
    Ok((actual, functions))
}

/// The function descriptors beside `binary`, refused unless written for it (hash `hash`).
fn check_descriptors(binary: &Path, hash: &str) -> Result<FunctionDescriptors, DebugError> {
    let paths = rdb_descriptors::artefact_paths(binary);
    let functions = rdb_descriptors::load_functions(&paths.functions)?;
    if functions.binary.blake3 != hash {
        return Err(DebugError::StaleDescriptors {
            descriptors: paths.functions,
            binary: binary.to_path_buf(),
            expected: functions.binary.blake3,
            actual: hash.to_string(),
        });
    }
    Ok(functions)
}

/// Replays the trace, running the binary's debug regions at their locations.
/// See the crate docs.
pub fn replay_with_regions(opts: DebugReplayOptions) -> Result<DebugReplayOutcome, DebugError> {
    let mut observer = RegionObserver::new(&opts.replay, &opts.binary, opts.host)?;
    let replay = rdb_runtime::replay(&opts.replay, &mut observer)?;
    Ok(DebugReplayOutcome { replay, report: observer.report() })
}

impl RegionObserver {
    /// Checks `binary` against the trace (see [`check_binary`]) and starts the debug host for
    /// its module. The observer then runs the regions in any replay of the trace: pass it to
    /// [`rdb_runtime::replay`] or to a [`rdb_runtime::Session`] (a debugger's replay runs the
    /// regions too).
    pub fn new(replay: &ReplayOptions, binary: &Path, host: HostOptions) -> Result<RegionObserver, DebugError> {
        let (hash, functions) = check_binary(&replay.trace_dir, binary)?;
        let host_options = placed_host(replay, host);
        let regions = Regions::start(binary, &functions, host_options)?;
        let callbacks = callbacks::Callbacks::new(regions.host());
        Ok(RegionObserver { regions, callbacks, binary_hash: hash, matches: HashMap::new() })
    }

    /// What the regions and event callbacks did so far (the end-of-run report).
    pub fn report(&self) -> RegionReport {
        let mut report = self.regions.report();
        report.calls += self.callbacks.calls;
        report.problems += self.callbacks.problems;
        report.callback_calls = self.callbacks.calls;
        report.callbacks_never_called = self.callbacks.never_called();
        report
    }
}

/// Another CPU this process may run on than `cpu`.
fn other_allowed_cpu(cpu: usize) -> Option<usize> {
    let mask = rdb_tracee::this_process::affinity_mask().ok()?;
    (0..mask.len() * 8).find(|&c| c != cpu && mask[c / 8] & (1 << (c % 8)) != 0)
}

/// Where the debug host runs next to a replay pinned to a CPU.
fn placed_host(replay: &ReplayOptions, host: HostOptions) -> HostOptions {
    let mut host_options = host;
    if replay.pin_cpu && host_options.cpu.is_none() {
        // One thread of the replay runs at a time (replayer, program or host), so the host
        // shares the replay's CPU: every hand-over is a same-CPU switch. A host on another
        // CPU, busy-waiting there, is no faster on a loaded machine but much slower: a side
        // that spins uses up its share of a CPU other work also wants, and is preempted for
        // whole time slices while the other side waits for it (the README's callback figures).
        // The replayer pins itself to the CPU it runs on; pin first so the host can be placed
        // on it. Both sides wait for each other yielding the CPU: a call needs no wake-up.
        // `RDB_HOST_OWN_CPU=1` gives the host another allowed CPU instead, where it spins
        // (faster on an idle machine; `bench/replay_regions.sh` measures both).
        let cpu = rdb_tracee::this_process::current_cpu();
        let other = std::env::var_os("RDB_HOST_OWN_CPU").and_then(|_| other_allowed_cpu(cpu));
        if rdb_tracee::this_process::pin_to_cpu(cpu).is_ok() {
            // Sharing the CPU with the replayer and the program, which run with the TSC
            // disabled, the host does so too (see `HostOptions::tsc_disabled`).
            host_options.cpu = Some(other.unwrap_or(cpu));
            host_options.tsc_disabled = other.is_none();
            if host_options.spin.is_zero() {
                host_options.spin = HOST_SPIN;
            }
        }
    }
    host_options
}

/// Breaks at region locations in every process running the region binary, and runs the
/// regions there: the one place regions are run during a replay (plain or driven by a
/// debugger).
pub struct RegionObserver {
    regions: Regions,
    /// The module's event callbacks, run beside the regions.
    callbacks: callbacks::Callbacks,
    binary_hash: String,
    /// Executable path -> whether it is the region binary (by hash).
    matches: HashMap<PathBuf, bool>,
}

impl RegionObserver {
    fn runs_region_binary(&mut self, exe: &Path) -> bool {
        if let Some(&m) = self.matches.get(exe) {
            return m;
        }
        let m = blake3_file(exe).map(|h| h == self.binary_hash).unwrap_or(false);
        self.matches.insert(exe.to_path_buf(), m);
        m
    }
}

impl ReplayObserver for RegionObserver {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        if !self.runs_region_binary(&image.file) {
            return Vec::new();
        }
        let mut addresses = self.regions.breakpoints(image.load_bias);
        addresses.extend(self.callbacks.on_exec(image));
        addresses.sort_unstable();
        addresses.dedup();
        addresses
    }

    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        self.regions.run_at(stop.addr, stop);
        self.callbacks.on_breakpoint(self.regions.host_mut(), stop);
        self.callbacks.collect_watch_requests(self.regions.host_mut(), stop.image.tid, stop);
        Ok(())
    }

    fn on_watchpoint(&mut self, stop: &BreakpointStop<'_>, slots: u8) -> Result<(), String> {
        self.callbacks.on_watchpoint(self.regions.host_mut(), stop, slots);
        self.callbacks.collect_watch_requests(self.regions.host_mut(), stop.image.tid, stop);
        Ok(())
    }

    fn take_watchpoints(&mut self) -> Vec<(usize, Option<rdb_tracee::Watchpoint>)> {
        self.callbacks.take_watchpoints()
    }

    fn take_page_watches(&mut self) -> Vec<(u64, u64)> {
        self.callbacks.take_page_watches()
    }

    fn on_page_write(&mut self, stop: &BreakpointStop<'_>, addr: u64) -> Result<(), String> {
        self.callbacks.on_page_write(self.regions.host_mut(), stop, addr);
        self.callbacks.collect_watch_requests(self.regions.host_mut(), stop.image.tid, stop);
        Ok(())
    }

    fn take_breakpoints(&mut self) -> Vec<u64> {
        self.callbacks.take_breakpoints()
    }

    fn wants_syscall(&self, nr: u64, exit: bool) -> bool {
        self.callbacks.wants_syscall(nr, exit)
    }

    fn on_fork(&mut self, parent: &ProcessImage, child: &ProcessImage) {
        if self.runs_region_binary(&parent.file) {
            self.regions.on_fork(parent.pid.0, child.pid.0);
            self.callbacks.on_fork(parent, child);
        }
    }

    fn can_go_back(&self) -> Result<(), String> {
        self.callbacks.can_go_back()?;
        self.regions.going_back();
        Ok(())
    }

    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<(), String> {
        if self.runs_region_binary(&stop.image.file) {
            self.callbacks.on_syscall(self.regions.host_mut(), stop);
            self.callbacks.collect_watch_requests(self.regions.host_mut(), stop.image.tid, stop);
        }
        Ok(())
    }
}
