//! Temporal search (`rdb find`): where in the replay a region's check (`rdb_check!`, C's
//! `rdb_check`) starts failing, by binary search over the region's hits.
//!
//! The region's hits are numbered from 1 in program order (the replay's order, the same in every
//! replay). A *probe* runs the region's debug function at one hit and reads its checks (the
//! region passes when all its checks hold). The search:
//!
//! 1. one replay counts the hits: the search's observer plants the region's breakpoints as a
//!    region's (displaced: a hit costs one stop, no single step), counts the hits of the
//!    searched process and names each (thread, stretch, arrivals at its address: a
//!    [`Position`]), runs the region at hit 1 (a scan: at every hit), and every
//!    [`CHECKPOINT_SPACING`] of replay asks for a checkpoint, which the search takes at the
//!    next hit (at most [`MAX_CHECKPOINTS`]: past that, every other one goes and the spacing
//!    doubles, so they stay evenly spread). A bisection runs the check at these checkpoints
//!    too (while that takes at most a tenth of the replay's time) and stops counting at the
//!    first whose outcome is past the change: the answer lies between it and the checkpoint
//!    before, and the rest of the replay is never run;
//!
//!    Where the region's instructions can carry a `jmp` (at least 5 bytes), the process counts
//!    its hits itself instead (counting stubs, [`ReplayObserver::counts_hits`]): no stop per
//!    hit; the observer sees only the hits the search asks for (hit 1, the hit after each
//!    checkpoint, whose check runs there), the checkpoints are taken at event halts (a ticker
//!    halts the replay every spacing) keyed by the count read there, and the hits' threads are
//!    not seen: a probe then restores the latest checkpoint before its hit and counts the
//!    session's breakpoint halts from the checkpoint's count (`RDB_FIND_BREAKPOINTS=1`: a
//!    stop at every hit, as below);
//! 2. when the counting went to the end, probes hit N (the last);
//! 3. bisects between a passing and a failing hit: each probe goes to its hit with
//!    [`Session::seek`] (the latest checkpoint before it, then a quiet replay counting arrivals
//!    without halting), runs the region there, and takes a checkpoint: the interval left to
//!    search always starts at a checkpoint, so later probes replay less and less.
//!
//! So a search makes at most `2 + ⌈log2(N−1)⌉` probes (N: the hits counted), besides the
//! checks at the counting replay's checkpoints (which replay nothing of their own). The check
//! is assumed monotonic (it holds, then fails for good); `scan` runs it at every hit instead,
//! in one replay, and reports every transition. A check must read the program's state only: debug-only statics are not rewound
//! between probes, and a probe skips the hits between its checkpoint and its hit.
//!
//! Probes run one after another on one CPU: a checkpoint's frozen copies are traced by the
//! thread that made them, and running probes in parallel would need them detached and attached
//! in other tracer threads (see ARCHITECTURE, "The replay session").

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdb_tracee::this_process::monotonic_coarse_ns;

use rdb_host::{Check, DebugHost, HostOptions};
use rdb_runtime::trace::Tid;
use rdb_runtime::{
    BreakpointStop, Move, Position, ProcessImage, ReplayObserver, ReplayOptions, Resume, Session, SessionStop,
    SyscallStop,
};

use crate::DebugError;

/// Replay time between the checkpoints of the counting pass.
pub const CHECKPOINT_SPACING: Duration = Duration::from_millis(100);
/// The most checkpoints the counting pass keeps.
pub const MAX_CHECKPOINTS: usize = 48;

/// Which region to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionChoice {
    /// The only region of the binary.
    Only,
    /// By id (`rdb find --region ID`).
    Id(u32),
    /// The region whose `rdb_begin` is on this line of a file whose path ends with `file`.
    At { file: PathBuf, line: u32 },
}

/// What to look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The first hit where the check fails.
    FirstFalse,
    /// The last hit where the check holds.
    LastTrue,
    /// The first hit whose outcome differs from hit 1's.
    Changes,
}

/// A search to run.
pub struct FindOptions {
    pub replay: ReplayOptions,
    /// The rebuilt binary (its debug module and descriptors beside it).
    pub binary: PathBuf,
    pub region: RegionChoice,
    pub mode: Mode,
    /// Run the check at every hit (a linear scan) instead of bisecting.
    pub scan: bool,
    /// The recorded process to search in (default: the one the recording started).
    pub process: Option<Tid>,
    /// Resume a search: hit `lo` passes (for `Changes`: has hit 1's outcome) and hit `hi` does
    /// not (`rdb find --between LO HI`, what an interrupted search printed).
    pub between: Option<(u64, u64)>,
    /// Set (from a signal handler) to stop the search; it ends with the interval known so far.
    pub interrupt: &'static AtomicBool,
    /// Where the search is, for a progress display.
    pub progress: Arc<Mutex<FindProgress>>,
}

/// Where a search is (updated as it goes).
#[derive(Debug, Clone, Default)]
pub struct FindProgress {
    /// Counting the hits (the first replay).
    pub counting: bool,
    pub hits: u64,
    pub events: u64,
    pub total_events: Option<u64>,
    pub probes: u64,
    /// Probes the search will make at most, once the hits are counted.
    pub probes_estimated: Option<u64>,
}

/// One probe: the region's checks at one hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub hit: u64,
    /// Index of the last event replayed before the hit (`rdb gdb --goto` takes it).
    pub event: u64,
    /// Recorded id of the thread.
    pub thread: Tid,
    pub ok: bool,
    /// The region's file and the (first failing, else first) check's line.
    pub file: PathBuf,
    pub line: u32,
    /// That check's message, or its condition when it has none.
    pub message: String,
    /// The program's backtrace there (probes of a bisection; empty for scans).
    pub backtrace: String,
}

