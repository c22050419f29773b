//! Temporal search (`rdb find`): where in the replay a region's check (`rdb_check!`, C's
//! `rdb_check`) starts failing, by binary search over the region's hits.
//!
//! The region's hits are numbered from 1 in program order (the replay's order, the same in every
//! replay). A *probe* runs the region's debug function at one hit and reads its checks (the
//! region passes when all its checks hold). The search:
//!
//! 1. one replay counts the hits, with a breakpoint at the region's code locations (the session
//!    halts at each), probing hit 1 on the way and taking a checkpoint at a hit every
//!    [`CHECKPOINT_SPACING`] of replay (at most [`MAX_CHECKPOINTS`], thinned like the session's
//!    history);
//! 2. probes hit N (the last);
//! 3. bisects between a passing and a failing hit: each probe restores the latest checkpoint at
//!    or before its hit (or goes on from where the replay is, when that is closer), replays up
//!    to the hit counting halts, runs the region, and takes a checkpoint there: the interval
//!    left to search always starts at a checkpoint, so later probes replay less and less.
//!
//! So a search makes at most `2 + ⌈log2(N−1)⌉` probes. The check is assumed monotonic (it holds,
//! then fails for good); `scan` runs it at every hit instead, in one replay, and reports every
//! transition. A check must read the program's state only: debug-only statics are not rewound
//! between probes, and a probe skips the hits between its checkpoint and its hit.
//!
//! Probes run one after another on one CPU: a checkpoint's frozen copies are traced by the
//! thread that made them, and running probes in parallel would need them detached and attached
//! in other tracer threads (see ARCHITECTURE, "The replay session").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdb_host::{Check, DebugHost, HostOptions};
use rdb_runtime::trace::Tid;
use rdb_runtime::{NoObserver, ReplayOptions, Resume, Session, SessionStop};

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

/// The search's state over one replay session.
struct Search {
    session: Session<'static>,
    host: DebugHost,
    region: u32,
    region_at: String,
    file: PathBuf,
    /// Module-relative code addresses of the region.
    addresses: Vec<u64>,
    bias: u64,
    /// Hits replayed so far in the current replay (the halt is at hit `here` when halted at one).
    here: u64,
    /// Checkpoints by the hit they were taken at (0: before the first hit).
    checkpoints: BTreeMap<u64, u32>,
    probes: u64,
    progress: Arc<Mutex<FindProgress>>,
    interrupt: &'static AtomicBool,
    /// The halt of the current hit.
    halted: Option<(Tid, u64)>,
    backtraces: bool,
}

/// Runs a search (see the module docs).
pub fn find(opts: FindOptions) -> Result<FindOutcome, FindError> {
    let (_, functions) = crate::check_binary(&opts.replay.trace_dir, &opts.binary)?;
    let (region, region_at, file) = choose_region(&functions, &opts.region)?;
    let null = std::fs::File::create("/dev/null").map_err(FindError::Io)?;
    // Region output would come in probe order: the search shows its answer only.
    let host = DebugHost::for_binary(&opts.binary, HostOptions { stdout: Some(null), ..HostOptions::default() })?;
    let addresses: Vec<u64> =
        host.code_locations().into_iter().filter(|(_, ids)| ids.contains(&region)).map(|(a, _)| a).collect();
    if addresses.is_empty() {
        return Err(FindError::Usage(format!("region {region} ({region_at}) has no code location in the binary")));
    }
    let mut replay = opts.replay.clone();
    replay.echo_output = false;
    let mut session = Session::start(&replay, NoObserver)?;
    let process = opts.process.unwrap_or(session.root());
    session.set_focus(Some(process));
    // A checkpoint at the start for `--then gdb` to go back to (the search takes its own).
    session.enable_history(None)?;
    if !session.has_process(process) {
        session.goto(0);
        match session.resume(Resume::Continue)? {
            SessionStop::Reached { .. } => {}
            _ => {
                return Err(FindError::Usage(format!(
                    "process {process} never ran an executable in this recording (see `rdb info --events`)"
                )))
            }
        }
    }
    let bias = session.image().map(|i| i.load_bias).unwrap_or(0);
    for a in &addresses {
        session.set_breakpoint(a.wrapping_add(bias))?;
    }
    let first = session.checkpoint()?;
    let mut search = Search {
        session,
        host,
        region,
        region_at: region_at.clone(),
        file,
        addresses,
        bias,
        here: 0,
        checkpoints: BTreeMap::from([(0, first)]),
        probes: 0,
        progress: opts.progress.clone(),
        interrupt: opts.interrupt,
        halted: None,
        backtraces: !opts.scan,
    };
    search.host.set_check_backtraces(search.backtraces);
    // Ctrl-C halts a replay in a stretch without hits at its next event.
    let session_interrupt = search.session.interrupter();
    let user = opts.interrupt;
    let done = Arc::new(AtomicBool::new(false));
    let done_watch = done.clone();
    let watcher = std::thread::spawn(move || {
        while !done_watch.load(Ordering::Relaxed) {
            if user.load(Ordering::Relaxed) {
                session_interrupt.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let result = if opts.scan { search.scan(opts.mode) } else { search.bisect(opts.mode, opts.between) };
    done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let mut outcome = result?;
    for a in search.addresses.clone() {
        let _ = search.session.remove_breakpoint(a.wrapping_add(search.bias));
    }
    outcome.region = region;
    outcome.region_at = region_at;
    outcome.probes = search.probes;
    outcome.cpus = 1;
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

impl Search {
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    fn progress(&self, f: impl FnOnce(&mut FindProgress)) {
        if let Ok(mut p) = self.progress.lock() {
            f(&mut p);
        }
    }

    /// Run to the next hit of the region (`None`: the process ended or the search was
    /// interrupted).
    fn next_hit(&mut self) -> Result<Option<(Tid, u64)>, FindError> {
        loop {
            if self.interrupted() {
                return Ok(None);
            }
            match self.session.resume(Resume::Continue)? {
                SessionStop::Breakpoint { tid, addr } => {
                    let address = addr.wrapping_sub(self.bias);
                    if self.addresses.contains(&address) {
                        self.here += 1;
                        self.halted = Some((tid, address));
                        return Ok(Some((tid, address)));
                    }
                }
                SessionStop::ProcessExited { .. } | SessionStop::End => {
                    self.halted = None;
                    return Ok(None);
                }
                SessionStop::Interrupted { .. } => {}
                _ => {}
            }
        }
    }

    /// Run the region at the current halt (hit `self.here`).
    fn probe(&mut self) -> Result<Probe, FindError> {
        let (tid, address) = self.halted.expect("halted at a hit");
        let hit = self.here;
        let failed = |what: String| FindError::Probe { region: self.region, at: self.region_at.clone(), hit, what };
        let view = self.session.thread(tid)?;
        self.host.invalidate();
        let call = self.host.invoke(self.region, address, &view)?;
        self.probes += 1;
        self.progress(|p| p.probes += 1);
        let checks = self.host.take_checks();
        if !call.is_clean() {
            return Err(failed(format!("the region did not complete: {call}")));
        }
        if checks.is_empty() {
            return Err(failed(
                "the region made no check (rdb_check!(cond, ..) in Rust, rdb_check(cond, ..) in C) at this hit".into(),
            ));
        }
        let event = self.session.threads().iter().find(|t| t.tid == tid).map_or(0, |t| t.stretch);
        let shown: &Check = checks.iter().find(|c| !c.ok).unwrap_or(&checks[0]);
        let message = if shown.message.is_empty() { shown.condition.clone() } else { shown.message.clone() };
        Ok(Probe {
            hit,
            event,
            thread: tid,
            ok: checks.iter().all(|c| c.ok),
            file: self.file.clone(),
            line: shown.line,
            message,
            backtrace: shown.backtrace.clone(),
        })
    }

    /// Keep a checkpoint at the current hit, thinning the older ones past the limit.
    fn checkpoint_here(&mut self) -> Result<(), FindError> {
        if self.checkpoints.contains_key(&self.here) {
            return Ok(());
        }
        let id = self.session.checkpoint()?;
        self.checkpoints.insert(self.here, id);
        if self.checkpoints.len() > MAX_CHECKPOINTS {
            // The older half keeps every other one (never the first).
            let keys: Vec<u64> = self.checkpoints.keys().copied().collect();
            let half = keys.len() / 2;
            for (i, k) in keys.iter().enumerate().take(half) {
                if i % 2 == 1 {
                    if let Some(id) = self.checkpoints.remove(k) {
                        self.session.delete_checkpoint(id);
                    }
                }
            }
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

    /// Halt at hit `k`: from the replay's current point when no checkpoint is closer, else from
    /// the latest checkpoint at or before it.
    fn goto_hit(&mut self, k: u64) -> Result<bool, FindError> {
        let (&at, &id) = self.checkpoints.range(..=k).next_back().expect("a checkpoint at hit 0");
        let here_usable = self.halted.is_some() && self.here <= k && self.here >= at;
        if !here_usable {
            self.session.restore(id)?;
            self.host.invalidate_mappings();
            self.here = at;
            self.halted = if at == 0 { None } else { self.session.halted_thread().map(|t| (t, self.halted_address())) };
        }
        while self.here < k {
            if self.next_hit()?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The module-relative address the halted thread is at.
    fn halted_address(&self) -> u64 {
        use rdb_tracee::Target;
        self.session.regs().rip.wrapping_sub(self.bias)
    }

    /// Probe hit `k` (from checkpoints), keeping a checkpoint there.
    fn probe_hit(&mut self, k: u64) -> Result<Option<Probe>, FindError> {
        if !self.goto_hit(k)? {
            return Ok(None);
        }
        let probe = self.probe()?;
        self.checkpoint_here()?;
        Ok(Some(probe))
    }

    /// The counting pass: every hit up to `upto` (or the end), hit 1 probed, checkpoints on the
    /// way. Returns the hits and hit 1's probe (`None` when interrupted).
    fn count(&mut self, upto: Option<u64>) -> Result<Option<(u64, Option<Probe>)>, FindError> {
        self.progress(|p| p.counting = true);
        let mut first = None;
        let mut last_checkpoint = Instant::now();
        loop {
            if upto.is_some_and(|u| self.here >= u) {
                break;
            }
            match self.next_hit()? {
                Some(_) => {
                    if self.here == 1 && upto.is_none() {
                        first = Some(self.probe()?);
                    }
                    if last_checkpoint.elapsed() >= CHECKPOINT_SPACING {
                        self.checkpoint_here()?;
                        last_checkpoint = Instant::now();
                    }
                    let (hits, events) = (self.here, self.session.events_replayed());
                    self.progress(|p| {
                        p.hits = hits;
                        p.events = events;
                    });
                }
                None if self.interrupted() => return Ok(None),
                None => break,
            }
        }
        self.progress(|p| p.counting = false);
        Ok(Some((self.here, first)))
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
                let Some((hits, _)) = self.count(Some(h))? else {
                    outcome.interrupted = Some(Some((l, h)));
                    return Ok(outcome);
                };
                outcome.hits = hits;
                outcome.probe_bound = ceil_log2(h - l) + u64::from(mode == Mode::Changes);
                if hits < h {
                    return Err(FindError::Usage(format!("--between {l} {h}: the region has only {hits} hits")));
                }
                // Resumed: `lo` was seen to pass and `hi` to fail; the outcome at hit 1 is that of
                // `lo` by the same token.
                (lo, hi) = (l, h);
                first_ok = mode != Mode::Changes || {
                    let p = self.probe_hit(1)?.expect("hit 1 exists");
                    p.ok
                };
            }
            None => {
                let Some((hits, first)) = self.count(None)? else {
                    outcome.interrupted = Some(None);
                    outcome.hits = self.here;
                    return Ok(outcome);
                };
                outcome.hits = hits;
                outcome.probe_bound = probe_bound(hits);
                self.progress(|p| p.probes_estimated = Some(probe_bound(hits)));
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
                        outcome.answer = Some(self.answer_at(1, first)?);
                    }
                    return Ok(outcome);
                }
                if hits == 1 {
                    outcome.verdict = "the region has one hit: the check holds there".into();
                    if mode == Mode::LastTrue {
                        outcome.answer = Some(self.answer_at(1, first)?);
                    }
                    return Ok(outcome);
                }
                let last = self.probe_hit(hits)?.ok_or_else(|| lost(hits))?;
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
        self.forget_outside(lo, hi);
        self.progress(|p| {
            p.probes_estimated = Some(p.probes + ceil_log2(hi - lo));
        });
        while hi - lo > 1 {
            if self.interrupted() {
                outcome.interrupted = Some(Some((lo, hi)));
                return Ok(outcome);
            }
            let mid = lo + (hi - lo) / 2;
            let p = self.probe_hit(mid)?.ok_or_else(|| lost(mid))?;
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
            Some(p) => self.answer_at(answer_hit, p)?,
            None => {
                let p = self.probe_hit(answer_hit)?.ok_or_else(|| lost(answer_hit))?;
                self.answer_at(answer_hit, p)?
            }
        };
        outcome.verdict = match mode {
            Mode::FirstFalse => format!("first failing hit: {answer_hit}"),
            Mode::LastTrue => format!("last hit where the check holds: {answer_hit}"),
            Mode::Changes => format!("the check's outcome changes at hit {answer_hit}"),
        };
        outcome.answer = Some(answer);
        Ok(outcome)
    }

    fn focus(&self) -> Tid {
        self.session.focus().unwrap_or(self.session.root())
    }

    /// Leave the replay halted at hit `k` (whose probe is `p`) for `--then gdb`.
    fn answer_at(&mut self, k: u64, p: Probe) -> Result<Probe, FindError> {
        if self.here != k || self.halted.is_none() {
            self.goto_hit(k)?;
        }
        Ok(p)
    }

    /// A linear scan: the check at every hit, in one replay.
    fn scan(&mut self, mode: Mode) -> Result<FindOutcome, FindError> {
        let mut outcome = empty_outcome();
        let mut previous: Option<bool> = None;
        let mut first_ok = None;
        let mut answer: Option<Probe> = None;
        let mut last_true: Option<Probe> = None;
        loop {
            match self.next_hit()? {
                Some(_) => {
                    let p = self.probe()?;
                    let (hits, events) = (self.here, self.session.events_replayed());
                    self.progress(|g| {
                        g.hits = hits;
                        g.events = events;
                    });
                    let first = *first_ok.get_or_insert(p.ok);
                    if answer.is_none() {
                        let found = match mode {
                            Mode::FirstFalse => !p.ok,
                            Mode::Changes => p.ok != first,
                            Mode::LastTrue => false,
                        };
                        if found {
                            answer = Some(p.clone());
                        }
                    }
                    if p.ok {
                        last_true = Some(p.clone());
                    }
                    if previous != Some(p.ok) {
                        outcome.transitions.push(p.clone());
                        previous = Some(p.ok);
                    }
                }
                None if self.interrupted() => {
                    outcome.interrupted = Some(None);
                    outcome.hits = self.here;
                    return Ok(outcome);
                }
                None => break,
            }
        }
        outcome.hits = self.here;
        if mode == Mode::LastTrue {
            answer = last_true;
        }
        outcome.verdict = match (&answer, mode) {
            (None, _) if self.here == 0 => format!("the region was never reached in process {}", self.focus()),
            (None, Mode::FirstFalse) => format!("the check holds at all {} hits", self.here),
            (None, Mode::LastTrue) => "the check never holds".into(),
            (None, Mode::Changes) => format!("the check's outcome never changes in {} hits", self.here),
            (Some(p), Mode::FirstFalse) => format!("first failing hit: {}", p.hit),
            (Some(p), Mode::LastTrue) => format!("last hit where the check holds: {}", p.hit),
            (Some(p), Mode::Changes) => format!("the check's outcome changes at hit {}", p.hit),
        };
        if let Some(p) = &answer {
            // The backtrace of the answer, and the replay halted there for `--then gdb`.
            self.host.set_check_backtraces(true);
            let k = p.hit;
            let p = self.probe_hit(k)?.ok_or_else(|| lost(k))?;
            // A second look at a hit already checked: not a probe of the scan.
            self.probes -= 1;
            self.host.set_check_backtraces(self.backtraces);
            answer = Some(p);
        }
        outcome.answer = answer;
        Ok(outcome)
    }
}

fn lost(hit: u64) -> FindError {
    FindError::Usage(format!("the replay did not reach hit {hit} again (please report: replay is not exact)"))
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
        session: None,
    }
}

/// `FILE:LINE` as `--at` takes it.
pub fn parse_at(text: &str) -> Option<RegionChoice> {
    let (file, line) = text.rsplit_once(':')?;
    Some(RegionChoice::At { file: Path::new(file).to_path_buf(), line: line.parse().ok()? })
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