/// How a search ended.
pub struct FindOutcome {
    pub region: u32,
    /// The region's `rdb_begin` (`file:line`).
    pub region_at: String,
    /// Hits counted (up to `between`'s `hi` when resuming).
    pub hits: u64,
    /// The answer (`None`: no such hit; `verdict` says why).
    pub answer: Option<Probe>,
    /// One line saying what was found or why nothing was.
    pub verdict: String,
    /// Probes made (checks run), the counting pass's included.
    pub probes: u64,
    /// The most a bisection of these hits makes: `2 + ⌈log2(N−1)⌉`.
    pub probe_bound: u64,
    /// Interrupted: the interval still to search (`lo` passes, `hi` fails), if any is known.
    pub interrupted: Option<Option<(u64, u64)>>,
    /// With `scan`: every hit whose outcome differs from the hit before (hit 1 included).
    pub transitions: Vec<Probe>,
    /// CPUs the probes ran on.
    pub cpus: usize,
    /// Time spent in the counting replay (the rest of the search is probes).
    pub counting: Duration,
    /// Checks the counting replay ran at its checkpoints (not probes: no replay of their own).
    pub checkpoint_checks: u64,
    /// The counting replay stopped at a checkpoint whose check had the sought outcome: `hits`
    /// counts the hits up to there, not all of them.
    pub counted_part: bool,
    /// How the counting replay counted: `None` without a stop (counting stubs), else why each
    /// hit was a breakpoint stop.
    pub counted_with_stops: Option<String>,
    /// The replay, halted at the answer's hit (for `--then gdb`), its breakpoints removed.
    pub session: Option<Session<'static>>,
}

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FindError {
    #[error(transparent)]
    Debug(#[from] DebugError),
    #[error(transparent)]
    Replay(#[from] rdb_runtime::Error),
    #[error(transparent)]
    Host(#[from] rdb_host::HostError),
    #[error("{0}")]
    Usage(String),
    #[error("region {region} ({at}) at hit {hit}: {what}")]
    Probe { region: u32, at: String, hit: u64, what: String },
    #[error("the replay lost the debugged process: {0}")]
    Io(#[from] std::io::Error),
}

/// What the counting replay does at each hit of the region (see [`Sites`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Count only.
    Count,
    /// Count, and run the region at hit 1.
    First,
    /// Count, and run the region at every hit (a scan).
    Every,
}

/// What the observer of the counting replay and the search share.
struct Shared {
    host: DebugHost,
    region: u32,
    region_at: String,
    file: PathBuf,
    focus: Option<Tid>,
    /// Hits are counted (the counting replay): off while probing, where the session's halts
    /// count them.
    counting: bool,
    run: Run,
    hits: u64,
    /// Stop counting at this hit (`--between`'s `hi`).
    stop_at: Option<u64>,
    /// The session's interrupter: set when a checkpoint is due (or the count is complete).
    halt: Option<Arc<AtomicBool>>,
    last_checkpoint: u64,
    /// Replay time between checkpoints (doubled each time they are thinned).
    spacing_ns: u64,
    /// Probes made.
    probes: u64,
    /// Probes of the counting replay: hit 1's, or (scan) each change of outcome.
    seen: Vec<Probe>,
    /// The outcome at the last hit the scan checked, and the last hit where the check held.
    last_ok: Option<bool>,
    last_true: Option<Probe>,
    /// Why the replay was stopped by the observer.
    error: Option<FindError>,
    /// The hits by thread and stretch (where each is named from), in order.
    runs: Vec<HitRun>,
    /// The region's module-relative addresses, and (when it has several) which one each hit
    /// was at.
    addresses: Vec<u64>,
    address_index: Vec<u16>,
    progress: Arc<Mutex<FindProgress>>,
    /// The hits are counted by the process itself (counting stubs): the observer sees only
    /// the hits the search asks for ([`Session::set_hit_target`]), numbered by the count.
    stubs: bool,
    /// Counting stubs are allowed (`RDB_FIND_BREAKPOINTS=1`: a stop at every hit, to compare).
    want_stubs: bool,
    /// Run the check at this hit (the one after a checkpoint of the counting replay) and keep
    /// its probe in `checkpoint_probe`; the time those checks took.
    check_at: Option<u64>,
    checkpoint_probe: Option<Probe>,
    check_time: Duration,
    /// The count read where the searched process left its image (exit, exec), when counting
    /// with stubs: its memory is gone after.
    final_count: Option<u64>,
    counter_at: Option<u64>,
    /// The searched process ran a new image (`exec`) while counting with stubs.
    exec_while_counting: bool,
}

/// Consecutive hits of one thread in one stretch.
#[derive(Debug, Clone, Copy)]
struct HitRun {
    first: u64,
    tid: Tid,
    stretch: u64,
}

/// A probe made by the counting replay has no event index yet (filled by a later visit).
const EVENT_UNKNOWN: u64 = u64::MAX;

impl Shared {
    /// Runs the region for the program stopped at `target` (module-relative `address`) at hit
    /// `hit` of thread `tid`.
    fn check(&mut self, hit: u64, tid: Tid, address: u64, target: &dyn rdb_tracee::Target) -> Result<Probe, FindError> {
        let failed = |what: String| FindError::Probe { region: self.region, at: self.region_at.clone(), hit, what };
        self.host.invalidate();
        let call = self.host.invoke(self.region, address, target)?;
        self.probes += 1;
        if let Ok(mut p) = self.progress.lock() {
            p.probes = self.probes;
        }
        let checks = self.host.take_checks();
        if !call.is_clean() {
            return Err(failed(format!("the region did not complete: {call}")));
        }
        if checks.is_empty() {
            return Err(failed(
                "the region made no check (rdb_check!(cond, ..) in Rust, rdb_check(cond, ..) in C) at this hit".into(),
            ));
        }
        let shown: &Check = checks.iter().find(|c| !c.ok).unwrap_or(&checks[0]);
        let message = if shown.message.is_empty() { shown.condition.clone() } else { shown.message.clone() };
        Ok(Probe {
            hit,
            event: EVENT_UNKNOWN,
            thread: tid,
            ok: checks.iter().all(|c| c.ok),
            file: self.file.clone(),
            line: shown.line,
            message,
            backtrace: shown.backtrace.clone(),
        })
    }

    /// The module-relative address of hit `k` (from 1).
    fn address_of(&self, k: u64) -> u64 {
        match self.address_index.get((k - 1) as usize) {
            Some(&i) => self.addresses[i as usize],
            None => self.addresses[0],
        }
    }

    /// A hit reached by the counting replay.
    fn counted(&mut self, stop: &BreakpointStop<'_>) -> Result<(), FindError> {
        if self.stubs {
            return self.counted_by_stub(stop);
        }
        self.hits += 1;
        let hit = self.hits;
        if self.runs.last().is_none_or(|r| r.tid != stop.tid || r.stretch != stop.stretch) {
            self.runs.push(HitRun { first: hit, tid: stop.tid, stretch: stop.stretch });
        }
        if self.addresses.len() > 1 {
            let address = stop.addr.wrapping_sub(stop.image.load_bias);
            let i = self.addresses.iter().position(|&a| a == address).unwrap_or(0);
            self.address_index.push(i as u16);
        }
        let run = match self.run {
            Run::Every => true,
            Run::First => hit == 1,
            Run::Count => false,
        };
        if run {
            let address = stop.addr.wrapping_sub(stop.image.load_bias);
            let p = self.check(hit, stop.tid, address, stop)?;
            if p.ok {
                self.last_true = Some(p.clone());
            }
            if self.last_ok != Some(p.ok) {
                self.last_ok = Some(p.ok);
                self.seen.push(p);
            }
        }
        if let Ok(mut g) = self.progress.lock() {
            g.hits = hit;
        }
        let due = monotonic_coarse_ns().saturating_sub(self.last_checkpoint) >= self.spacing_ns;
        if due || self.stop_at.is_some_and(|s| hit >= s) {
            if let Some(h) = &self.halt {
                h.store(true, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

impl Shared {
    /// A hit the counting stubs stopped at (the one the search asked for): hit 1, the hit
    /// after a checkpoint (its check), or `--between`'s last.
    fn counted_by_stub(&mut self, stop: &BreakpointStop<'_>) -> Result<(), FindError> {
        let Some(hit) = stop.hit else { return Ok(()) };
        self.hits = self.hits.max(hit);
        let address = stop.addr.wrapping_sub(stop.image.load_bias);
        if self.run == Run::First && hit == 1 {
            let p = self.check(hit, stop.tid, address, stop)?;
            self.last_ok = Some(p.ok);
            self.seen.push(p);
        }
        if self.check_at == Some(hit) {
            self.check_at = None;
            let started = std::time::Instant::now();
            let mut p = self.check(hit, stop.tid, address, stop)?;
            self.check_time += started.elapsed();
            // Not a probe of the search: a check at a checkpoint, counted apart.
            self.probes -= 1;
            p.event = EVENT_UNKNOWN;
            self.checkpoint_probe = Some(p);
            if let Some(h) = &self.halt {
                h.store(true, Ordering::SeqCst);
            }
        }
        if self.stop_at.is_some_and(|s| hit >= s) {
            if let Some(h) = &self.halt {
                h.store(true, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

/// The observer of the search's replay. It plants the region's breakpoints in every image of
/// the region binary as the replayer plants a region's (the instruction under each is prepared
/// once, so that going on from a hit takes no single step), and counts the hits of the
/// searched process while the counting replay runs, running the region where that replay
/// checks. When probing, the session's own breakpoints at the same places make hits halt.
struct Sites {
    addresses: Vec<u64>,
    hash: String,
    matches: std::collections::HashMap<PathBuf, bool>,
    shared: Rc<RefCell<Shared>>,
}

impl ReplayObserver for Sites {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        {
            let mut shared = self.shared.borrow_mut();
            if shared.stubs && shared.counting && Some(image.tid) == shared.focus {
                // A new image counts from 0 in its own words: the numbering would restart.
                shared.exec_while_counting = true;
                if let Some(h) = &shared.halt {
                    h.store(true, Ordering::SeqCst);
                }
            }
        }
        let hash = &self.hash;
        let ours = *self
            .matches
            .entry(image.file.clone())
            .or_insert_with(|| crate::blake3_file(&image.file).is_ok_and(|h| h == *hash));
        if !ours {
            return Vec::new();
        }
        self.addresses.iter().map(|a| a.wrapping_add(image.load_bias)).collect()
    }

    fn counts_hits(&self) -> bool {
        self.shared.borrow().want_stubs
    }

    fn wants_syscall(&self, nr: u64, exit: bool) -> bool {
        // Where a process leaves its image (its count goes with it), at the entry.
        use rdb_runtime::syscalls::{policy, Policy};
        !exit && matches!(policy(nr), Policy::Exit | Policy::Exec) && self.shared.borrow().stubs
    }

    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<(), String> {
        let mut shared = self.shared.borrow_mut();
        if !shared.counting || Some(stop.process) != shared.focus {
            return Ok(());
        }
        if let Some(at) = shared.counter_at {
            let mut word = [0u8; 8];
            if rdb_tracee::Memory::read_memory(stop, at, &mut word).is_ok_and(|n| n == 8) {
                shared.final_count = Some(u64::from_le_bytes(word));
            }
        }
        Ok(())
    }

    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        let mut shared = self.shared.borrow_mut();
        if !shared.counting || Some(stop.image.tid) != shared.focus {
            return Ok(());
        }
        match shared.counted(stop) {
            Ok(()) => Ok(()),
            Err(e) => {
                let text = e.to_string();
                shared.error = Some(e);
                Err(text)
            }
        }
    }
}

/// The search's state over one replay session.
struct Search {
    session: Session<'static>,
    shared: Rc<RefCell<Shared>>,
    /// Module-relative code addresses of the region.
    addresses: Vec<u64>,
    bias: u64,
    /// The session's breakpoints are at the region's addresses (probing).
    armed: bool,
    /// Hits replayed so far in the current replay (the halt is at hit `here` when halted at one).
    here: u64,
    /// Checkpoints by the hits replayed before them.
    checkpoints: BTreeMap<u64, u32>,
    interrupt: &'static AtomicBool,
    /// The halt of the current hit.
    halted: Option<(Tid, u64)>,
    /// Probes carry the program's backtrace (a bisection's do, a scan's do not).
    backtraces: bool,
    /// Time spent in the counting replay.
    counting: Duration,
    /// The counting replay runs the check at each of its checkpoints and stops at the first
    /// where the outcome is not the wanted one (a bisection: `Some(mode)`).
    check_checkpoints: Option<Mode>,
    /// Checks run at the counting replay's checkpoints.
    checkpoint_checks: u64,
    /// The last checkpoint's check with the wanted outcome, and the one without it where the
    /// counting replay stopped.
    checkpoint_passed: Option<Probe>,
    checkpoint_failed: Option<Probe>,
    /// When the counting replay started, and the time its checkpoints' checks took.
    count_started: std::time::Instant,
    checkpoint_check_time: Duration,
    /// The counting replay counted with stubs: probes go to their hit by halting at each hit
    /// from a checkpoint (the hits' threads were not seen).
    stubs: bool,
    /// Why the counting replay stopped at every hit (no counting stubs), if it did.
    with_stops: Option<String>,
    /// Checkpoints taken at an event, before the hit after their key (the others are at their
    /// hit, halted there).
    event_checkpoints: std::collections::HashSet<u64>,
}

/// Runs a search (see the module docs).
pub fn find(opts: FindOptions) -> Result<FindOutcome, FindError> {
    let (hash, functions) = crate::check_binary(&opts.replay.trace_dir, &opts.binary)?;
    let (region, region_at, file) = choose_region(&functions, &opts.region)?;
    let null = std::fs::File::create("/dev/null").map_err(FindError::Io)?;
    // Region output would come in probe order: the search shows its answer only.
    let mut host = DebugHost::for_binary(&opts.binary, HostOptions { stdout: Some(null), ..HostOptions::default() })?;
    let addresses: Vec<u64> =
        host.code_locations().into_iter().filter(|(_, ids)| ids.contains(&region)).map(|(a, _)| a).collect();
    if addresses.is_empty() {
        return Err(FindError::Usage(format!("region {region} ({region_at}) has no code location in the binary")));
    }
    // Backtraces cost an unwinding each: the bisection's few probes take them, a scan does not.
    host.set_check_backtraces(!opts.scan);
    let shared = Rc::new(RefCell::new(Shared {
        host,
        region,
        region_at: region_at.clone(),
        file,
        focus: None,
        counting: false,
        run: Run::Count,
        hits: 0,
        stop_at: None,
        halt: None,
        last_checkpoint: 0,
        spacing_ns: CHECKPOINT_SPACING.as_nanos() as u64,
        probes: 0,
        seen: Vec::new(),
        last_ok: None,
        last_true: None,
        error: None,
        runs: Vec::new(),
        addresses: addresses.clone(),
        address_index: Vec::new(),
        progress: opts.progress.clone(),
        stubs: false,
        want_stubs: std::env::var_os("RDB_FIND_BREAKPOINTS").is_none_or(|v| v != "1"),
        check_at: None,
        checkpoint_probe: None,
        check_time: Duration::ZERO,
        final_count: None,
        counter_at: None,
        exec_while_counting: false,
    }));
    let mut replay = opts.replay.clone();
    replay.echo_output = false;
    let sites = Sites { addresses: addresses.clone(), hash, matches: Default::default(), shared: shared.clone() };
    let mut session = Session::start(&replay, sites)?;
    let process = opts.process.unwrap_or(session.root());
    session.set_focus(Some(process));
    shared.borrow_mut().focus = Some(process);
    shared.borrow_mut().halt = Some(session.interrupter());
    // A checkpoint at the start for `--then gdb` to go back to (the search takes its own).
    session.enable_history(None)?;
    if !session.has_process(process) {
        session.goto(0);
        match resume(&mut session)? {
            SessionStop::Reached { .. } => {}
            _ => {
                return Err(FindError::Usage(format!(
                    "process {process} never ran an executable in this recording (see `rdb info --events`)"
                )))
            }
        }
    }
    let bias = session.image().map(|i| i.load_bias).unwrap_or(0);
    let first = session.checkpoint()?;
    let mut search = Search {
        session,
        shared: shared.clone(),
        addresses,
        bias,
        armed: false,
        here: 0,
        checkpoints: BTreeMap::from([(0, first)]),
        interrupt: opts.interrupt,
        halted: None,
        backtraces: !opts.scan,
        counting: Duration::ZERO,
        check_checkpoints: None,
        checkpoint_checks: 0,
        checkpoint_passed: None,
        checkpoint_failed: None,
        count_started: std::time::Instant::now(),
        checkpoint_check_time: Duration::ZERO,
        stubs: false,
        with_stops: None,
        event_checkpoints: std::collections::HashSet::from([0]),
    };
    // Ctrl-C halts the replay at its next event, wherever it is.
    let forward = forward_interrupt(opts.interrupt, search.session.interrupter());
    let result = if opts.scan { search.scan(opts.mode) } else { search.bisect(opts.mode, opts.between) };
    drop(forward);
    let mut outcome = result?;
    if search.armed {
        for a in search.addresses.clone() {
            let _ = search.session.remove_breakpoint(a.wrapping_add(search.bias));
        }
    }
    outcome.region = region;
    outcome.region_at = region_at;
    outcome.probes = shared.borrow().probes;
    outcome.cpus = 1;
    outcome.counting = search.counting;
    outcome.checkpoint_checks = search.checkpoint_checks;
    outcome.counted_with_stops = search.with_stops.clone();
    outcome.session = Some(search.session);
    Ok(outcome)
}

/// The region `choice` names, with where it is written (`file:line`) and its file.
fn choose_region(
    functions: &rdb_descriptors::FunctionDescriptors,
    choice: &RegionChoice,
) -> Result<(u32, String, PathBuf), FindError> {
    let at = |f: &rdb_descriptors::FunctionDescriptor| format!("{}:{}", f.begin.file.display(), f.begin.line);
    let list = || {
        functions.functions.iter().map(|f| format!("  region {} at {}", f.region, at(f))).collect::<Vec<_>>().join("\n")
    };
    let found = match choice {
        RegionChoice::Only => {
            if functions.functions.len() != 1 {
                return Err(FindError::Usage(format!(
                    "the binary has {} regions: name one with --region ID or --at FILE:LINE:\n{}",
                    functions.functions.len(),
                    list()
                )));
            }
            functions.functions.first()
        }
        RegionChoice::Id(id) => functions.functions.iter().find(|f| f.region == *id),
        RegionChoice::At { file, line } => functions
            .functions
            .iter()
            .find(|f| f.begin.line == *line && (f.begin.file.ends_with(file) || file.ends_with(&f.begin.file))),
    };
    let f = found.ok_or_else(|| {
        let what = match choice {
            RegionChoice::Id(id) => format!("no region {id}"),
            RegionChoice::At { file, line } => format!("no region begins at {}:{line}", file.display()),
            RegionChoice::Only => "no region".to_string(),
        };
        FindError::Usage(format!("{what} in the binary; its regions:\n{}", list()))
    })?;
    Ok((f.region, at(f), f.begin.file.clone()))
}

/// `⌈log2(n)⌉` (0 for n ≤ 1).
pub fn ceil_log2(n: u64) -> u64 {
    if n <= 1 {
        0
    } else {
        64 - u64::from((n - 1).leading_zeros())
    }
}

/// The most probes a bisection over `n` hits makes.
pub fn probe_bound(n: u64) -> u64 {
    match n {
        0 => 0,
        1 => 1,
        n => 2 + ceil_log2(n - 1),
    }
}

/// Resume the replay; the end of a trace cut short is an error: what the recording did after it
/// is unknown, and a count or check there would be silently short.
pub(crate) fn resume(session: &mut Session<'_>) -> Result<SessionStop, rdb_runtime::Error> {
    match session.resume(Resume::Continue)? {
        SessionStop::End => session.end_error().map_or(Ok(SessionStop::End), Err),
        stop => Ok(stop),
    }
}

impl Search {
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    fn focus(&self) -> Tid {
        self.session.focus().unwrap_or(self.session.root())
    }

    /// A replay error, or the observer's reason for stopping the replay.
    fn replay_error(&self, e: rdb_runtime::Error) -> FindError {
        self.shared.borrow_mut().error.take().unwrap_or(FindError::Replay(e))
    }

    /// The counting replay: every hit of the searched process up to `upto` (or the end), counted
    /// by the observer, which runs the region as `run` says; a checkpoint every
    /// [`CHECKPOINT_SPACING`] of replay. Returns the hits (`None` when interrupted).
    fn count(&mut self, run: Run, upto: Option<u64>) -> Result<Option<u64>, FindError> {
        {
            let mut s = self.shared.borrow_mut();
            s.counting = true;
            s.run = run;
            s.stop_at = upto;
            s.last_checkpoint = monotonic_coarse_ns();
            let progress = s.progress.clone();
            if let Ok(mut p) = progress.lock() {
                p.counting = true;
            };
        }
        let started = std::time::Instant::now();
        self.count_started = started;
        self.stubs = false;
        self.with_stops = Some(if run == Run::Every {
            "a scan runs the check at every hit".into()
        } else if !self.shared.borrow().want_stubs {
            "RDB_FIND_BREAKPOINTS=1".into()
        } else if self.session.hits_counted().is_some() {
            "the process had a count when the search began (a fork's copy of its parent's)".into()
        } else {
            "the region's instructions cannot carry a counting stub's jump (see `RDB_DEBUG=1`)".into()
        });
        if run != Run::Every && self.shared.borrow().want_stubs && self.session.hits_counted() == Some(0) {
            let target = if run == Run::First { 1 } else { upto.unwrap_or(u64::MAX) };
            self.session.set_hit_target(target)?;
            self.session.set_counting(true)?;
            self.stubs = true;
            self.with_stops = None;
            let counter_at = self.session.hit_count_address();
            let mut s = self.shared.borrow_mut();
            s.stubs = true;
            s.counter_at = counter_at;
            s.final_count = None;
        }
        let result = if self.stubs { self.count_with_stubs(upto) } else { self.count_inner(upto) };
        if self.stubs {
            self.session.set_counting(false)?;
            self.shared.borrow_mut().stubs = false;
        }
        self.counting += started.elapsed();
        let progress = {
            let mut s = self.shared.borrow_mut();
            s.counting = false;
            s.progress.clone()
        };
        if let Ok(mut p) = progress.lock() {
            p.counting = false;
        }
        result
    }

    fn count_inner(&mut self, upto: Option<u64>) -> Result<Option<u64>, FindError> {
        loop {
            let stop = resume(&mut self.session).map_err(|e| self.replay_error(e))?;
            let hits = self.shared.borrow().hits;
            let progress = self.shared.borrow().progress.clone();
            if let Ok(mut p) = progress.lock() {
                p.events = self.session.events_replayed();
            }
            match stop {
                SessionStop::ProcessExited { .. } | SessionStop::End => return Ok(Some(hits)),
                SessionStop::Interrupted { .. } => {
                    if let Some(answer) = self.ends_counting(hits, upto) {
                        return Ok(answer);
                    }
                    // A checkpoint is due: at the next hit, where the session halts while its
                    // breakpoints are there (a checkpoint at a hit is a place probes start
                    // from, with its hit count, and where a bisection's check can run).
                    self.arm(true)?;
                    self.shared.borrow_mut().last_checkpoint = monotonic_coarse_ns();
                }
                SessionStop::Breakpoint { tid, addr } if self.armed => {
                    let address = addr.wrapping_sub(self.bias);
                    if self.addresses.contains(&address) {
                        self.here = hits;
                        self.halted = Some((tid, address));
                        self.keep_checkpoint()?;
                        self.arm(false)?;
                        if self.check_at_checkpoint()? {
                            return Ok(Some(hits));
                        }
                        // The spacing is replay time: the check's own time does not count.
                        self.shared.borrow_mut().last_checkpoint = monotonic_coarse_ns();
                    }
                }
                _ => {}
            }
        }
    }

    /// At an interruption of the counting replay with `hits` so far, whether the count ends
    /// there: `Some(None)` when the user interrupted it, `Some(Some(hits))` at `upto`.
    fn ends_counting(&mut self, hits: u64, upto: Option<u64>) -> Option<Option<u64>> {
        if self.interrupted() {
            self.here = hits;
            return Some(None);
        }
        upto.is_some_and(|u| hits >= u).then_some(Some(hits))
    }

    /// [`Search::count_inner`] with counting stubs: the process counts its hits, the replay
    /// halts at events only (a checkpoint is due, the check after the last one came back, the
    /// count reached `upto`), and checkpoints are taken there (keyed by the hits before them).
    fn count_with_stubs(&mut self, upto: Option<u64>) -> Result<Option<u64>, FindError> {
        // No hit reaches the observer to say a checkpoint is due: a ticker halts the replay.
        let spacing = Arc::new(std::sync::atomic::AtomicU64::new(self.shared.borrow().spacing_ns));
        let _ticker = ticker(self.session.interrupter(), spacing.clone());
        loop {
            spacing.store(self.shared.borrow().spacing_ns, Ordering::Relaxed);
            let stop = resume(&mut self.session).map_err(|e| self.replay_error(e))?;
            let progress = self.shared.borrow().progress.clone();
            let hits = match stop {
                SessionStop::ProcessExited { .. } | SessionStop::End => {
                    let mut s = self.shared.borrow_mut();
                    return match s.final_count {
                        Some(n) => {
                            s.hits = n;
                            Ok(Some(n))
                        }
                        None if s.hits == 0 && s.seen.is_empty() => Ok(Some(0)),
                        None => Err(FindError::Usage(format!(
                            "process {} ended without an exit call (a signal?): its count of hits went with it; search with a stop at every hit (RDB_FIND_BREAKPOINTS=1)",
                            self.focus()
                        ))),
                    };
                }
                _ => self.session.hits_counted().unwrap_or(0),
            };
            if let Ok(mut p) = progress.lock() {
                p.events = self.session.events_replayed();
                p.hits = hits;
            }
            if self.shared.borrow().exec_while_counting {
                return Err(FindError::Usage(format!(
                    "process {} runs a new program (exec) during the counting replay, whose hits would be numbered from 1 again: search with a stop at every hit (RDB_FIND_BREAKPOINTS=1)",
                    self.focus()
                )));
            }
            self.shared.borrow_mut().hits = hits;
            let SessionStop::Interrupted { .. } = stop else { continue };
            if let Some(answer) = self.ends_counting(hits, upto) {
                return Ok(answer);
            }
            let checked = self.shared.borrow_mut().checkpoint_probe.take();
            if let Some(p) = checked {
                self.checkpoint_checks += 1;
                self.checkpoint_check_time = self.shared.borrow().check_time;
                if self.judge_checkpoint(p) {
                    return Ok(Some(hits));
                }
            }
            let due = {
                let s = self.shared.borrow();
                monotonic_coarse_ns().saturating_sub(s.last_checkpoint) >= s.spacing_ns
            };
            if due {
                self.here = hits;
                self.halted = None;
                if !self.checkpoints.contains_key(&hits) {
                    self.event_checkpoints.insert(hits);
                }
                self.keep_checkpoint()?;
                self.event_checkpoints.retain(|k| self.checkpoints.contains_key(k));
                // The check runs at the next hit (in the observer), while those checks
                // take at most a tenth of the counting replay's time.
                let first_seen = !self.shared.borrow().seen.is_empty();
                if self.check_checkpoints.is_some()
                    && first_seen
                    && self.checkpoint_check_time <= self.count_started.elapsed() / 10
                {
                    self.session.set_hit_target(hits + 1)?;
                    self.shared.borrow_mut().check_at = Some(hits + 1);
                }
                self.shared.borrow_mut().last_checkpoint = monotonic_coarse_ns();
            }
        }
    }

    /// The check at the hit after a checkpoint of the counting replay (with stubs): whether
    /// its outcome is not the wanted one (the counting stops).
    fn judge_checkpoint(&mut self, p: Probe) -> bool {
        let Some(mode) = self.check_checkpoints else { return false };
        let Some(first_ok) = self.shared.borrow().seen.first().map(|f| f.ok) else { return false };
        let wanted = match mode {
            Mode::FirstFalse | Mode::LastTrue => p.ok,
            Mode::Changes => p.ok == first_ok,
        };
        if wanted {
            self.checkpoint_passed = Some(p);
            false
        } else {
            self.checkpoint_failed = Some(p);
            true
        }
    }

    /// At a checkpoint of the counting replay of a bisection (halted at hit `self.here`), runs
    /// the check; returns whether its outcome is not the wanted one (the counting stops there:
    /// the answer lies between the last checkpoint whose check had it and this one).
    fn check_at_checkpoint(&mut self) -> Result<bool, FindError> {
        let Some(mode) = self.check_checkpoints else { return Ok(false) };
        let first_ok = match self.shared.borrow().seen.first() {
            Some(p) if self.here > 1 => p.ok,
            _ => return Ok(false),
        };
        // A slow check is run at fewer checkpoints: at most a tenth of the counting replay's
        // time goes to these checks (the answer does not depend on where they ran).
        if self.checkpoint_check_time > self.count_started.elapsed() / 10 {
            return Ok(false);
        }
        let started = std::time::Instant::now();
        let p = self.probe(false)?;
        self.checkpoint_check_time += started.elapsed();
        self.checkpoint_checks += 1;
        let wanted = match mode {
            Mode::FirstFalse | Mode::LastTrue => p.ok,
            Mode::Changes => p.ok == first_ok,
        };
        if wanted {
            self.checkpoint_passed = Some(p);
            Ok(false)
        } else {
            self.checkpoint_failed = Some(p);
            Ok(true)
        }
    }

    /// Make hits halt (the session's breakpoints at the region's addresses), or not.
    fn arm(&mut self, on: bool) -> Result<(), FindError> {
        if self.armed == on {
            return Ok(());
        }
        for a in self.addresses.clone() {
            let at = a.wrapping_add(self.bias);
            if on {
                self.session.set_breakpoint(at)?;
            } else {
                self.session.remove_breakpoint(at)?;
            }
        }
        self.armed = on;
        Ok(())
    }

    /// Run the region at the current halt (hit `self.here`); `counted`: a probe of the search
    /// (not a second look at a hit already checked).
    fn probe(&mut self, counted: bool) -> Result<Probe, FindError> {
        let (tid, address) = self.halted.expect("halted at a hit");
        let view = self.session.thread(tid)?;
        let mut shared = self.shared.borrow_mut();
        let mut p = shared.check(self.here, tid, address, &view)?;
        if !counted {
            shared.probes -= 1;
            if let Ok(mut g) = shared.progress.lock() {
                g.probes = shared.probes;
            }
        }
        p.event = self.session.threads().iter().find(|t| t.tid == tid).map_or(0, |t| t.stretch);
        Ok(p)
    }

    /// Keep a checkpoint here (after `self.here` hits), thinning the older ones past the limit.
    fn keep_checkpoint(&mut self) -> Result<(), FindError> {
        if self.checkpoints.contains_key(&self.here) {
            return Ok(());
        }
        let id = self.session.checkpoint()?;
        self.checkpoints.insert(self.here, id);
        let counting = self.shared.borrow().counting;
        if counting && self.checkpoints.len() > MAX_CHECKPOINTS {
            // Every other one goes (never the first), and they come half as often: they stay
            // evenly spread over the replay, whatever its length.
            let keys: Vec<u64> = self.checkpoints.keys().copied().collect();
            for (i, k) in keys.iter().enumerate() {
                if i % 2 == 1 {
                    if let Some(id) = self.checkpoints.remove(k) {
                        self.session.delete_checkpoint(id);
                    }
                }
            }
            self.shared.borrow_mut().spacing_ns *= 2;
        }
        Ok(())
    }

    /// Forget checkpoints the search will not need: after `hi`, and before the last one at or
    /// before `lo`.
    fn forget_outside(&mut self, lo: u64, hi: u64) {
        let keep_from = self.checkpoints.range(..=lo).next_back().map_or(0, |(k, _)| *k);
        let gone: Vec<u64> = self.checkpoints.keys().copied().filter(|&k| k < keep_from || k > hi).collect();
        for k in gone {
            if let Some(id) = self.checkpoints.remove(&k) {
                self.session.delete_checkpoint(id);
            }
        }
    }

    /// Halt at hit `k`, going there from the latest checkpoint before it: its point is named
    /// from what the counting replay saw (the thread, its stretch, the arrivals at the address
    /// since the stretch began or since the checkpoint), and the session replays quietly to it,
    /// the arrivals on the way counted without halting.
    fn goto_hit(&mut self, k: u64) -> Result<bool, FindError> {
        if self.stubs {
            return self.goto_hit_halting(k);
        }
        let (&at, &id) = self.checkpoints.range(..=k).next_back().expect("a checkpoint at hit 0");
        let (target, address) = {
            let s = self.shared.borrow();
            if k == 0 || k > s.hits {
                return Ok(false);
            }
            let run = s.runs[s.runs.partition_point(|r| r.first <= k) - 1];
            let address = s.address_of(k);
            let base = match self.session.checkpoints().get(&id).and_then(|c| c.position()) {
                Some(Position::InStretch { tid, stretch, moves })
                    if at >= run.first && *tid == run.tid && *stretch == run.stretch =>
                {
                    Some(moves.clone())
                }
                _ => None,
            };
            let from = if base.is_some() { at + 1 } else { run.first };
            let count = (from..=k).filter(|&j| s.address_of(j) == address).count() as u64;
            let mut moves = base.unwrap_or_default();
            if count > 0 {
                moves.push(Move::Hit { addr: address.wrapping_add(self.bias), count });
            }
            (Position::InStretch { tid: run.tid, stretch: run.stretch, moves }, address)
        };
        self.session.seek(&target)?;
        self.shared.borrow_mut().host.invalidate_mappings();
        self.here = k;
        self.halted = Some((target.tid(), address));
        Ok(true)
    }

    /// Halt at hit `k` after a counting replay with stubs: from the latest checkpoint before it
    /// (one at an event comes before the hit after its key; one at a hit is halted there), the
    /// session's breakpoints at the region's addresses halt at each hit of the searched
    /// process, counted up to `k`.
    fn goto_hit_halting(&mut self, k: u64) -> Result<bool, FindError> {
        if k == 0 || k > self.shared.borrow().hits {
            return Ok(false);
        }
        let (&at, &id) = self
            .checkpoints
            .range(..=k)
            .rev()
            .find(|(key, _)| **key < k || !self.event_checkpoints.contains(key))
            .expect("a checkpoint at hit 0");
        self.session.restore(id)?;
        self.shared.borrow_mut().host.invalidate_mappings();
        self.arm(true)?;
        let mut here = at;
        if at == k {
            let tid = self.session.halted_thread().ok_or_else(|| lost(k))?;
            let rip = rdb_tracee::Target::regs(&self.session.thread(tid)?).rip;
            self.here = k;
            self.halted = Some((tid, rip.wrapping_sub(self.bias)));
            return Ok(true);
        }
        loop {
            match resume(&mut self.session)? {
                SessionStop::Breakpoint { tid, addr } if self.addresses.contains(&addr.wrapping_sub(self.bias)) => {
                    here += 1;
                    if here == k {
                        self.here = k;
                        self.halted = Some((tid, addr.wrapping_sub(self.bias)));
                        return Ok(true);
                    }
                }
                SessionStop::ProcessExited { .. } | SessionStop::End => return Ok(false),
                _ => {}
            }
        }
    }

    /// Probe hit `k` (from checkpoints), keeping a checkpoint there.
    fn probe_hit(&mut self, k: u64, counted: bool) -> Result<Option<Probe>, FindError> {
        if !self.goto_hit(k)? {
            return Ok(None);
        }
        let probe = self.probe(counted)?;
        self.keep_checkpoint()?;
        Ok(Some(probe))
    }

    fn bisect(&mut self, mode: Mode, between: Option<(u64, u64)>) -> Result<FindOutcome, FindError> {
        let mut outcome = empty_outcome();
        let wanted = |p: &Probe, first_ok: bool| match mode {
            Mode::FirstFalse | Mode::LastTrue => p.ok,
            Mode::Changes => p.ok == first_ok,
        };
        let (mut lo, mut hi, first_ok);
        let mut best: BTreeMap<u64, Probe> = BTreeMap::new();
        match between {
            Some((l, h)) => {
                if l == 0 || h <= l {
                    return Err(FindError::Usage(format!("--between {l} {h}: needs 1 <= LO < HI")));
                }
                let Some(hits) = self.count(Run::Count, Some(h))? else {
                    outcome.interrupted = Some(Some((l, h)));
                    return Ok(outcome);
                };
                outcome.hits = hits;
                outcome.probe_bound = ceil_log2(h - l) + u64::from(mode == Mode::Changes);
                if hits < h {
                    return Err(FindError::Usage(format!("--between {l} {h}: the region has only {hits} hits")));
                }
                // Resumed: `lo` was seen to pass and `hi` to fail.
                (lo, hi) = (l, h);
                first_ok = mode != Mode::Changes || self.probe_hit(1, true)?.ok_or_else(|| lost(1))?.ok;
            }
            None => {
                // The checkpoints' checks need no backtrace (the answer is probed again).
                self.check_checkpoints = Some(mode);
                self.shared.borrow_mut().host.set_check_backtraces(false);
                let counted = self.count(Run::First, None);
                self.check_checkpoints = None;
                self.shared.borrow_mut().host.set_check_backtraces(self.backtraces);
                let Some(hits) = counted? else {
                    outcome.interrupted = Some(None);
                    outcome.hits = self.here;
                    return Ok(outcome);
                };
                outcome.hits = hits;
                outcome.probe_bound = probe_bound(hits);
                let progress = self.shared.borrow().progress.clone();
                if let Ok(mut p) = progress.lock() {
                    p.probes_estimated = Some(probe_bound(hits));
                }
                let first = self.shared.borrow().seen.first().cloned();
                let Some(first) = first else {
                    outcome.verdict = format!("the region was never reached in process {}", self.focus());
                    return Ok(outcome);
                };
                first_ok = first.ok;
                if mode != Mode::Changes && !first.ok {
                    outcome.verdict = match mode {
                        Mode::LastTrue => "the check fails at hit 1 already: it never holds".into(),
                        _ => "the check fails from the first hit".into(),
                    };
                    if mode == Mode::FirstFalse {
                        outcome.answer = Some(self.answer_at(first, true)?);
                    }
                    return Ok(outcome);
                }
                if let Some(failed) = self.checkpoint_failed.take() {
                    // The counting stopped at a checkpoint past the change: the answer lies
                    // between the last checkpoint that had hit 1's outcome (or hit 1) and it.
                    outcome.counted_part = true;
                    let passed = self.checkpoint_passed.take().unwrap_or(first);
                    (lo, hi) = (passed.hit, failed.hit);
                    best.insert(lo, passed);
                    best.insert(hi, failed);
                } else {
                    if hits == 1 {
                        outcome.verdict = "the region has one hit: the check holds there".into();
                        if mode == Mode::LastTrue {
                            outcome.answer = Some(self.answer_at(first, true)?);
                        }
                        return Ok(outcome);
                    }
                    let last = self.probe_hit(hits, true)?.ok_or_else(|| lost(hits))?;
                    if wanted(&last, first_ok) {
                        outcome.verdict = match mode {
                        Mode::FirstFalse => format!(
                            "the check holds at hit 1 and at the last hit ({hits}): no failure a bisection can see (it assumes the check fails for good once it fails; --scan checks every hit)"
                        ),
                        Mode::LastTrue => "the check holds up to the last hit".into(),
                        Mode::Changes => format!(
                            "the check {} at hit 1 and at the last hit ({hits}): no change a bisection can see (--scan lists every one)",
                            if first_ok { "holds" } else { "fails" }
                        ),
                    };
                        if mode == Mode::LastTrue {
                            outcome.answer = Some(last);
                        }
                        return Ok(outcome);
                    }
                    best.insert(1, first);
                    best.insert(hits, last);
                    (lo, hi) = (1, hits);
                }
            }
        }
        self.forget_outside(lo, hi);
        let progress = self.shared.borrow().progress.clone();
        if let Ok(mut p) = progress.lock() {
            p.probes_estimated = Some(p.probes + ceil_log2(hi - lo));
        }
        while hi - lo > 1 {
            if self.interrupted() {
                outcome.interrupted = Some(Some((lo, hi)));
                return Ok(outcome);
            }
            let mid = lo + (hi - lo) / 2;
            let p = self.probe_hit(mid, true)?.ok_or_else(|| lost(mid))?;
            if wanted(&p, first_ok) {
                lo = mid;
            } else {
                hi = mid;
            }
            best.insert(mid, p);
            self.forget_outside(lo, hi);
        }
        let answer_hit = if mode == Mode::LastTrue { lo } else { hi };
        let answer = match best.remove(&answer_hit) {
            Some(p) => self.answer_at(p, true)?,
            None => self.probe_hit(answer_hit, true)?.ok_or_else(|| lost(answer_hit))?,
        };
        outcome.verdict = match mode {
            Mode::FirstFalse => format!("first failing hit: {answer_hit}"),
            Mode::LastTrue => format!("last hit where the check holds: {answer_hit}"),
            Mode::Changes => format!("the check's outcome changes at hit {answer_hit}"),
        };
        outcome.answer = Some(answer);
        Ok(outcome)
    }

    /// The answer `p`, with the replay halted at its hit for `--then gdb`; a probe of the
    /// counting replay is looked at again there for its event (and `backtrace`).
    fn answer_at(&mut self, p: Probe, backtrace: bool) -> Result<Probe, FindError> {
        let complete = p.event != EVENT_UNKNOWN && (!backtrace || !p.backtrace.is_empty());
        if complete && self.here == p.hit && self.halted.is_some() {
            return Ok(p);
        }
        self.shared.borrow_mut().host.set_check_backtraces(backtrace);
        let again = self.probe_hit(p.hit, false);
        self.shared.borrow_mut().host.set_check_backtraces(self.backtraces);
        let again = again?.ok_or_else(|| lost(p.hit))?;
        if again.ok != p.ok {
            return Err(lost(p.hit));
        }
        Ok(again)
    }

    /// A linear scan: the check at every hit, in one replay (with checkpoints, from which the
    /// changes found are visited again for their events, and the answer for its backtrace).
    fn scan(&mut self, mode: Mode) -> Result<FindOutcome, FindError> {
        let mut outcome = empty_outcome();
        let Some(hits) = self.count(Run::Every, None)? else {
            outcome.interrupted = Some(None);
            outcome.hits = self.here;
            return Ok(outcome);
        };
        outcome.hits = hits;
        let (seen, last_true) = {
            let s = self.shared.borrow();
            (s.seen.clone(), s.last_true.clone())
        };
        let first_ok = seen.first().map(|p| p.ok);
        let answer = match mode {
            Mode::FirstFalse => seen.iter().find(|p| !p.ok).cloned(),
            Mode::Changes => seen.get(1).cloned(),
            Mode::LastTrue => last_true,
        };
        outcome.verdict = match (&answer, mode) {
            (None, _) if first_ok.is_none() => format!("the region was never reached in process {}", self.focus()),
            (None, Mode::FirstFalse) => format!("the check holds at all {hits} hits"),
            (None, Mode::LastTrue) => "the check never holds".into(),
            (None, Mode::Changes) => format!("the check's outcome never changes in {hits} hits"),
            (Some(p), Mode::FirstFalse) => format!("first failing hit: {}", p.hit),
            (Some(p), Mode::LastTrue) => format!("last hit where the check holds: {}", p.hit),
            (Some(p), Mode::Changes) => format!("the check's outcome changes at hit {}", p.hit),
        };
        for p in seen {
            let again = self.answer_at(p, false)?;
            outcome.transitions.push(again);
        }
        if let Some(p) = answer {
            outcome.answer = Some(self.answer_at(p, true)?);
        }
        Ok(outcome)
    }
}

fn lost(hit: u64) -> FindError {
    FindError::Usage(format!(
        "the replay did not reach hit {hit} again as it did before (please report: replay is not exact)"
    ))
}

fn empty_outcome() -> FindOutcome {
    FindOutcome {
        region: 0,
        region_at: String::new(),
        hits: 0,
        answer: None,
        verdict: String::new(),
        probes: 0,
        probe_bound: 0,
        interrupted: None,
        transitions: Vec::new(),
        cpus: 1,
        counting: Duration::ZERO,
        checkpoint_checks: 0,
        counted_part: false,
        counted_with_stops: None,
        session: None,
    }
}

/// `FILE:LINE` as `--at` takes it.
pub fn parse_at(text: &str) -> Option<RegionChoice> {
    let (file, line) = text.rsplit_once(':')?;
    Some(RegionChoice::At { file: Path::new(file).to_path_buf(), line: line.parse().ok()? })
}

/// A thread that halts the replay every `spacing` nanoseconds (the counting replay with stubs
/// takes its checkpoints at those halts), until dropped.
fn ticker(halt: Arc<AtomicBool>, spacing: Arc<std::sync::atomic::AtomicU64>) -> Background {
    Background::spawn(move |done| {
        let mut slept = 0;
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
            slept += 10_000_000;
            if slept >= spacing.load(Ordering::Relaxed) {
                slept = 0;
                halt.store(true, Ordering::SeqCst);
            }
        }
    })
}

/// A thread that turns the user's Ctrl-C (`user`, set by the command's signal handler) into
/// a halt of the replay at its next event, until dropped.
pub(crate) fn forward_interrupt(user: &'static AtomicBool, session_interrupt: Arc<AtomicBool>) -> Background {
    Background::spawn(move |done| {
        while !done.load(Ordering::Relaxed) {
            if user.load(Ordering::Relaxed) {
                session_interrupt.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// A helper thread told to stop (its `done` flag) and joined when dropped.
pub(crate) struct Background {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    fn spawn(body: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> Background {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        Background { done, thread: Some(std::thread::spawn(move || body(flag))) }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_bound_is_two_plus_the_bisection() {
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(9_999), 14);
        assert_eq!(probe_bound(1), 1);
        assert_eq!(probe_bound(2), 2);
        assert_eq!(probe_bound(10_000), 16);
        assert_eq!(probe_bound(100_000), 19);
        assert_eq!(probe_bound(1_000_000), 22);
    }

    #[test]
    fn at_takes_file_and_line() {
        assert_eq!(parse_at("src/vm.rs:41"), Some(RegionChoice::At { file: "src/vm.rs".into(), line: 41 }));
        assert_eq!(parse_at("src/vm.rs"), None);
    }
}
