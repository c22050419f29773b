//! The replayer: re-run a recorded execution from its trace.
//!
//! Mirrors [`crate::record`]. Each stop of a replayed process is matched against the next
//! event of the trace. Stops are handled strictly in the recorded global order: a process that
//! stops while the next event belongs to another one waits ("parked") until its turn. Emulated
//! syscalls are skipped (`orig_rax = -1`) and get their recorded result and memory; state
//! building ones run again and must give the recorded result. Any mismatch is a
//! [`Divergence`].

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::fmt;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;

use rdb_tracee::ptrace::{self, is_synchronous, si_code, SyscallStop, Wait};
use rdb_tracee::{debugreg, mem, procfs, this_process as sys, Pid};

use crate::cpuid;
use crate::displace::{self, StepOver};
use crate::interrupt::{self, PointKey};
use crate::observer::{BreakpointStop, ProcessImage, ReplayObserver};
use crate::point_stub::{self, Stub};
use crate::process;
use crate::session::{Debugger, Halt, HaltKind, Resume, Session, SessionStop};
use crate::share::{self, Units};
use crate::syscalls::{self, Mask, Policy, Sysno};
use crate::trace::{self, event::describe_status, files::ReplayFiles, Event, EventReader, MappedFile, Tid, Trace};
use crate::Error;

/// The kernel's code for a call it gave up because a signal came first, and runs again after
/// the signal (never seen by programs).
const ERESTARTNOINTR: i64 = -513;
mod pages;

/// What to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub trace_dir: PathBuf,
    /// Pin the replayer and the program to one CPU.
    pub pin_cpu: bool,
    /// Re-emit the recorded stdout/stderr output (on by default in the CLI).
    pub echo_output: bool,
}

/// How a replay went.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    pub events: u64,
    /// Raw wait status of the root process.
    pub exit_status: Option<i32>,
    pub breakpoint_hits: u64,
    /// Hits whose instruction could not be displaced or emulated and was single-stepped
    /// (a second stop; see the `displace` module).
    pub breakpoint_steps: u64,
}

/// The replay did something the recording did not.
#[derive(Debug, Clone)]
pub struct Divergence {
    /// Index of the trace event that did not match (0-based).
    pub index: u64,
    pub tid: Tid,
    pub pid: Pid,
    pub expected: String,
    pub actual: String,
    pub pc: u64,
    /// `file:line` (and function) of `pc`, when the executable has DWARF.
    pub location: Option<String>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "replay diverged from the recording at event {} (thread {}, pid {} now)",
            self.index, self.tid, self.pid
        )?;
        writeln!(f, "  expected: {}", self.expected)?;
        writeln!(f, "  actual:   {}", self.actual)?;
        write!(f, "  at pc {:#x}", self.pc)?;
        if let Some(loc) = &self.location {
            write!(f, " ({loc})")?;
        }
        Ok(())
    }
}

/// A stop that waits for its turn in the global order.
#[derive(Debug, Clone)]
pub(crate) enum Stop {
    Entry {
        nr: u64,
        args: [u64; 6],
        pc: u64,
    },
    Exit {
        ret: i64,
    },
    Fork {
        child: Pid,
    },
    /// `tsc`: the signal is the fault of an instruction rdb traps and emulates, not one of the
    /// program's.
    Signal {
        sig: i32,
        tsc: Option<Emulated>,
    },
    Gone {
        status: i32,
    },
    /// At the interruption point its next event names (see `interrupt`).
    Interrupt,
}

/// A trapped instruction whose fault stands for its emulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emulated {
    /// `rdtsc` (length 2) or `rdtscp` (length 3, true).
    Tsc(usize, bool),
    /// `cpuid` asking for this leaf and subleaf (see `cpuid`).
    Cpuid(u32, u32),
}

/// How the current syscall of a process is being replayed.
#[derive(Debug, Clone)]
enum Mode {
    Emulated,
    ReExecuted,
    /// A file mapping turned into an anonymous one; filled at exit.
    MappedFile(MappedFile),
    Exec,
    /// `rt_sigsuspend` run again with its recorded waking signal already sent: the kernel
    /// swaps the signal mask, delivers, and restores it exactly as it did while recording.
    Suspended,
    /// `exit`/`exit_group`: the process is leaving.
    Leaving,
}

/// A planted breakpoint: the byte the `int3` replaced, how to run its instruction, and who
/// wants it (the observer's regions, a debugger, or both).
#[derive(Debug, Clone)]
pub(crate) struct Breakpoint {
    pub(crate) orig: u8,
    over: StepOver,
    /// The observer asked for it: it is called at each hit.
    region: bool,
    /// A debugger asked for it: a hit in the debugged process halts the replay.
    pub(crate) user: bool,
    /// A counting site of the observer's (see `count_stub`): while the replay counts
    /// ([`Replayer::set_counting`]), a `jmp` to a stub replaces the `int3`.
    pub(crate) count: Option<crate::count_stub::Site>,
}

pub(crate) type Breakpoints = Rc<RefCell<BTreeMap<u64, Breakpoint>>>;

#[derive(Clone)]
pub(crate) struct Proc {
    pub(crate) pid: Pid,
    /// Recorded id of the thread group (process) the thread belongs to.
    pub(crate) group: Tid,
    /// Resumed into user code or into a re-executed syscall: while it is, no other thread of
    /// its group may be resumed into user code.
    pub(crate) user: bool,
    /// A new thread stopped at its first stop, waiting for its `ThreadStart` event.
    pub(crate) unstarted: bool,
    entry: Option<(u64, [u64; 6], Mode)>,
    /// Signal we injected and whose delivery stop we await.
    injecting: Option<i32>,
    pub(crate) breakpoints: Breakpoints,
    pub(crate) image: Option<ProcessImage>,
    killed: bool,
    /// Resumed and its next stop not collected yet (its registers cannot be read).
    pub(crate) running: bool,
    /// Region locations reached in the current stretch (for the high-water mark).
    pub(crate) region_hits: u64,
    /// The trace index of the event that last let the thread run user code (its *stretch*
    /// starts there; see `session`).
    pub(crate) stretch: u64,
    /// The auxiliary vector the program saw at its last exec (from the recorded initial stack).
    pub(crate) auxv: Vec<u8>,
    /// Per-thread kernel state a checkpoint must give a re-created thread, as the replayed
    /// syscalls set it: the `set_tid_address` / `CLONE_CHILD_CLEARTID` word, and the
    /// alternate signal stack (`stack_t` bytes).
    pub(crate) clear_tid: u64,
    pub(crate) altstack: Option<[u8; 24]>,
    /// The interruption point its next event names, whose pc is armed in debug register
    /// `interrupt::REPLAY_SLOT`.
    pub(crate) point: Option<PointKey>,
    /// The stub that runs the thread to its point without a stop per arrival, when one could
    /// be armed (else the point is found with the debug register).
    pub(crate) stub: Option<Stub>,
    /// The files the replay mapped as anonymous memory at offset 0 (start, end, file): the
    /// objects the dynamic loader mapped, whose code has no name in `/proc/PID/maps` here.
    pub(crate) objects: Vec<(u64, u64, PathBuf)>,
    /// The stack pointer at the entry of the `rt_sigreturn` it is in.
    pub(crate) sigreturn_sp: Option<u64>,
}

impl Proc {
    /// Not inside a syscall.
    pub(crate) fn entry_is_none(&self) -> bool {
        self.entry.is_none()
    }

    /// Waiting in `rt_sigsuspend` (or an interrupted call made one) under a temporary mask.
    pub(crate) fn is_suspended(&self) -> bool {
        matches!(self.entry, Some((_, _, Mode::Suspended)))
    }

    fn new(
        pid: Pid,
        group: Tid,
        user: bool,
        unstarted: bool,
        breakpoints: Breakpoints,
        image: Option<ProcessImage>,
    ) -> Proc {
        Proc {
            pid,
            group,
            user,
            unstarted,
            entry: None,
            injecting: None,
            breakpoints,
            image,
            killed: false,
            running: false,
            region_hits: 0,
            stretch: 0,
            auxv: Vec::new(),
            clear_tid: 0,
            altstack: None,
            point: None,
            stub: None,
            objects: Vec::new(),
            sigreturn_sp: None,
        }
    }
}

/// Events read ahead of the current position (needed to see a process's next event).
pub(crate) struct Events {
    reader: EventReader,
    /// Bumped at every event consumed and breakpoint hit (see `stall`).
    progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
    buf: VecDeque<Event>,
    pub(crate) index: u64,
    exhausted: bool,
    /// Each thread's last event consumed (its trace index).
    pub(crate) last: HashMap<Tid, u64>,
    /// Pass over `Cpuid` events: a trapped trace replayed where `cpuid` runs natively.
    skip_cpuid: bool,
}

impl Events {
    fn fill(&mut self, n: usize) -> Result<(), Error> {
        while self.buf.len() < n && !self.exhausted {
            match self.reader.next_event()? {
                Some(e) => self.buf.push_back(e),
                None => self.exhausted = true,
            }
        }
        Ok(())
    }
    fn head(&mut self) -> Result<Option<&Event>, Error> {
        self.fill(1)?;
        while self.skip_cpuid && matches!(self.buf.front(), Some(Event::Cpuid { .. })) {
            self.pop()?;
            self.fill(1)?;
        }
        Ok(self.buf.front())
    }
    fn pop(&mut self) -> Result<Event, Error> {
        self.fill(1)?;
        let ev = self.buf.pop_front().expect("pop after head");
        self.last.insert(ev.tid(), self.index);
        self.index += 1;
        self.progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(ev)
    }
    /// Go back (or forward) to trace index `index`: the next event is the one there.
    pub(crate) fn reset_to(&mut self, index: u64, last: HashMap<Tid, u64>) -> Result<(), Error> {
        self.reader.seek(index)?;
        self.buf.clear();
        self.index = index;
        self.exhausted = false;
        self.last = last;
        Ok(())
    }

    /// The event at trace index `index` if it is still ahead (read ahead as needed).
    pub(crate) fn ahead(&mut self, index: u64) -> Result<Option<&Event>, Error> {
        let Some(i) = index.checked_sub(self.index) else { return Ok(None) };
        self.fill(i as usize + 1)?;
        Ok(self.buf.get(i as usize))
    }

    /// The next event of `tid`, looking ahead (bounded).
    pub(crate) fn next_of(&mut self, tid: Tid) -> Result<Option<&Event>, Error> {
        Ok(self.next_of_indexed(tid)?.map(|(_, e)| e))
    }

    /// The `n`-th (0-based) upcoming event of `tid`.
    fn nth_of(&mut self, tid: Tid, n: usize) -> Result<Option<&Event>, Error> {
        let mut seen = 0;
        let mut i = 0;
        loop {
            self.fill(i + 1)?;
            match self.buf.get(i) {
                None => return Ok(None),
                Some(e) if e.tid() == tid => {
                    if seen == n {
                        return Ok(self.buf.get(i));
                    }
                    seen += 1;
                }
                Some(_) => {}
            }
            i += 1;
            if i > 100_000 {
                return Ok(None);
            }
        }
    }

    /// Like [`Events::next_of`], with the event's index in the trace.
    pub(crate) fn next_of_indexed(&mut self, tid: Tid) -> Result<Option<(u64, &Event)>, Error> {
        let mut i = 0;
        loop {
            self.fill(i + 1)?;
            match self.buf.get(i) {
                None => return Ok(None),
                Some(Event::Cpuid { .. }) if self.skip_cpuid => i += 1,
                Some(e) if e.tid() == tid => return Ok(self.buf.get(i).map(|e| (self.index + i as u64, e))),
                Some(_) => i += 1,
            }
            if i > 100_000 {
                return Ok(None);
            }
        }
    }
}

pub(crate) struct Replayer<'o> {
    pub(crate) ev: Events,
    pub(crate) procs: HashMap<Tid, Proc>,
    pub(crate) by_pid: HashMap<Pid, Tid>,
    pub(crate) parked: HashMap<Tid, Stop>,
    early_children: HashSet<Pid>,
    /// Which processes share memory: their threads take turns as one unit (see `share`).
    pub(crate) units: Units<Tid>,
    /// The replay's own copies of the files mapped `MAP_SHARED` (see `shared_mapping`).
    pub(crate) shared_files: crate::shared_map::SharedFiles,
    /// The files the trace names: its kept copies, else the originals, checked.
    files: ReplayFiles,
    pub(crate) observer: Box<dyn ReplayObserver + 'o>,
    echo: bool,
    pub(crate) root: Tid,
    root_status: Option<i32>,
    pub(crate) hits: u64,
    pub(crate) steps: u64,
    /// `RDB_DEBUG` set: log every stop (for debugging rdb itself).
    debug: bool,
    /// The recording was cut short: the replay ends early.
    ends_early: bool,
    /// What a debugger driving the replay asked for, and where it halted (see `session`).
    pub(crate) dbg: Debugger,
    /// This thread runs with the TSC disabled while it replays.
    pub(crate) tsc: Option<sys::TscDisabled>,
    /// Room for displaced instructions, per address space (its breakpoint table) and object.
    slots: HashMap<(usize, PathBuf), displace::Slots>,
    /// The observer's hardware watchpoints, per process (recorded id of its thread group).
    pub(crate) observer_watch: HashMap<Tid, [Option<debugreg::Watchpoint>; debugreg::SLOTS]>,
    /// The observer's page-protected watches, per process (see `pages`).
    pages: HashMap<Tid, pages::Pages>,
    /// Threads whose debug registers must be brought up to date at their next stop (they were
    /// running when a watchpoint changed).
    dr_stale: HashSet<Tid>,
    /// Threads stopped with `SIGSTOP` in user code while a checkpoint is taken.
    pub(crate) interrupted: HashSet<Tid>,
    /// How far output and regions went (kept across checkpoints and restarts).
    pub(crate) marks: Marks,
    /// Checkpoints the replayer takes by itself (see `reverse`).
    pub(crate) auto: crate::reverse::AutoCheckpoints,
    /// Ends a plain replay that stops making progress (see `stall`).
    stall: Option<crate::stall::StallWatch>,
    /// Room taken for point stubs, per address space (breakpoint table) and object, reused by
    /// its points (one armed at a time); and where each stub's `int3` leaves a thread.
    stub_slots: HashMap<(usize, PathBuf), u64>,
    stub_traps: HashSet<u64>,
    /// Where a counting stub's `int3` leaves a thread, with the site's address.
    count_traps: HashMap<u64, u64>,
    /// Counting sites count without a stop (their `jmp` is in place).
    counting: bool,
    /// `cpuid` is trapped in every replayed image and served from the trace.
    cpuid_trap: bool,
    /// With `cpuid_trap`: the trace index from which no `Cpuid` event remains, once known
    /// ([`cpuid::scan_last`]); each thread's faulting is turned off at its first syscall exit
    /// from there on.
    cpuid_done: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Threads (by pid) whose `cpuid` faulting was turned off (see `cpuid_done`).
    cpuid_released: HashSet<Pid>,
    /// Half-milliseconds the replay may still wait for the scan behind `cpuid_done`.
    cpuid_wait_left: u32,
}

/// The high-water mark of a replay that goes back and forth: the recorded output of events
/// before `echoed` was shown already, and each thread's region calls up to (stretch, count)
/// ran already. Going back replays them without showing or running them again.
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    pub(crate) echoed: u64,
    pub(crate) regions: HashMap<Tid, (u64, u64)>,
}

/// Replay a trace to its end.
pub fn replay(opts: &ReplayOptions, observer: &mut dyn ReplayObserver) -> Result<ReplayOutcome, Error> {
    let mut session = Session::start_watched(opts, observer)?;
    match session.resume(Resume::Continue) {
        Ok(SessionStop::End) => session.finish(),
        // Nothing is armed and no process is debugged: no other stop can come.
        Ok(other) => unreachable!("replay without a debugger stopped: {other:?}"),
        Err(e) => Err(session.r.stalled().unwrap_or(e)),
    }
}

impl<'o> Replayer<'o> {
    /// Open the trace, start the recorded program and set up its first image; the program is
    /// stopped before its first instruction.
    ///
    /// `watch_stalls`: a thread ends the replay when it stops making progress (see `stall`);
    /// not for a debugger's replay, which stands still while the debugger is halted.
    pub(crate) fn start(
        opts: &ReplayOptions,
        observer: Box<dyn ReplayObserver + 'o>,
        watch_stalls: bool,
    ) -> Result<Replayer<'o>, Error> {
        let trace = Trace::open(&opts.trace_dir)?;
        let ends_early = trace.ends_early();
        let differences = trace::machine_differences(trace.header());
        let cpuid_plan = cpuid::plan_replay(&trace)?;
        if !differences.is_empty() {
            eprintln!(
                "rdb: warning: this machine differs from the one the trace was recorded on:\n  {}\n  {} and re-executed calls run on this kernel, so the replay may diverge",
                differences.join("\n  "),
                cpuid::machine_note(&cpuid_plan)
            );
        }
        if let Some(w) = &cpuid_plan.warning {
            eprintln!("{w}");
        }
        let mut files = ReplayFiles::new(&trace);
        let recorded = match trace.summary() {
            Some(s) => std::time::Duration::from_millis(s.duration_ms),
            None => std::fs::metadata(trace.path().join(trace::EVENTS_FILE))
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(std::time::Duration::ZERO, |t| {
                    t.saturating_sub(std::time::Duration::from_secs(trace.header().started_unix))
                }),
        };
        // Spawned before this thread disables its TSC (the scan reads no clock).
        let cpuid_done = match cpuid_plan.trap {
            true => Some(cpuid::scan_last(trace.events()?)),
            false => None,
        };
        // Spawned before this thread disables its TSC (the watch thread only sleeps).
        let stall = watch_stalls.then(|| crate::stall::StallWatch::start(recorded));
        let progress = stall.as_ref().map_or_else(Default::default, |s| s.progress.clone());
        let mut ev = Events {
            reader: trace.events()?,
            progress,
            buf: VecDeque::new(),
            index: 0,
            exhausted: false,
            last: HashMap::new(),
            skip_cpuid: trace.header().cpuid_trapped && !cpuid_plan.trap,
        };
        let Some(Event::Start { tid, exe, argv, envp, .. }) = ev.head()?.cloned() else {
            if ends_early {
                // Cut short before its first complete chunk: nothing to replay.
                return Err(Error::EndsEarly { events: 0 });
            }
            return Err(trace::TraceError::Corrupt {
                path: trace.path().join(trace::EVENTS_FILE),
                offset: 0,
                why: "the trace does not begin with a start event".into(),
            }
            .into());
        };
        ev.pop()?;
        let mut exe = PathBuf::from(OsStr::from_bytes(&exe));
        if let Some(Event::Exec { blake3, .. }) = ev.head()? {
            // Run the trace's copy of the executable (see `apply_exec`).
            let blake3 = *blake3;
            exe = files.get(&exe, &blake3)?.path.clone();
        }
        if opts.pin_cpu {
            let _ = sys::pin_to_cpu(sys::current_cpu());
        }
        let _ = sys::become_subreaper();
        let mut cmd = Command::new(&exe);
        if let Some(a0) = argv.first() {
            cmd.arg0(OsStr::from_bytes(a0));
        }
        cmd.args(argv.iter().skip(1).map(|a| OsStr::from_bytes(a)));
        cmd.env_clear();
        for e in &envp {
            let pos = e.iter().position(|&b| b == b'=').unwrap_or(e.len());
            let (k, v) = e.split_at(pos);
            if !k.is_empty() {
                cmd.env(OsStr::from_bytes(k), OsStr::from_bytes(v.get(1..).unwrap_or(b"")));
            }
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: the closure only makes two async-signal-safe syscalls (see the callee).
        unsafe {
            cmd.pre_exec(ptrace::child_prepare_for_trace);
        }
        let child = cmd.spawn().map_err(|source| Error::Spawn { program: exe.display().to_string(), source })?;
        let pid = Pid::of(&child);
        match ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "waiting for the first stop"))? {
            Wait::Stopped { sig: libc::SIGTRAP, .. } => {}
            other => {
                return Err(Error::Spawn {
                    program: exe.display().to_string(),
                    source: std::io::Error::other(format!("unexpected first stop {other:?}")),
                })
            }
        }
        ptrace::set_options(pid, ptrace::TRACE_OPTIONS).map_err(Error::ptrace(pid, "setting options"))?;
        let mut r = Replayer {
            ev,
            procs: HashMap::new(),
            by_pid: HashMap::new(),
            parked: HashMap::new(),
            early_children: HashSet::new(),
            units: Units::default(),
            shared_files: Default::default(),
            files,
            observer,
            echo: opts.echo_output,
            root: tid,
            root_status: None,
            hits: 0,
            steps: 0,
            debug: std::env::var_os("RDB_DEBUG").is_some(),
            ends_early,
            dbg: Debugger::default(),
            tsc: None,
            slots: HashMap::new(),
            observer_watch: HashMap::new(),
            pages: HashMap::new(),
            dr_stale: HashSet::new(),
            interrupted: HashSet::new(),
            marks: Marks::default(),
            auto: Default::default(),
            stall,
            stub_slots: HashMap::new(),
            stub_traps: HashSet::new(),
            count_traps: HashMap::new(),
            counting: false,
            cpuid_trap: cpuid_plan.trap,
            cpuid_done,
            cpuid_released: HashSet::new(),
            cpuid_wait_left: 200,
        };
        r.procs.insert(tid, Proc::new(pid, tid, true, false, Rc::new(RefCell::new(BTreeMap::new())), None));
        r.by_pid.insert(pid, tid);
        // The replayer's thread runs with the TSC disabled like the program (see
        // `sys::disable_tsc_for_this_thread`): switching between the two at every stop then needs
        // no control-register write, which the hypervisor traps.
        r.tsc = sys::disable_tsc_for_this_thread().ok();
        r.apply_exec(tid)?;
        r.notify_exec(tid)?;
        r.proc_mut(tid).stretch = r.ev.index;
        // Halted before the program's first instruction: the first resume starts it.
        r.dbg.halted = Some(Halt { tid, kind: HaltKind::StretchStart { sig: 0 } });
        Ok(r)
    }

    /// The observer, to start another replay with it.
    pub(crate) fn take_observer(&mut self) -> Box<dyn ReplayObserver + 'o> {
        std::mem::replace(&mut self.observer, Box::new(crate::observer::NoObserver))
    }

    /// Kill what is left of the replayed processes and reap them.
    pub(crate) fn kill_all(&mut self) {
        // Threads before their process's leader: a traced thread that exits waits for its
        // tracer to reap it, and the leader is only reaped after every other thread. The
        // kernel's leader: a restored checkpoint's process is forked from one of its threads,
        // not always the recorded leader (waiting for that one first waited forever).
        let leader = |pid: Pid| procfs::thread_group(pid).is_ok_and(|g| g == pid);
        let mut threads: Vec<(bool, Pid)> = self.procs.values().map(|p| (leader(p.pid), p.pid)).collect();
        threads.sort();
        let leftover: Vec<Pid> = threads.into_iter().map(|(_, pid)| pid).chain(self.early_children.drain()).collect();
        for p in &leftover {
            let _ = ptrace::kill(*p, libc::SIGKILL);
        }
        // Each one until it is gone: other children of this process (a debugger, the debug
        // host) are not ours to reap.
        for p in &leftover {
            while let Ok(Wait::Stopped { .. }) = ptrace::wait_pid(*p) {}
        }
        self.procs.clear();
        self.by_pid.clear();
        self.parked.clear();
        let _ = std::io::stdout().flush();
    }

    /// The divergence to report when the stall watch ended the replay (see `stall`).
    pub(crate) fn stalled(&mut self) -> Option<Error> {
        if !self.stall.as_ref().is_some_and(|s| s.fired()) {
            return None;
        }
        let limit = self.stall.as_ref().map_or(0, |s| s.limit.as_secs());
        let expected = self.head_desc().unwrap_or_default();
        let tid = self.ev.buf.front().map_or(self.root, |e| e.tid());
        Some(Error::Divergence(Box::new(Divergence {
            index: self.ev.index,
            tid,
            pid: Pid(-1),
            expected,
            actual: format!(
                "no progress for {limit} s: the program ran without reaching this event (it spins in user code on data the trace gave it: a damaged or crafted trace?) and was stopped"
            ),
            pc: 0,
            location: None,
        })))
    }

    /// Raw wait status of the root process, once it exited.
    pub(crate) fn root_status(&self) -> Option<i32> {
        self.root_status
    }

    /// How the replay went, once it ended.
    pub(crate) fn outcome(&self) -> Result<ReplayOutcome, Error> {
        if self.ends_early {
            return Err(Error::EndsEarly { events: self.ev.index });
        }
        Ok(ReplayOutcome {
            events: self.ev.index,
            exit_status: self.root_status,
            breakpoint_hits: self.hits,
            breakpoint_steps: self.steps,
        })
    }
}

/// How running one instruction with its breakpoint lifted ended.
pub(crate) enum Stepped {
    Done,
    /// It faulted: the signal's stop, for the main loop.
    Fault(Stop),
    /// The thread is gone (handled).
    Gone,
}

/// Handling the stop lets the thread run user code.
fn resumes_user_code(stop: &Stop) -> bool {
    matches!(stop, Stop::Exit { .. } | Stop::Signal { .. } | Stop::Interrupt)
}

impl Replayer<'_> {
    fn proc(&self, tid: Tid) -> &Proc {
        &self.procs[&tid]
    }

    fn divergence(&mut self, tid: Tid, expected: String, actual: String) -> Error {
        let index = self.ev.index;
        self.divergence_at(index, tid, expected, actual)
    }

    fn divergence_at(&mut self, index: u64, tid: Tid, expected: String, actual: String) -> Error {
        let pid = self.procs.get(&tid).map_or(Pid(-1), |p| p.pid);
        let (pc, sp) = ptrace::get_regs(pid).map(|r| (r.rip, r.rsp)).unwrap_or((0, 0));
        let location =
            self.procs.get(&tid).and_then(|p| p.image.as_ref()).and_then(|img| crate::location::describe(img, pc, sp));
        Error::Divergence(Box::new(Divergence { index, tid, pid, expected, actual, pc, location }))
    }

    fn head_desc(&mut self) -> Result<String, Error> {
        Ok(match self.ev.head()? {
            Some(e) => format!("thread {}: {}", e.tid(), e.describe()),
            None => "end of trace".into(),
        })
    }

    fn proc_mut(&mut self, tid: Tid) -> &mut Proc {
        self.procs.get_mut(&tid).expect("known thread")
    }

    /// Resume thread `tid` (`PTRACE_SYSCALL`), noting that it runs.
    pub(crate) fn go_raw(&mut self, tid: Tid, sig: i32) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        self.go(pid, sig, "resuming")
    }

    /// No child process has stopped before the replay handled its creation.
    pub(crate) fn early_children_is_empty(&self) -> bool {
        self.early_children.is_empty()
    }

    /// Set the counters a checkpoint saved.
    pub(crate) fn restore_counters(&mut self, root_status: Option<i32>, hits: u64, steps: u64) {
        (self.root_status, self.hits, self.steps) = (root_status, hits, steps);
    }

    /// Resume a halted thread into user code.
    pub(crate) fn go_user(&mut self, tid: Tid, sig: i32) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        self.proc_mut(tid).user = true;
        self.go(pid, sig, "resuming")
    }

    /// Resume a thread that is ours to resume (`PTRACE_SYSCALL`), noting that it runs.
    fn go(&mut self, pid: Pid, sig: i32, what: &'static str) -> Result<(), Error> {
        if sig != 0 && self.deliver_past_protection(pid, sig)? {
            return Ok(()); // see `pages`
        }
        ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, what))?;
        if let Some(p) = self.by_pid.get(&pid).and_then(|t| self.procs.get_mut(t)) {
            p.running = true;
        }
        Ok(())
    }

    /// Hand user code back to a thread after one of its events: its next *stretch* (the user
    /// code up to its next event) starts here. A debugger may halt the replay at this point
    /// instead (see `session`).
    fn resume_user(&mut self, tid: Tid, sig: i32, what: &'static str) -> Result<(), Error> {
        self.arm_point(tid)?;
        let index = self.ev.index;
        let p = self.proc_mut(tid);
        p.user = true;
        p.stretch = index;
        p.region_hits = 0;
        let pid = p.pid;
        if let Some(stop) = self.halt_at_stretch_start(tid, sig)? {
            self.dbg.halt(tid, HaltKind::StretchStart { sig }, stop);
            return Ok(());
        }
        if sig == 0 && self.dbg.focus == Some(self.proc(tid).group) && self.auto.due() {
            self.auto_checkpoint(tid);
        }
        if self.dbg.stepping == Some(tid) {
            // A signal delivered during a step: the kernel stops at the handler's entry.
            ptrace::single_step(pid, sig).map_err(Error::ptrace(pid, what))?;
            self.proc_mut(tid).running = true;
            self.dbg.single_stepping = Some(tid);
            return Ok(());
        }
        self.go(pid, sig, what)
    }

    /// Take a checkpoint where `tid` is about to run user code again (its stretch start), and
    /// keep it for the session.
    fn auto_checkpoint(&mut self, tid: Tid) {
        let halted = self.dbg.halted.replace(Halt { tid, kind: HaltKind::StretchStart { sig: 0 } });
        match self.checkpoint() {
            Ok(cp) => self.auto.taken.push(cp),
            Err(e) if self.debug => eprintln!("rdb-debug: no automatic checkpoint: {e}"),
            Err(_) => {}
        }
        self.dbg.halted = halted;
        self.auto.last = Some(crate::reverse::now_ns());
    }

    /// Take a checkpoint where `tid` stands at the point the debugger's breakpoint was just seen
    /// (the last observed point, see `reverse`).
    fn candidate_checkpoint(&mut self, tid: Tid) {
        let Some(point) = self.dbg.observed.as_ref().and_then(|seen| seen.last().cloned()) else { return };
        let halted = self.dbg.halted.replace(Halt { tid, kind: HaltKind::InCode });
        let saved_ctx = self.dbg.ctx.get(&tid).cloned();
        if let (Some(ctx), crate::position::Position::InStretch { moves, .. }) = (self.dbg.ctx.get_mut(&tid), &point) {
            ctx.moves = moves.clone();
        }
        match self.checkpoint() {
            Ok(cp) => self.auto.taken.push(cp),
            Err(e) if self.debug => eprintln!("rdb-debug: no checkpoint at a breakpoint: {e}"),
            Err(_) => {}
        }
        if let Some(ctx) = saved_ctx {
            self.dbg.ctx.insert(tid, ctx);
        }
        self.dbg.halted = halted;
        self.auto.last_candidate = Some(crate::reverse::now_ns());
    }

    /// Run the replay until a debugger's halt (`Some`) or the end of the trace (`None`).
    pub(crate) fn run(&mut self) -> Result<Option<SessionStop>, Error> {
        loop {
            if self.dbg.pending.is_some() {
                // Still pending while the others stop: what they meet is queued after it.
                self.quiesce()?;
                return Ok(self.dbg.pending.take());
            }
            let head_tid = match self.ev.head()? {
                Some(e) => e.tid(),
                None => return Ok(None),
            };
            let busy = self.group_busy(head_tid);
            match self.parked.get(&head_tid) {
                // Its turn comes when no other thread of its group runs user code.
                Some(stop) if busy && resumes_user_code(stop) => {}
                Some(_) => {
                    let stop = self.parked.remove(&head_tid).expect("parked");
                    self.handle_or_halt(head_tid, stop)?;
                    continue;
                }
                None => {}
            }
            if !self.procs.contains_key(&head_tid) {
                let desc = self.head_desc()?;
                return Err(self.divergence(head_tid, desc, "no such process in the replay".into()));
            }
            if self.proc(head_tid).unstarted && matches!(self.ev.head()?, Some(Event::ThreadStart { .. })) && !busy {
                self.start_thread(head_tid)?;
                continue;
            }
            let waiting = self.parked.len() + self.procs.values().filter(|p| p.unstarted).count();
            if self.procs.len() == waiting {
                let desc = self.head_desc()?;
                return Err(self.divergence(head_tid, desc, "every process is waiting: the replay is stuck".into()));
            }
            let Some((pid, w)) = ptrace::wait_any().map_err(Error::ptrace(Pid(-1), "waitpid"))? else {
                let desc = self.head_desc()?;
                return Err(self.divergence(head_tid, desc, "all processes are gone".into()));
            };
            let Some(stop) = self.classify(pid, w)? else { continue };
            let tid = self.by_pid[&pid];
            if self.debug {
                let head = self.head_desc()?;
                eprintln!("rdb-debug: #{} head [{head}] stop {tid}: {stop:?}", self.ev.index);
            }
            // Syscall entries consume nothing, so they are handled at once against the
            // process's own next event: a vfork child must be able to reach its exec (which
            // releases the parent) even when the parent's vfork return was logged first.
            let eager = matches!(stop, Stop::Entry { .. }) && self.ev.next_of(tid)?.is_some();
            let blocked = resumes_user_code(&stop) && self.group_busy(tid);
            if (tid == head_tid && !blocked) || eager {
                self.handle_or_halt(tid, stop)?;
            } else {
                self.parked.insert(tid, stop);
            }
        }
    }

    /// Handle a stop in its turn, unless a debugger wants the replay halted before it: then it
    /// stays parked (handled when the replay goes on).
    pub(crate) fn handle_or_halt(&mut self, tid: Tid, stop: Stop) -> Result<(), Error> {
        if !self.dbg.reported.remove(&tid) {
            if let Some(reason) = self.halt_before(tid, &stop)? {
                self.parked.insert(tid, stop);
                self.dbg.reported.insert(tid);
                self.dbg.halt(tid, HaltKind::Parked, reason);
                return Ok(());
            }
        }
        self.handle(tid, stop)
    }

    /// Wait until no thread of the debugged process runs (each is in a ptrace stop, its stop
    /// parked for its turn), so that a debugger can read any of them.
    fn quiesce(&mut self) -> Result<(), Error> {
        let Some(group) = self.dbg.focus else { return Ok(()) };
        for _ in 0..1000 {
            let Some(pid) = self.procs.values().find(|p| p.group == group && p.running).map(|p| p.pid) else {
                return Ok(());
            };
            let w = ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "stopping the debugged process"))?;
            if let Some(stop) = self.classify(pid, w)? {
                let tid = self.by_pid[&pid];
                self.parked.insert(tid, stop);
            }
        }
        Err(Error::Unsupported {
            pid: self.procs.get(&group).map_or(Pid(-1), |p| p.pid),
            what: "a thread of the debugged process kept running while the replay was halted".into(),
        })
    }

    /// Another thread of `tid`'s scheduling unit (its process, or the processes it shares
    /// memory with) is running user code.
    fn group_busy(&self, tid: Tid) -> bool {
        let Some(me) = self.procs.get(&tid) else { return false };
        if self.units.is_empty() {
            return self.procs.iter().any(|(t, p)| *t != tid && p.group == me.group && p.user);
        }
        let unit = self.units.unit(me.group);
        self.procs.iter().any(|(t, p)| *t != tid && p.user && self.units.unit(p.group) == unit)
    }

    /// Make `sig` pending for exactly this thread (not for any thread of its process). The
    /// thread group is the kernel's: after going back to a checkpoint forked from another
    /// thread, the recorded main thread is a clone, whose pid is not the group's.
    fn signal_thread(&self, tid: Tid, sig: i32) -> std::io::Result<()> {
        let pid = self.proc(tid).pid;
        ptrace::tgkill(rdb_tracee::procfs::thread_group(pid)?, pid, sig)
    }

    /// Other threads share `tid`'s process.
    fn has_siblings(&self, tid: Tid) -> bool {
        let Some(me) = self.procs.get(&tid) else { return false };
        self.procs.iter().any(|(t, p)| *t != tid && p.group == me.group)
    }

    /// A new thread's first turn (its `ThreadStart` event is the head).
    fn start_thread(&mut self, tid: Tid) -> Result<(), Error> {
        self.ev.pop()?;
        let p = self.procs.get_mut(&tid).expect("known");
        p.unstarted = false;
        self.resume_user(tid, 0, "starting a thread")
    }

    /// Classify a stop; the thread is no longer running user code unless the stop is one
    /// handled on the spot (it is resumed where it was).
    pub(crate) fn classify(&mut self, pid: Pid, w: Wait) -> Result<Option<Stop>, Error> {
        let tid = self.by_pid.get(&pid).copied();
        if let Some(p) = tid.and_then(|t| self.procs.get_mut(&t)) {
            p.running = false;
        }
        if let Some(t) = tid.filter(|t| self.dr_stale.contains(t)) {
            if matches!(w, Wait::Stopped { .. }) {
                self.dr_stale.remove(&t);
                self.sync_debug_registers(t)?;
            }
        }
        let was_user = tid.and_then(|t| self.procs.get_mut(&t)).map(|p| std::mem::replace(&mut p.user, false));
        let stop = self.classify_stop(pid, w)?;
        if stop.is_none() {
            if let (Some(t), Some(u)) = (tid, was_user) {
                if let Some(p) = self.procs.get_mut(&t) {
                    p.user = u;
                }
            }
        }
        Ok(stop)
    }

    /// Turn a wait result into a stop that needs its turn, or handle it right away when it is
    /// not part of the recorded schedule (new child starting, breakpoints, stray signals).
    fn classify_stop(&mut self, pid: Pid, w: Wait) -> Result<Option<Stop>, Error> {
        if self.debug {
            eprintln!("rdb-debug: wait {pid}: {w:?}");
        }
        let Some(&tid) = self.by_pid.get(&pid) else {
            if matches!(w, Wait::Stopped { .. }) {
                self.early_children.insert(pid);
            }
            return Ok(None);
        };
        let (sig, event) = match w {
            Wait::Exited(_) | Wait::Signaled(_) => return Ok(Some(Stop::Gone { status: w.raw_exit_status() })),
            Wait::Stopped { sig, event } => (sig, event),
        };
        if self.proc(tid).killed {
            self.go(pid, 0, "resuming")?;
            return Ok(None);
        }
        if sig == libc::SIGTRAP | 0x80 {
            let info = ptrace::syscall_info(pid).map_err(Error::ptrace(pid, "reading syscall info"))?;
            return Ok(match info.stop {
                SyscallStop::Entry { nr, args } => Some(Stop::Entry { nr, args, pc: info.pc }),
                SyscallStop::Exit { ret } => {
                    if self.proc(tid).entry.is_none() {
                        self.go(pid, 0, "resuming")?; // a new child returning from fork
                        None
                    } else {
                        Some(Stop::Exit { ret })
                    }
                }
                SyscallStop::Other => {
                    self.go(pid, 0, "resuming")?;
                    None
                }
            });
        }
        if sig == libc::SIGTRAP && event != 0 {
            match event {
                libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                    let child = ptrace::new_child(pid).map_err(Error::ptrace(pid, "reading new pid"))?;
                    return Ok(Some(Stop::Fork { child }));
                }
                libc::PTRACE_EVENT_EXEC => {
                    // The old image is gone: breakpoints with it.
                    let p = self.procs.get_mut(&tid).expect("known");
                    p.breakpoints = Rc::new(RefCell::new(BTreeMap::new()));
                    self.go(pid, 0, "resuming")?;
                    return Ok(None);
                }
                _ => {
                    self.go(pid, 0, "resuming")?;
                    return Ok(None);
                }
            }
        }
        if event != 0 {
            self.go(pid, 0, "resuming")?;
            return Ok(None);
        }
        if sig == libc::SIGTRAP {
            // Breakpoint hits first, with as few ptrace calls as possible (SIGTRAP is never
            // a group-stop, so no siginfo is needed to tell).
            let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            if self.dbg.stepping == Some(tid) {
                // A debugger's single step ended (the instruction was never one of our `int3`s:
                // a breakpoint under the pc is lifted for the step).
                let slots = self.take_watch_hits(tid)?;
                self.step_done(tid, regs, slots)?;
                return Ok(None);
            }
            if self.stub_traps.contains(&regs.rip) {
                return self.stub_trap(tid, regs);
            }
            if let Some(&addr) = self.count_traps.get(&regs.rip) {
                if self.proc(tid).breakpoints.borrow().get(&addr).is_some_and(|b| b.count.is_some()) {
                    return self.hit_breakpoint(tid, addr, regs);
                }
            }
            if self.proc(tid).point.as_ref().is_some_and(|k| k.pc() == regs.rip) && self.point_fired(tid)? {
                return self.point_arrival(tid, &regs);
            }
            let addr = regs.rip.wrapping_sub(1);
            if self.proc(tid).breakpoints.borrow().contains_key(&addr) {
                return self.hit_breakpoint(tid, addr, regs);
            }
            let observed = self.observer_watch_hits(tid, &regs)?;
            let slots = self.take_watch_hits(tid)?;
            if slots != 0 {
                if let Some(stop) = self.on_triggers(tid, slots) {
                    self.dbg.halt(tid, HaltKind::InCode, stop);
                } else {
                    self.go(pid, 0, "resuming")?;
                }
                return Ok(None);
            }
            if observed {
                // The observer's watchpoint, run: the program goes on.
                self.go(pid, 0, "resuming")?;
                return Ok(None);
            }
        }
        let Ok(info) = ptrace::get_siginfo(pid) else {
            self.go(pid, 0, "resuming")?; // group-stop
            return Ok(None);
        };
        let synchronous = is_synchronous(sig, si_code(&info));
        let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        if sig == libc::SIGSEGV && self.cpuid_trap {
            if let Some((leaf, subleaf)) = cpuid::trapped(pid, &regs, &info) {
                return Ok(Some(Stop::Signal { sig, tsc: Some(Emulated::Cpuid(leaf, subleaf)) }));
            }
        }
        if sig == libc::SIGSEGV {
            if let Some((len, rdtscp)) = process::tsc_instruction(pid, regs.rip) {
                return Ok(Some(Stop::Signal { sig, tsc: Some(Emulated::Tsc(len, rdtscp)) }));
            }
            // A write to a page protected for a watch: done, and the program goes on.
            if let Some(fault) = self.protected_write(tid, &info)? {
                if fault.is_some() || !self.procs.contains_key(&tid) {
                    return Ok(fault);
                }
                if self.dbg.stepping == Some(tid) {
                    let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                    let slots = self.take_watch_hits(tid)?;
                    self.step_done(tid, regs, slots)?;
                } else {
                    self.go(pid, 0, "resuming")?;
                }
                return Ok(None);
            }
        }
        if synchronous {
            // A fault of a displaced instruction: the program sees its own address (the
            // instruction had no effect; if a handler returns, it runs again from there).
            let displaced = self.proc(tid).breakpoints.borrow().iter().find_map(|(&addr, bp)| {
                matches!(bp.over, StepOver::Displaced(slot) if slot == regs.rip).then_some(addr)
            });
            if let Some(addr) = displaced {
                regs.rip = addr;
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "moving a fault back to its instruction"))?;
            }
        }
        if self.proc(tid).injecting == Some(sig) || synchronous {
            return Ok(Some(Stop::Signal { sig, tsc: None }));
        }
        // A signal of the replay's own world (e.g. SIGCHLD from a replayed child): the
        // recorded ones are injected from the trace instead. A debugger's single step goes on.
        if self.dbg.single_stepping == Some(tid) {
            ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "stepping"))?;
            self.proc_mut(tid).running = true;
        } else {
            self.go(pid, 0, "resuming")?;
        }
        Ok(None)
    }

    fn handle(&mut self, tid: Tid, stop: Stop) -> Result<(), Error> {
        match stop {
            Stop::Entry { nr, args, pc } => self.on_entry(tid, nr, args, pc),
            Stop::Exit { ret } => self.on_exit(tid, ret),
            Stop::Fork { child } => self.on_fork(tid, child),
            Stop::Signal { sig, tsc } => self.on_signal(tid, sig, tsc),
            Stop::Gone { status } => self.on_gone(tid, status),
            Stop::Interrupt => self.on_interrupt(tid),
        }
    }

    /// Arm (or disarm) the breakpoint of the interruption point that `tid`'s next event names,
    /// before it runs user code.
    fn arm_point(&mut self, tid: Tid) -> Result<(), Error> {
        let want = match self.ev.next_of(tid)? {
            Some(Event::Interrupt { regs, stack, pages, digest, .. }) => {
                Some(PointKey { regs: *regs, stack: stack.clone(), pages: pages.clone(), digest: *digest })
            }
            _ => None,
        };
        let p = self.proc(tid);
        let (pid, group, had_hw) = (p.pid, p.group, p.point.is_some() && p.stub.is_none());
        if want == p.point {
            return Ok(());
        }
        if let Some(stub) = self.proc_mut(tid).stub.take() {
            point_stub::disarm(pid, &stub).map_err(Error::ptrace(pid, "putting code back"))?;
        }
        let slot = interrupt::REPLAY_SLOT;
        if had_hw {
            debugreg::clear_watchpoint(pid, slot).map_err(Error::ptrace(pid, "clearing a debug register"))?;
        }
        if let Some(stub) = want.as_ref().and_then(|key| self.arm_stub(tid, key)) {
            if self.debug {
                eprintln!("rdb-debug: point stub for {tid} at {:#x}, trap {:#x}", stub.pc, stub.after_trap);
            }
            self.stub_traps.insert(stub.after_trap);
            let p = self.proc_mut(tid);
            p.stub = Some(stub);
            p.point = want;
            return Ok(());
        }
        if let Some(key) = &want {
            let observer = self.observer_watch.get(&group).is_some_and(|w| w[slot].is_some());
            let debugger = self.dbg.focus == Some(group) && self.dbg.watch[slot].is_some();
            if observer || debugger {
                return Err(Error::Unsupported {
                    pid,
                    what: format!(
                        "the recording interrupted thread {tid} in user code, and finding that point again needs debug register {slot}, which a watch holds (delete a watchpoint or a watch of the debug module)"
                    ),
                });
            }
            let watch = debugreg::Watchpoint { addr: key.pc(), len: 1, kind: debugreg::WatchKind::Execute };
            debugreg::set_watchpoint(pid, slot, watch).map_err(Error::ptrace(pid, "arming an interruption point"))?;
        }
        self.proc_mut(tid).point = want;
        Ok(())
    }

    /// Arms a stub for `key` in `tid`'s address space (see `point_stub`), in the room of the
    /// object its pc is in; `None` where the point's instruction cannot carry one, there is no
    /// room, or a breakpoint of ours is in its bytes.
    fn arm_stub(&mut self, tid: Tid, key: &PointKey) -> Option<Stub> {
        if std::env::var_os("RDB_NO_POINT_STUBS").is_some() {
            return None;
        }
        let p = self.proc(tid);
        let (pid, table, pc) = (p.pid, Rc::as_ptr(&p.breakpoints) as usize, key.pc());
        if p.breakpoints.borrow().range(pc.saturating_sub(15)..pc + 5).next().is_some() {
            return None;
        }
        let maps = procfs::maps(pid).ok()?;
        let named = maps.iter().find(|m| m.contains(pc) && m.name.starts_with('/')).map(|m| {
            let lowest = maps.iter().filter(|n| n.name == m.name).map(|n| n.start).min().unwrap_or(0);
            (PathBuf::from(&m.name), lowest)
        });
        let loaded = || p.objects.iter().find(|o| o.0 <= pc && pc < o.1).map(|o| (o.2.clone(), o.0));
        let (object, lowest) = named.or_else(loaded)?;
        let slot = match self.stub_slots.get(&(table, object.clone())) {
            Some(&slot) => slot,
            None => {
                let room = (table, object.clone());
                let mut slots =
                    self.slots.remove(&room).unwrap_or_else(|| displace::Slots::for_mapped(&room.1, lowest));
                let free = slots.free().filter(|&(_, len)| len >= point_stub::STUB_ROOM);
                if free.is_some() {
                    slots.take(point_stub::STUB_ROOM);
                }
                self.slots.insert(room, slots);
                if self.debug && free.is_none() {
                    eprintln!("rdb-debug: no room for a point stub in {}", object.display());
                }
                let (slot, _) = free?;
                self.stub_slots.insert((table, object), slot);
                slot
            }
        };
        if self.procs.values().any(|q| q.stub.as_ref().is_some_and(|s| s.slot == slot)) {
            return None; // another thread's point holds it
        }
        let stub = point_stub::arm(pid, key, slot);
        if self.debug && stub.is_none() {
            let mut code = [0u8; 8];
            let _ = mem::read(pid, pc, &mut code);
            eprintln!("rdb-debug: no point stub at {pc:#x} (code {code:02x?}, room at {slot:#x})");
        }
        stub
    }

    /// A thread trapped in a point stub: all its general registers are the point's. The point
    /// when the rest matches (the instruction is put back and the thread stands at its pc);
    /// otherwise it runs on (the instruction, displaced). A thread whose point it is not
    /// (another thread, a fork child with the patch) runs on as well.
    fn stub_trap(&mut self, tid: Tid, regs: ptrace::Regs) -> Result<Option<Stop>, Error> {
        let p = self.proc(tid);
        let pid = p.pid;
        self.ev.progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.debug {
            eprintln!("rdb-debug: stub trap {tid} rip {:#x} rax {:#x} rsp {:#x}", regs.rip, regs.rax, regs.rsp);
        }
        if let (Some(stub), Some(key)) = (p.stub.clone(), p.point.clone()) {
            let mut at = regs;
            at.rip = stub.pc;
            if stub.after_trap == regs.rip
                && key.regs_match(&at)
                && interrupt::digest(pid, &at, &key.pages).map_err(Error::ptrace(pid, "reading a point's state"))?
                    == key.digest
            {
                point_stub::disarm(pid, &stub).map_err(Error::ptrace(pid, "putting code back"))?;
                ptrace::set_regs(pid, &at).map_err(Error::ptrace(pid, "moving to the point"))?;
                let p = self.proc_mut(tid);
                p.stub = None;
                p.point = None;
                return Ok(Some(Stop::Interrupt));
            }
        }
        self.go(pid, 0, "resuming")?;
        Ok(None)
    }

    /// Whether a `SIGTRAP` of `tid` at the pc of its interruption point is the breakpoint's.
    /// Arrivals there are the hot path of a thread running to its point: when no other debug
    /// register is armed, and no `int3` of ours sits before the pc, nothing else stops the
    /// thread there with `SIGTRAP`, and DR6 is not read (its bit stays set, looked at by nobody).
    fn point_fired(&mut self, tid: Tid) -> Result<bool, Error> {
        let p = self.proc(tid);
        let pid = p.pid;
        let pc = p.point.as_ref().expect("armed").pc();
        let others = self.observer_watch.get(&p.group).is_some_and(|w| w.iter().any(Option::is_some))
            || (self.dbg.focus == Some(p.group) && self.dbg.watch.iter().any(Option::is_some))
            || p.breakpoints.borrow().contains_key(&pc.wrapping_sub(1));
        if !others {
            return Ok(true);
        }
        let dr6 = ptrace::peek_user(pid, debugreg::status_offset()).map_err(Error::ptrace(pid, "reading DR6"))?;
        let bit = 1 << interrupt::REPLAY_SLOT;
        if dr6 & bit != 0 {
            ptrace::poke_user(pid, debugreg::status_offset(), dr6 & !bit)
                .map_err(Error::ptrace(pid, "clearing DR6"))?;
        }
        Ok(dr6 & bit != 0)
    }

    /// `tid` arrived at the pc of its interruption point: the point when its registers and
    /// digest match, else it runs on.
    fn point_arrival(&mut self, tid: Tid, regs: &ptrace::Regs) -> Result<Option<Stop>, Error> {
        let pid = self.proc(tid).pid;
        let key = self.proc(tid).point.clone().expect("armed");
        self.ev.progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if key.regs_match(regs)
            && interrupt::digest(pid, regs, &key.pages).map_err(Error::ptrace(pid, "reading a point's state"))?
                == key.digest
        {
            debugreg::clear_watchpoint(pid, interrupt::REPLAY_SLOT)
                .map_err(Error::ptrace(pid, "clearing a debug register"))?;
            self.proc_mut(tid).point = None;
            return Ok(Some(Stop::Interrupt));
        }
        if self.dbg.single_stepping == Some(tid) {
            ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "stepping"))?;
            self.proc_mut(tid).running = true;
        } else {
            self.go(pid, 0, "resuming")?;
        }
        Ok(None)
    }

    /// The thread stands at the interruption point of its next event: deliver the signal
    /// recorded there, or let it run on (its turn came back).
    fn on_interrupt(&mut self, tid: Tid) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        let Event::Interrupt { .. } = ev else {
            let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            let actual = format!("interrupted in user code at pc {:#x} (rsp {:#x})", regs.rip, regs.rsp);
            return Err(self.divergence(tid, ev.describe(), actual));
        };
        self.ev.pop()?;
        if let Some(Event::Signal { sig, asynchronous: true, .. }) = self.ev.next_of(tid)? {
            // Made pending now: the kernel delivers it (its stop comes in turn) before the
            // thread runs another instruction, as while recording.
            let sig = *sig;
            self.signal_thread(tid, sig).map_err(Error::ptrace(pid, "queueing a signal"))?;
            let p = self.proc_mut(tid);
            p.injecting = Some(sig);
            p.user = true;
            return self.go(pid, 0, "delivering a signal");
        }
        self.resume_user(tid, 0, "resuming an interrupted thread")
    }

    fn on_entry(&mut self, tid: Tid, nr: u64, args: [u64; 6], pc: u64) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        if nr == Sysno::rt_sigreturn as u64 {
            let sp = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?.rsp;
            self.proc_mut(tid).sigreturn_sp = Some(sp);
        }
        let actual = || {
            let n = syscalls::nargs(nr);
            let a: Vec<String> = args[..n].iter().map(|a| format!("{a:#x}")).collect();
            format!("{}({})", syscalls::name(nr), a.join(", "))
        };
        let Some((index, head)) = self.ev.next_of_indexed(tid)?.map(|(i, e)| (i, e.clone())) else {
            return Err(self.divergence(
                tid,
                "no further event of this thread".into(),
                format!("syscall {}", actual()),
            ));
        };
        let policy = syscalls::policy(nr);
        let call = Sysno::new(nr as usize);
        self.check_protected_entry(tid, nr, &args)?;
        if self.observer.wants_syscall(nr, false) {
            let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            self.observe_syscall(tid, nr, args, (index, &head), false, regs)?;
        }
        let mode = match &head {
            Event::Syscall { nr: rnr, args: rargs, ret, file, .. } => {
                let n = syscalls::nargs(nr);
                if *rnr != nr || rargs[..n] != args[..n] {
                    return Err(self.divergence_at(
                        index,
                        tid,
                        format!("syscall {}", head.describe()),
                        format!("syscall {} at pc {pc:#x}", actual()),
                    ));
                }
                let interrupted = matches!(*ret, -4 | -512 | -513 | -514);
                match policy {
                    Policy::Emulate if interrupted && mask_argument(pid, nr, &args).is_some() => {
                        // Interrupted while a temporary signal mask was in force: run
                        // rt_sigsuspend with that mask and the recorded signal pending, so
                        // the kernel delivers under the same mask and restores it afterwards.
                        match (self.ev.nth_of(tid, 1)?, mask_argument(pid, nr, &args)) {
                            (Some(Event::Signal { sig, asynchronous: true, .. }), Some((mask, size))) => {
                                let sig = *sig;
                                let mut regs =
                                    ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                                regs.orig_rax = Sysno::rt_sigsuspend as u64;
                                regs.rdi = mask;
                                regs.rsi = size;
                                ptrace::set_regs(pid, &regs)
                                    .map_err(Error::ptrace(pid, "rewriting to rt_sigsuspend"))?;
                                self.signal_thread(tid, sig).map_err(Error::ptrace(pid, "waking rt_sigsuspend"))?;
                                Mode::Suspended
                            }
                            _ => Mode::Emulated,
                        }
                    }
                    Policy::Emulate | Policy::Unsupported => Mode::Emulated,
                    Policy::AddressSpace if call.is_some_and(|c| syscalls::maps_a_file(c, &args)) => {
                        if *ret < 0 {
                            Mode::Emulated
                        } else {
                            // Map anonymous memory at the recorded address; the contents come
                            // from the (verified) file or the trace at exit.
                            let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                            let kind = args[3] & 0x3; // MAP_SHARED / MAP_PRIVATE
                            let keep = args[3] & (libc::MAP_NORESERVE | libc::MAP_GROWSDOWN | libc::MAP_STACK) as u64;
                            regs.rdi = *ret as u64;
                            regs.r10 = kind.max(libc::MAP_PRIVATE as u64)
                                | keep
                                | (libc::MAP_ANONYMOUS | libc::MAP_FIXED) as u64;
                            regs.r8 = u64::MAX;
                            regs.r9 = 0;
                            ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewriting mmap"))?;
                            match file {
                                Some(f) => Mode::MappedFile(f.clone()),
                                None => Mode::ReExecuted,
                            }
                        }
                    }
                    Policy::Exec => Mode::Emulated, // failed exec
                    Policy::Exit => Mode::Leaving,
                    Policy::Suspend => match self.ev.nth_of(tid, 1)? {
                        Some(Event::Signal { sig, asynchronous: true, .. }) => {
                            let sig = *sig;
                            self.signal_thread(tid, sig).map_err(Error::ptrace(pid, "waking rt_sigsuspend"))?;
                            Mode::Suspended
                        }
                        _ => Mode::Emulated,
                    },
                    // A process creation that failed while recording (interrupted by a signal:
                    // `-ERESTARTNOINTR`, or `EAGAIN`) created nothing: it fails again here.
                    Policy::NewProcess if *ret < 0 => Mode::Emulated,
                    Policy::ReExecute | Policy::AddressSpace | Policy::NewProcess => Mode::ReExecuted,
                }
            }
            Event::Exec { exe, blake3, .. } if policy == Policy::Exec => {
                // Run the trace's copy of the recorded executable (or the original, checked) by
                // its absolute path (the program may have named it relative to a cwd this replay
                // does not share). The path goes below the stack pointer: the old image is about
                // to be replaced anyway.
                let recorded = PathBuf::from(OsStr::from_bytes(exe));
                let exe = self.files.get(&recorded, blake3)?.path.as_os_str().as_bytes().to_vec();
                let is_execve = call == Some(Sysno::execve);
                let name_arg = args[call.map_or(0, syscalls::exec_path_arg)];
                let given = mem::read_cstring(pid, name_arg).unwrap_or_default();
                if given != exe {
                    // Just below the red zone: mapped even on the small stacks posix_spawn
                    // gives its CLONE_VM child, and unused by anyone (the image goes away).
                    let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                    let mut path = exe.clone();
                    path.push(0);
                    let scratch = regs.rsp.wrapping_sub(256 + path.len() as u64) & !0xf;
                    mem::write(pid, scratch, &path).map_err(Error::ptrace(pid, "writing the exec path"))?;
                    if is_execve {
                        regs.rdi = scratch;
                    } else {
                        regs.rdi = libc::AT_FDCWD as u64;
                        regs.rsi = scratch;
                        regs.r8 &= !(libc::AT_EMPTY_PATH as u64);
                    }
                    ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewriting execve"))?;
                }
                Mode::Exec
            }
            Event::NewProcess { .. } if policy == Policy::NewProcess => {
                if call == Some(Sysno::clone) && quiet_clone(args[0]) != args[0] {
                    // The child is created without an exit signal (see `quiet_clone`); its
                    // parent's and its own registers get the flags back afterwards.
                    let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                    regs.rdi = quiet_clone(args[0]);
                    ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewriting clone"))?;
                }
                Mode::ReExecuted
            }
            Event::Exit { .. } if policy == Policy::Exit => Mode::Leaving,
            Event::Exit { status, .. } if *status & 0x7f == libc::SIGKILL => {
                // Killed from outside while recording, before this syscall ran.
                let p = self.procs.get_mut(&tid).expect("known");
                p.killed = true;
                ptrace::kill(pid, libc::SIGKILL).map_err(Error::ptrace(pid, "killing"))?;
                return Ok(());
            }
            Event::Exit { .. } if self.has_siblings(tid) => {
                // Another thread ended the process (exit_group) while this one was inside this
                // syscall: it stays stopped here until the same happens now.
                return Ok(());
            }
            other => {
                let expected = other.describe();
                return Err(self.divergence_at(index, tid, expected, format!("syscall {} at pc {pc:#x}", actual())));
            }
        };
        if let Event::Syscall { ret, file, .. } = &head {
            if call == Some(Sysno::mmap) && share::is_shared_mapping(args[3]) && *ret >= 0 {
                // The process shares this memory from here on: one unit with the others that
                // map it (the recorder decided the same at this call's exit).
                let object = file.as_ref().map(|f| f.path.clone());
                let group = self.proc(tid).group;
                self.units.map_shared(group, object.as_deref());
            }
        }
        if matches!(mode, Mode::Emulated) {
            ptrace::poke_user(pid, ptrace::ORIG_RAX_OFFSET, u64::MAX)
                .map_err(Error::ptrace(pid, "skipping a syscall"))?;
        }
        let leaving_thread = matches!(mode, Mode::Leaving) && call == Some(Sysno::exit) && self.proc(tid).group != tid;
        // A re-executed call changes state other threads see (the address space above all):
        // while it runs, no other thread of the group may run, as while recording, where the
        // thread kept its turn through it.
        let running = !matches!(mode, Mode::Emulated | Mode::Leaving);
        let p = self.procs.get_mut(&tid).expect("known");
        p.entry = Some((nr, args, mode));
        p.user = running;
        self.go(pid, 0, "resuming")?;
        if leaving_thread {
            // Wait until the thread is really gone: the kernel clears its CLONE_CHILD_CLEARTID
            // word on the way out, and a joining thread may be scheduled next.
            loop {
                match ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "waiting for a thread to exit"))? {
                    Wait::Stopped { .. } => ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?,
                    w => {
                        self.proc_mut(tid).running = false;
                        self.parked.insert(tid, Stop::Gone { status: w.raw_exit_status() });
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn on_exit(&mut self, tid: Tid, real_ret: i64) -> Result<(), Error> {
        let real_ret = self.finish_swapped(tid, real_ret)?;
        let pid = self.proc(tid).pid;
        let (nr, args, mode) = self.procs.get_mut(&tid).expect("known").entry.take().expect("exit after entry");
        if matches!(mode, Mode::Exec) {
            if real_ret != 0 {
                let desc = self.head_desc()?;
                return Err(self.divergence(tid, desc, format!("execve failed with {real_ret}")));
            }
            self.apply_exec(tid)?;
            // A new address space shares nothing (the recorder decided the same).
            let group = self.proc(tid).group;
            self.units.leave(group);
        }
        // A recording killed right after an exec ends with the exec: the replay ends there.
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        if matches!(mode, Mode::ReExecuted)
            && real_ret == ERESTARTNOINTR
            && syscalls::policy(nr) == Policy::NewProcess
            && matches!(ev, Event::NewProcess { tid: t, .. } if t == tid)
        {
            // A signal of the replay's own world (a `SIGCHLD` of a replayed child, which the
            // program never sees: its recorded signals come from the trace) was pending when the
            // process creation began, and the kernel gave up to deliver it first. The delivery
            // is suppressed (`classify_stop`) and the kernel runs the call again: its entry
            // comes back and is replayed against the same recorded creation.
            let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            regs.rdi = args[0]; // the call's own flags (see `quiet_clone`)
            ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "restoring clone's flags"))?;
            let p = self.proc_mut(tid);
            p.user = true;
            return self.go(pid, 0, "restarting a process creation");
        }
        let Event::Syscall { nr: rnr, args: rargs, ret, writes, output, .. } = &ev else {
            return Err(self.divergence(tid, ev.describe(), format!("end of syscall {}", syscalls::name(nr))));
        };
        let n = syscalls::nargs(nr);
        if *rnr != nr || rargs[..n] != args[..n] {
            return Err(self.divergence(tid, ev.describe(), format!("end of syscall {}", syscalls::name(nr))));
        }
        let ret = *ret;
        self.track_thread_state(tid, nr, &args, ret);
        match &mode {
            Mode::Emulated | Mode::Suspended => {
                for w in writes {
                    mem::write(pid, w.addr, &w.bytes).map_err(Error::ptrace(pid, "writing syscall results"))?;
                }
            }
            Mode::MappedFile(f) => {
                if real_ret != ret {
                    return Err(self.divergence(tid, ev.describe(), format!("mmap returned {real_ret:#x}")));
                }
                if share::is_shared_mapping(args[3]) {
                    self.map_shared_file(tid, f, ret as u64, &args)?;
                } else {
                    self.fill_mapping(tid, f, ret as u64, args[1], args[5])?;
                }
            }
            Mode::ReExecuted => {
                let must_match = syscalls::policy(nr) == Policy::AddressSpace;
                if must_match && real_ret != ret {
                    return Err(self.divergence(
                        tid,
                        ev.describe(),
                        format!("re-executed {} returned {real_ret:#x}", syscalls::name(nr)),
                    ));
                }
            }
            Mode::Exec | Mode::Leaving => {}
        }
        // Output shown once, also when going back replays this event again.
        if self.echo && self.ev.index >= self.marks.echoed {
            self.marks.echoed = self.ev.index + 1;
            if let Some((stream, bytes)) = output {
                trace::progress::emit(*stream, bytes);
            }
        }
        // The program sees the recorded result (pids, fds, ...). `orig_rax` is restored so a
        // signal delivered now restarts the call as the kernel would have.
        let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        regs.rax = ret as u64;
        regs.orig_rax = nr;
        if matches!(mode, Mode::MappedFile(_) | Mode::Suspended)
            || Sysno::new(nr as usize).is_some_and(|c| syscalls::maps_a_file(c, &args) || c == Sysno::clone)
        {
            // The argument registers were rewritten at entry; the program keeps its own.
            (regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9) =
                (args[0], args[1], args[2], args[3], args[4], args[5]);
        }
        // A call interrupted by a signal that another thread then took (a process-directed
        // signal wakes one thread, any thread may dequeue it): the kernel restarted it without
        // delivering anything. The restart codes never reach the program; redo the restart.
        const ERESTARTSYS: i64 = -512;
        const ERESTARTNOHAND: i64 = -514;
        const ERESTART_RESTARTBLOCK: i64 = -516;
        if matches!(ret, ERESTARTSYS | ERESTARTNOINTR | ERESTARTNOHAND | ERESTART_RESTARTBLOCK)
            && !matches!(self.ev.nth_of(tid, 1)?, Some(Event::Signal { asynchronous: true, .. }))
        {
            regs.rax = if ret == ERESTART_RESTARTBLOCK { Sysno::restart_syscall as u64 } else { nr };
            regs.rip -= 2;
        }
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "setting the result"))?;
        if let Some(entry_sp) = self.proc_mut(tid).sigreturn_sp.take() {
            interrupt::clear_signal_frame(pid, entry_sp, regs.rsp)
                .map_err(Error::ptrace(pid, "clearing a signal frame"))?;
        }
        self.ev.pop()?;
        if matches!(mode, Mode::Exec) {
            self.notify_exec(tid)?;
        }
        if self.observer.wants_syscall(nr, true) {
            // Popped: the event was the one before the next.
            self.observe_syscall(tid, nr, args, (self.ev.index - 1, &ev), true, regs)?;
        }
        self.after_syscall(tid, nr, &args, ret)?;
        let sig = match self.ev.next_of(tid)? {
            Some(Event::Signal { sig, asynchronous: true, .. }) => *sig,
            _ => 0,
        };
        if sig != 0 {
            self.procs.get_mut(&tid).expect("known").injecting = Some(sig);
        }
        if sig != 0 || matches!(mode, Mode::Suspended) {
            // A signal is delivered first (a suspended process already has its own pending):
            // user code runs after its stop.
            let sig = if matches!(mode, Mode::Suspended) { 0 } else { sig };
            self.proc_mut(tid).user = true;
            return self.go(pid, sig, "resuming");
        }
        self.release_cpuid(tid)?;
        self.dbg.exit_of = Some(nr);
        self.resume_user(tid, 0, "resuming")
    }

    /// At a syscall exit of `tid`: once no `Cpuid` event remains in the trace, turn its
    /// thread's `cpuid` faulting off (see [`cpuid::scan_last`]). Never before: a checkpoint
    /// or restart brings back threads as they were then, and an exec arms faulting again.
    fn release_cpuid(&mut self, tid: Tid) -> Result<(), Error> {
        let Some(done) = &self.cpuid_done else { return Ok(()) };
        let mut after = done.load(std::sync::atomic::Ordering::Acquire);
        // A scan still under way (this exit may be the thread's last for long: a program that
        // opens a file and computes): wait for it a little, it reads events far faster than a
        // replay runs them; at most 100 ms in all, for the whole replay. Still not done: the
        // thread's next exit tries again.
        while after == u64::MAX && self.cpuid_wait_left > 0 {
            self.cpuid_wait_left -= 1;
            std::thread::sleep(std::time::Duration::from_micros(500));
            after = done.load(std::sync::atomic::Ordering::Acquire);
        }
        if self.ev.index < after {
            return Ok(());
        }
        let pid = self.proc(tid).pid;
        if !self.cpuid_released.insert(pid) {
            return Ok(());
        }
        cpuid::disarm(pid).map_err(Error::ptrace(pid, "turning cpuid trapping off"))
    }

    /// Keep what checkpoints need to know of a thread's kernel state (see `Proc::clear_tid`).
    fn track_thread_state(&mut self, tid: Tid, nr: u64, args: &[u64; 6], ret: i64) {
        if ret < 0 {
            return;
        }
        if nr == Sysno::set_tid_address as u64 {
            self.proc_mut(tid).clear_tid = args[0];
        } else if nr == Sysno::sigaltstack as u64 && args[0] != 0 {
            let pid = self.proc(tid).pid;
            let mut ss = [0u8; 24];
            if mem::read_exact(pid, args[0], &mut ss).is_ok() {
                const SS_DISABLE: i32 = 2;
                let flags = i32::from_le_bytes(ss[8..12].try_into().expect("4 bytes"));
                self.proc_mut(tid).altstack = (flags & SS_DISABLE == 0).then_some(ss);
            }
        }
    }

    /// A file mapped `MAP_SHARED` (see `shared_map`): the replay's copy of it, shared with the
    /// other processes mapping it, instead of the anonymous memory made at entry.
    fn map_shared_file(&mut self, tid: Tid, f: &MappedFile, addr: u64, args: &[u64; 6]) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let m = crate::shared_map::Mapping { addr, len: args[1], prot: args[2], flags: args[3], offset: args[5] };
        let files = &mut self.files;
        let data = || {
            use std::os::unix::fs::FileExt;
            let recorded = PathBuf::from(OsStr::from_bytes(&f.path));
            let file = files.get(&recorded, &f.blake3)?;
            let start = m.offset.min(file.size);
            let end = start.saturating_add(m.len).min(file.size);
            let mut data = vec![0u8; (end - start) as usize];
            file.file
                .read_exact_at(&mut data, start)
                .map_err(|source| Error::FileMissing { path: file.path.clone(), source })?;
            Ok(data)
        };
        self.shared_files.map(pid, f, &m, data)
    }

    /// Contents of a replayed file mapping: the recorded snapshot, or the file itself after
    /// checking it is the one that was recorded.
    fn fill_mapping(&mut self, tid: Tid, f: &MappedFile, addr: u64, len: u64, offset: u64) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        if let Some(s) = &f.snapshot {
            let n = s.len().min(len as usize);
            return mem::write(pid, addr, &s[..n]).map_err(Error::ptrace(pid, "filling a mapping"));
        }
        // The mapped range only, read from the trace's copy (or the checked original).
        use std::os::unix::fs::FileExt;
        let recorded = PathBuf::from(OsStr::from_bytes(&f.path));
        let file = self.files.get(&recorded, &f.blake3)?;
        let start = offset.min(file.size);
        let end = start.saturating_add(len).min(file.size);
        let mut data = vec![0u8; (end - start) as usize];
        file.file
            .read_exact_at(&mut data, start)
            .map_err(|source| Error::FileMissing { path: file.path.clone(), source })?;
        if offset == 0 && data.starts_with(b"\x7fELF") {
            let (path, group) = (file.path.clone(), self.proc(tid).group);
            for p in self.procs.values_mut().filter(|p| p.group == group) {
                p.objects.retain(|&(lo, hi, _)| hi <= addr || lo >= addr + len);
                p.objects.push((addr, addr + len, path.clone()));
            }
        }
        mem::write(pid, addr, &data).map_err(Error::ptrace(pid, "filling a mapping"))
    }

    /// Set up a freshly exec'ed image exactly as recorded: initial stack (argv, envp, auxv,
    /// random bytes) and stack pointer, `rdtsc` trapping.
    fn apply_exec(&mut self, tid: Tid) -> Result<(), Error> {
        self.proc_mut(tid).objects.clear();
        let pid = self.proc(tid).pid;
        let ev = self.ev.head()?.cloned();
        let Some(Event::Exec { exe, blake3, image, image_blake3, sp, stack, interp, .. }) = ev else {
            let desc = self.head_desc()?;
            return Err(self.divergence(tid, desc, "exec".into()));
        };
        // What ran was the trace's copy of the executable (or the checked original). A script's
        // interpreter and an executable's dynamic loader are loaded by the kernel from their
        // paths: those must be the recorded files.
        let ran = self.files.get(Path::new(OsStr::from_bytes(&exe)), &blake3)?;
        let (ran, kept) = (ran.path.clone(), ran.kept);
        let exe = PathBuf::from(OsStr::from_bytes(&image));
        let loaded = if image_blake3 == blake3 && kept {
            ran
        } else {
            if image_blake3 != blake3 {
                self.files.check_in_place(&exe, &image_blake3)?;
            }
            exe.clone()
        };
        if let Some((path, hash)) = &interp {
            self.files.check_in_place(Path::new(OsStr::from_bytes(path)), hash)?;
        }
        let now = procfs::exe(pid).unwrap_or_default();
        if now != loaded {
            return Err(self.divergence(tid, format!("exec {}", loaded.display()), format!("exec {}", now.display())));
        }
        process::trap_rdtsc(pid).map_err(Error::ptrace(pid, "arming rdtsc trapping"))?;
        self.cpuid_released.remove(&pid);
        if self.cpuid_trap && !cpuid::arm(pid).map_err(Error::ptrace(pid, "arming cpuid trapping"))? {
            let why = "the host offered CPUID faulting when the replay started and refuses it now";
            return Err(Error::Ptrace { pid, what: "arming cpuid trapping", source: std::io::Error::other(why) });
        }
        let top = procfs::stack_top(pid).map_err(Error::ptrace(pid, "finding the stack"))?;
        let end = sp.checked_add(stack.len() as u64).unwrap_or(0);
        if end != top {
            return Err(self.divergence(
                tid,
                format!("initial stack ending at {end:#x}"),
                format!("stack ending at {top:#x}"),
            ));
        }
        mem::write(pid, sp, &stack).map_err(Error::ptrace(pid, "writing the initial stack"))?;
        let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        regs.rsp = sp;
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "setting the stack pointer"))?;
        let image = ProcessImage { tid, pid, load_bias: process::load_bias(&loaded, &stack), exe, file: loaded };
        let auxv = procfs::auxv_offset_in_stack(&stack).map_or(Vec::new(), |at| auxv_bytes(&stack[at..]));
        let p = self.proc_mut(tid);
        p.image = Some(image);
        p.auxv = auxv;
        p.altstack = None;
        self.ev.pop()?;
        Ok(())
    }

    /// Tell the observer about a new image and plant its breakpoints.
    fn notify_exec(&mut self, tid: Tid) -> Result<(), Error> {
        let Some(image) = self.procs[&tid].image.clone() else { return Ok(()) };
        // The kernel cleared the debug registers at the exec.
        let group = self.procs[&tid].group;
        self.observer_watch.remove(&group);
        self.pages.remove(&group);
        let bps = self.observer.on_exec(&image);
        self.arm_requested(tid)?;
        if bps.is_empty() {
            return Ok(());
        }
        // Slots for displaced instructions (see `displace`), in the executable segments' tails.
        // RDB_SINGLE_STEP=1: step over every breakpoint the classic way (a check on `displace`).
        let single_step = std::env::var_os("RDB_SINGLE_STEP").is_some_and(|v| v == "1");
        // Keyed by the file mapped (the trace's kept copy of the executable, as `/proc/PID/maps`
        // names it), so that breakpoints planted later in the same object take the next slots.
        let mapped = std::fs::canonicalize(&image.file).unwrap_or_else(|_| image.file.clone());
        let key = (Rc::as_ptr(&self.procs[&tid].breakpoints) as usize, mapped);
        let mut slots = if single_step {
            displace::Slots::default()
        } else {
            displace::Slots::for_image(&image.file, image.load_bias)
        };
        for &addr in &bps {
            self.plant(tid, addr, Some(&mut slots), single_step).map_err(Error::Observer)?.region = true;
        }
        if self.observer.counts_hits() && !single_step {
            self.arm_counting(tid, &image, &bps, &mut slots)?;
        }
        self.slots.insert(key, slots);
        Ok(())
    }

    /// Prepare counting sites (see `count_stub`) at the observer's breakpoints `bps` of a new
    /// image: all of them or none (a hit at a plain breakpoint would not be counted). None when
    /// an instruction is shorter than a `jmp` or not displaced, or there is no room; the
    /// breakpoints then stop at every hit, as without counting (`RDB_DEBUG=1` says why).
    fn arm_counting(
        &mut self,
        tid: Tid,
        image: &ProcessImage,
        bps: &[u64],
        slots: &mut displace::Slots,
    ) -> Result<(), Error> {
        use crate::count_stub;
        let pid = self.proc(tid).pid;
        let table = self.proc(tid).breakpoints.clone();
        let why_not = |what: String| {
            if self.debug {
                eprintln!("rdb-debug: no counting stubs in {}: {what}", image.exe.display());
            }
            Ok(())
        };
        let Some((data, _)) = count_stub::data_room(&image.file, image.load_bias) else {
            return why_not("no room after its last writable segment".into());
        };
        let data = count_stub::Data { at: data };
        let mut prepared = Vec::new();
        for &addr in bps {
            let Some(bp) = table.borrow().get(&addr).cloned() else { continue };
            let StepOver::Displaced(copy) = bp.over else {
                return why_not(format!("the instruction at {addr:#x} is not displaced"));
            };
            let mut code = [0u8; 16];
            let n = mem::read(pid, addr, &mut code).unwrap_or(0);
            if n > 0 {
                code[0] = bp.orig;
            }
            if !count_stub::fits(addr, &code[..n]) {
                return why_not(format!("the instruction at {addr:#x} is shorter than a jump"));
            }
            let Some((slot, room)) = slots.free() else { return why_not("no room for a stub".into()) };
            let Some((stub, trap)) = count_stub::assemble(data, copy, slot) else {
                return why_not(format!("the stub for {addr:#x} does not assemble"));
            };
            let jmp = count_stub::jmp(addr, slot);
            let (Some(jmp), true) = (jmp, stub.len() as u64 <= room) else {
                return why_not(format!("no room for the stub of {addr:#x}"));
            };
            mem::write(pid, slot, &stub).map_err(Error::ptrace(pid, "writing a counting stub"))?;
            slots.take(stub.len() as u64);
            let orig: [u8; count_stub::JMP_LEN] = code[..count_stub::JMP_LEN].try_into().expect("16 bytes");
            prepared.push((addr, count_stub::Site { jmp, orig, trap, data, patched: false }));
        }
        if prepared.is_empty() {
            return Ok(());
        }
        mem::write(pid, data.at, &[0u8; count_stub::DATA_LEN as usize])
            .map_err(Error::ptrace(pid, "clearing the hit count"))?;
        for (addr, site) in prepared {
            self.count_traps.insert(site.trap, addr);
            if let Some(bp) = table.borrow_mut().get_mut(&addr) {
                bp.count = Some(site);
            }
        }
        let counting = self.counting;
        self.apply_counting(tid, counting).map_err(Error::ptrace(pid, "patching a counting site"))
    }

    /// Count without a stop at the observer's counting sites (`jmp`s to their stubs), or stop
    /// at every hit (their `int3`s), in every process.
    pub(crate) fn set_counting(&mut self, on: bool) -> std::io::Result<()> {
        self.counting = on;
        let mut seen = HashSet::new();
        let tids: Vec<Tid> = self
            .procs
            .iter()
            .filter(|(_, p)| seen.insert(Rc::as_ptr(&p.breakpoints) as usize))
            .map(|(t, _)| *t)
            .collect();
        for tid in tids {
            self.apply_counting(tid, on)?;
        }
        Ok(())
    }

    /// Put the `jmp`s (`on`) or the `int3`s of the counting sites in `tid`'s address space.
    pub(crate) fn apply_counting(&mut self, tid: Tid, on: bool) -> std::io::Result<()> {
        let p = self.proc(tid);
        let pid = p.pid;
        for (&addr, bp) in p.breakpoints.borrow_mut().iter_mut() {
            let Some(site) = bp.count.as_mut() else { continue };
            if site.patched == on {
                continue;
            }
            if on {
                mem::write(pid, addr, &site.jmp)?;
            } else {
                let mut bytes = site.orig;
                bytes[0] = 0xcc;
                mem::write(pid, addr, &bytes)?;
            }
            site.patched = on;
        }
        Ok(())
    }

    pub(crate) fn counting_on(&self) -> bool {
        self.counting
    }

    /// The hits counted by the counting sites of `tid`'s address space (`None`: it has none).
    pub(crate) fn hits_counted(&self, tid: Tid) -> Option<u64> {
        let p = self.proc(tid);
        let data = p.breakpoints.borrow().values().find_map(|b| b.count.as_ref().map(|s| s.data))?;
        let mut word = [0u8; 8];
        mem::read(p.pid, data.count(), &mut word).ok().filter(|&n| n == 8)?;
        Some(u64::from_le_bytes(word))
    }

    /// Make the counting stubs of `tid`'s address space trap at hit `target` (counted from 1).
    pub(crate) fn set_hit_target(&mut self, tid: Tid, target: u64) -> std::io::Result<bool> {
        let p = self.proc(tid);
        let data = p.breakpoints.borrow().values().find_map(|b| b.count.as_ref().map(|s| s.data));
        let Some(data) = data else { return Ok(false) };
        mem::write(p.pid, data.target(), &target.to_le_bytes())?;
        Ok(true)
    }

    /// Plant the breakpoints the observer asked for after a call into it (see
    /// [`ReplayObserver::take_breakpoints`]), their instructions displaced into the room left in
    /// the object (executable, library) holding them.
    fn plant_requested(&mut self, tid: Tid) -> Result<(), Error> {
        let wanted = self.observer.take_breakpoints();
        if wanted.is_empty() {
            return Ok(());
        }
        let single_step = std::env::var_os("RDB_SINGLE_STEP").is_some_and(|v| v == "1");
        let p = self.proc(tid);
        let (pid, table) = (p.pid, Rc::as_ptr(&p.breakpoints) as usize);
        let maps = procfs::maps(pid).unwrap_or_default();
        for addr in wanted {
            let object = maps.iter().find(|m| m.contains(addr) && m.name.starts_with('/')).map(|m| m.name.clone());
            let key = (table, PathBuf::from(object.unwrap_or_default()));
            let mut slots = match self.slots.remove(&key) {
                Some(s) => s,
                None if single_step || key.1.as_os_str().is_empty() => displace::Slots::default(),
                None => {
                    let name = key.1.to_string_lossy();
                    let lowest = maps.iter().filter(|m| m.name == name).map(|m| m.start).min().unwrap_or(0);
                    displace::Slots::for_mapped(&key.1, lowest)
                }
            };
            let planted = self.plant(tid, addr, Some(&mut slots), single_step).map(|mut bp| bp.region = true);
            self.slots.insert(key, slots);
            planted.map_err(Error::Observer)?;
        }
        Ok(())
    }

    /// Plant a breakpoint at `addr` in `tid`'s address space (or find the one there) and
    /// return it. With `slots`, its instruction may be displaced there; without, a hit steps
    /// over it (or emulates a call); with `single_step`, a hit always steps over it.
    pub(crate) fn plant(
        &mut self,
        tid: Tid,
        addr: u64,
        slots: Option<&mut displace::Slots>,
        single_step: bool,
    ) -> Result<std::cell::RefMut<'_, Breakpoint>, String> {
        let p = &self.procs[&tid];
        let pid = p.pid;
        let table = p.breakpoints.clone();
        let stub = self.procs.values().filter(|q| Rc::ptr_eq(&q.breakpoints, &table)).find_map(|q| q.stub.as_ref());
        if let Some(stub) = stub.filter(|s| (s.pc..s.pc + 5).contains(&addr)) {
            return Err(format!(
                "cannot break at {addr:#x} now: the instruction at {:#x} is patched until a thread reaches the point where the recording interrupted it (go on a little first)",
                stub.pc
            ));
        }
        if !table.borrow().contains_key(&addr) {
            let mut code = [0u8; 16];
            let n = mem::read(pid, addr, &mut code).map_err(|e| format!("cannot read code at {addr:#x}: {e}"))?;
            if n == 0 {
                let exe = p.image.as_ref().map_or(String::new(), |i| format!(" in {}", i.exe.display()));
                return Err(format!("breakpoint address {addr:#x} is not mapped{exe}"));
            }
            let trapped = code[..2] == [0x0f, 0x31] || code[..3] == [0x0f, 0x01, 0xf9] || code[..2] == [0x0f, 0xa2];
            if code[..2] == [0x0f, 0x05] || trapped {
                return Err(format!("cannot break at {addr:#x}: it is a syscall, rdtsc or cpuid instruction"));
            }
            // Another breakpoint inside these bytes reads as 0xcc: put its byte back first.
            for (&at, bp) in table.borrow().range(addr + 1..addr + n as u64) {
                code[(at - addr) as usize] = bp.orig;
            }
            let free = slots.as_ref().and_then(|s| s.free());
            let mut prepared = displace::prepare(addr, &code[..n], free);
            if single_step {
                prepared.over = StepOver::Step;
            }
            if let StepOver::Displaced(at) = prepared.over {
                match slots {
                    Some(slots) if mem::write(pid, at, &prepared.slot_code).is_ok() => {
                        slots.take(prepared.slot_code.len() as u64)
                    }
                    _ => prepared.over = StepOver::Step,
                }
            }
            mem::write(pid, addr, &[0xcc]).map_err(|e| format!("cannot plant a breakpoint at {addr:#x}: {e}"))?;
            table.borrow_mut().insert(
                addr,
                Breakpoint { orig: code[0], over: prepared.over, region: false, user: false, count: None },
            );
        }
        let table = &self.procs[&tid].breakpoints;
        Ok(std::cell::RefMut::map(table.borrow_mut(), |t| t.get_mut(&addr).expect("planted")))
    }

    /// Take out the breakpoint at `addr` of `tid`'s address space if nobody wants it any more.
    pub(crate) fn unplant_if_unused(&mut self, tid: Tid, addr: u64) -> std::io::Result<()> {
        let p = &self.procs[&tid];
        let mut table = p.breakpoints.borrow_mut();
        if let Some(bp) = table.get(&addr) {
            if !bp.region && !bp.user {
                mem::write(p.pid, addr, &[bp.orig])?;
                table.remove(&addr);
            }
        }
        Ok(())
    }

    /// Call the observer at a syscall stop it asked for, when the stop is the recorded `event`'s
    /// (at trace index `index`; anything else is a divergence, reported by the caller).
    fn observe_syscall(
        &mut self,
        tid: Tid,
        nr: u64,
        args: [u64; 6],
        (index, event): (u64, &Event),
        exit: bool,
        regs: ptrace::Regs,
    ) -> Result<(), Error> {
        let policy = syscalls::policy(nr);
        // At the entry of a `clone`/`fork` the thread's next event is the new process or
        // thread; the call's own record comes after it.
        let following;
        let event = match event {
            Event::NewProcess { .. } if !exit => {
                following = self.ev.nth_of(tid, 1)?.cloned();
                match &following {
                    Some(e) => e,
                    None => return Ok(()),
                }
            }
            e => e,
        };
        let (result, writes, file) = match event {
            Event::Syscall { nr: rnr, args: rargs, ret, writes, file, .. } => {
                let n = syscalls::nargs(nr);
                if *rnr != nr || rargs[..n] != args[..n] {
                    return Ok(());
                }
                (*ret, writes.as_slice(), file.as_ref())
            }
            Event::Exec { .. } if policy == Policy::Exec => (0, &[][..], None),
            Event::Exit { .. } if policy == Policy::Exit => (0, &[][..], None),
            _ => return Ok(()),
        };
        let mapped_file = file.map(|f| PathBuf::from(OsStr::from_bytes(&f.path)));
        let p = self.proc(tid);
        let (pid, process) = (p.pid, p.group);
        let image = self.image_of(tid);
        let stop = crate::observer::SyscallStop {
            tid,
            pid,
            process,
            nr,
            args,
            event: index,
            exit,
            result,
            writes,
            mapped_file,
            regs,
            image: &image,
        };
        self.observer.on_syscall(&stop).map_err(Error::Observer)?;
        self.plant_requested(tid)?;
        self.arm_requested(tid)
    }

    /// A region's location reached by `tid`: the observer runs there, unless this point of
    /// the recorded execution ran it already (going back and forth replays it again: the
    /// high-water mark keeps region output and debug-only state from seeing it twice).
    fn region_arrival(&mut self, tid: Tid, addr: u64, regs: &ptrace::Regs) -> Result<(), Error> {
        let p = self.proc_mut(tid);
        p.region_hits += 1;
        let point = (p.stretch, p.region_hits);
        let mark = self.marks.regions.entry(tid).or_insert((0, 0));
        if point <= *mark {
            return Ok(());
        }
        *mark = point;
        self.call_observer(tid, addr, regs)
    }

    /// The executable image a stop of `tid` is reported with (an empty one before its exec
    /// was seen).
    fn image_of(&self, tid: Tid) -> ProcessImage {
        let p = self.proc(tid);
        p.image.clone().unwrap_or(ProcessImage {
            tid,
            pid: p.pid,
            exe: PathBuf::new(),
            file: PathBuf::new(),
            load_bias: 0,
        })
    }

    /// Call the observer at a breakpoint it asked for.
    fn call_observer(&mut self, tid: Tid, addr: u64, regs: &ptrace::Regs) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let image = self.image_of(tid);
        let stretch = self.proc(tid).stretch;
        let counted =
            self.counting && self.proc(tid).breakpoints.borrow().get(&addr).is_some_and(|b| b.count.is_some());
        let hit = if counted { self.hits_counted(tid) } else { None };
        let stop = BreakpointStop { tid, pid, addr, stretch, regs: *regs, image: &image, hit };
        self.observer.on_breakpoint(&stop).map_err(Error::Observer)?;
        self.plant_requested(tid)?;
        self.arm_requested(tid)?;
        self.protect_pending(tid)
    }

    /// A breakpoint stop: run the observer, halt for a debugger, or carry on past the
    /// instruction. Returns a stop for the main loop when stepping the instruction raised a
    /// signal.
    fn hit_breakpoint(&mut self, tid: Tid, addr: u64, mut regs: ptrace::Regs) -> Result<Option<Stop>, Error> {
        regs.rip = addr;
        self.hits += 1;
        self.ev.progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let bp = self.proc(tid).breakpoints.borrow()[&addr].clone();
        if bp.region {
            self.region_arrival(tid, addr, &regs)?;
        }
        if let Some(stop) = self.on_trap(tid, addr, bp.user) {
            let pid = self.proc(tid).pid;
            ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewinding to the breakpoint"))?;
            self.dbg.halt(tid, HaltKind::InCode, stop);
            return Ok(None);
        }
        if bp.user && self.dbg.observed.is_some() && self.auto.candidate_due() {
            // Going back looks for the last of these points: a checkpoint here makes going to
            // it cheap.
            let pid = self.proc(tid).pid;
            ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewinding to the breakpoint"))?;
            self.candidate_checkpoint(tid);
        }
        self.step_over(tid, addr, regs, &bp)
    }

    /// Carry on past the instruction under a breakpoint at `addr` (the thread stands there,
    /// its `int3` consumed or not yet run) without a stop at the breakpoint.
    pub(crate) fn step_over(
        &mut self,
        tid: Tid,
        addr: u64,
        mut regs: ptrace::Regs,
        bp: &Breakpoint,
    ) -> Result<Option<Stop>, Error> {
        let pid = self.proc(tid).pid;
        match &bp.over {
            StepOver::Displaced(slot) => {
                // The instruction's copy ends with a jump back: no second stop.
                regs.rip = *slot;
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "resuming at a displaced instruction"))?;
                self.go(pid, 0, "resuming")?;
                return Ok(None);
            }
            StepOver::Call(instr) => {
                let read = |at: u64| {
                    let mut b = [0u8; 8];
                    matches!(mem::read(pid, at, &mut b), Ok(8)).then(|| u64::from_le_bytes(b))
                };
                if let Some((ret, target)) = displace::emulate_call(instr, &regs, read) {
                    let sp = regs.rsp.wrapping_sub(8);
                    if mem::write(pid, sp, &ret.to_le_bytes()).is_ok() {
                        regs.rsp = sp;
                        regs.rip = target;
                        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "emulating a call"))?;
                        self.go(pid, 0, "resuming")?;
                        return Ok(None);
                    }
                }
                // An unreadable operand or stack: let the CPU run it and fault as it would.
            }
            StepOver::Step => {}
        }
        match self.step_lifted(tid, addr, regs, bp.orig)? {
            Stepped::Done => {
                self.go(pid, 0, "resuming")?;
                Ok(None)
            }
            Stepped::Fault(stop) => Ok(Some(stop)),
            Stepped::Gone => Ok(None),
        }
    }

    /// Run the one instruction at `addr` with its breakpoint lifted, then put the breakpoint
    /// back. The thread stands at `addr` with registers `regs`.
    pub(crate) fn step_lifted(&mut self, tid: Tid, addr: u64, regs: ptrace::Regs, orig: u8) -> Result<Stepped, Error> {
        let pid = self.proc(tid).pid;
        self.steps += 1;
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewinding to the breakpoint"))?;
        mem::write(pid, addr, &[orig]).map_err(Error::ptrace(pid, "lifting a breakpoint"))?;
        let mut protected_write = None;
        loop {
            ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "stepping over a breakpoint"))?;
            match ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "stepping over a breakpoint"))? {
                Wait::Stopped { sig: libc::SIGTRAP, .. } => break,
                Wait::Stopped { sig, .. } => {
                    if let Some(at) = self.lift_for_page_write(tid, sig)? {
                        protected_write = protected_write.or(Some(at)); // a watched page: step again
                        continue;
                    }
                    if ptrace::get_siginfo(pid).is_ok_and(|info| is_synchronous(sig, si_code(&info))) {
                        // The instruction faulted (and had no effect): the breakpoint goes
                        // back, and the signal takes its recorded course.
                        mem::write(pid, addr, &[0xcc]).map_err(Error::ptrace(pid, "re-planting a breakpoint"))?;
                        self.reprotect_lifted(tid)?;
                        return Ok(Stepped::Fault(Stop::Signal { sig, tsc: None }));
                    }
                    // A stray signal of the replay world: drop it.
                }
                w => {
                    self.on_gone(tid, w.raw_exit_status())?;
                    return Ok(Stepped::Gone);
                }
            }
        }
        mem::write(pid, addr, &[0xcc]).map_err(Error::ptrace(pid, "re-planting a breakpoint"))?;
        if let Some(at) = protected_write {
            self.after_protected_write(tid, at)?;
        } else if self.observer_watch.contains_key(&self.proc(tid).group) {
            // The stepped instruction may have accessed watched memory.
            let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            self.observer_watch_hits(tid, &regs)?;
        }
        Ok(Stepped::Done)
    }

    /// The watchpoints that fired in `tid`, when the debugged process has any armed.
    pub(crate) fn take_watch_hits(&mut self, tid: Tid) -> Result<u8, Error> {
        let p = self.proc(tid);
        if self.dbg.focus != Some(p.group) || self.dbg.watch.iter().all(Option::is_none) {
            return Ok(0);
        }
        let pid = p.pid;
        let mine = self.dbg.watch.iter().enumerate().filter(|(_, w)| w.is_some()).fold(0u8, |m, (i, _)| m | 1 << i);
        let hits =
            rdb_tracee::debugreg::take_hits(pid).map_err(Error::ptrace(pid, "reading the debug status register"))?;
        Ok(hits & mine)
    }

    /// Runs the observer for its watchpoints that fired in `tid` (standing right after the
    /// accessing instruction with registers `regs`); whether some did. The debug status bits
    /// of a debugger's watchpoints are left for [`Replayer::take_watch_hits`].
    pub(crate) fn observer_watch_hits(&mut self, tid: Tid, regs: &ptrace::Regs) -> Result<bool, Error> {
        let p = self.proc(tid);
        let Some(armed) = self.observer_watch.get(&p.group) else { return Ok(false) };
        let mine = armed.iter().enumerate().filter(|(_, w)| w.is_some()).fold(0u8, |m, (i, _)| m | 1 << i);
        if mine == 0 {
            return Ok(false);
        }
        let pid = p.pid;
        let hits =
            rdb_tracee::debugreg::take_hits(pid).map_err(Error::ptrace(pid, "reading the debug status register"))?;
        let others = hits & !mine;
        if others != 0 {
            // A debugger's: put its bits back for `take_watch_hits`.
            ptrace::poke_user(pid, rdb_tracee::debugreg::status_offset(), others as u64)
                .map_err(Error::ptrace(pid, "restoring the debug status register"))?;
        }
        if hits & mine == 0 {
            return Ok(false);
        }
        let image = self.image_of(tid);
        let stretch = self.proc(tid).stretch;
        let stop = BreakpointStop { tid, pid, addr: regs.rip, stretch, regs: *regs, image: &image, hit: None };
        self.observer.on_watchpoint(&stop, hits & mine).map_err(Error::Observer)?;
        self.plant_requested(tid)?;
        self.arm_requested(tid)?;
        self.protect_pending(tid)?;
        Ok(true)
    }

    /// Arms or disarms the debug registers the observer asked for in every thread of `tid`'s
    /// process (see [`ReplayObserver::take_watchpoints`]).
    fn arm_requested(&mut self, tid: Tid) -> Result<(), Error> {
        self.take_page_watches(tid);
        let wanted = self.observer.take_watchpoints();
        if wanted.is_empty() {
            return Ok(());
        }
        let group = self.proc(tid).group;
        for (slot, w) in wanted {
            if slot >= debugreg::SLOTS {
                return Err(Error::Observer(format!("no debug register slot {slot}")));
            }
            if w.is_some() && self.dbg.focus == Some(group) && self.dbg.watch[slot].is_some() {
                // Not an error that ends the replay: the debug module's watch goes unarmed, and
                // the user is told.
                eprintln!(
                    "rdb: warning: a watch of the debug module (an on_write/on_read callback or rdb::watch) needs debug register {slot}, which a debugger's watchpoint holds: it is not armed, and its accesses are not reported (rdb's watches and a debugger's share the 4 registers: delete a watchpoint)"
                );
                continue;
            }
            self.observer_watch.entry(group).or_insert([None; debugreg::SLOTS])[slot] = w;
        }
        let threads: Vec<Tid> = self.procs.iter().filter(|(_, p)| p.group == group).map(|(t, _)| *t).collect();
        for t in threads {
            if self.proc(t).running {
                self.dr_stale.insert(t);
            } else {
                self.sync_debug_registers(t)?;
            }
        }
        Ok(())
    }

    /// The debug registers the observer asked for in a new process (`child`, its only thread,
    /// `stopped` when it is in a ptrace stop now; otherwise armed at its first stop).
    fn arm_requested_in_new_process(&mut self, child: Tid, stopped: bool) -> Result<(), Error> {
        self.take_page_watches(child);
        let wanted = self.observer.take_watchpoints();
        if wanted.is_empty() {
            return Ok(());
        }
        let group = self.proc(child).group;
        for (slot, w) in wanted {
            if slot >= debugreg::SLOTS {
                return Err(Error::Observer(format!("no debug register slot {slot}")));
            }
            self.observer_watch.entry(group).or_insert([None; debugreg::SLOTS])[slot] = w;
        }
        if stopped {
            self.sync_debug_registers(child)
        } else {
            self.dr_stale.insert(child);
            Ok(())
        }
    }

    /// Puts the observer's watchpoints of `tid`'s process into its debug registers (slots
    /// without one are left to a debugger).
    fn sync_debug_registers(&mut self, tid: Tid) -> Result<(), Error> {
        let p = self.proc(tid);
        let Some(armed) = self.observer_watch.get(&p.group).copied() else { return Ok(()) };
        let pid = p.pid;
        let debugger = if self.dbg.focus == Some(p.group) { self.dbg.watch } else { [None; debugreg::SLOTS] };
        for (slot, w) in armed.iter().enumerate() {
            let point = slot == interrupt::REPLAY_SLOT && p.point.is_some();
            let result = match (w, debugger[slot]) {
                (Some(w), _) => debugreg::set_watchpoint(pid, slot, *w),
                (None, None) if !point => debugreg::clear_watchpoint(pid, slot),
                (None, None) => Ok(()),
                (None, Some(_)) => Ok(()),
            };
            result.map_err(Error::ptrace(pid, "setting a debug register"))?;
        }
        Ok(())
    }

    /// A debugger's single step of `tid` ended at `regs.rip`: halt there. A region whose
    /// location the step arrived at runs now, as at every arrival.
    pub(crate) fn step_done(&mut self, tid: Tid, regs: ptrace::Regs, slots: u8) -> Result<(), Error> {
        self.dbg.stepping = None;
        let region = self.proc(tid).breakpoints.borrow().get(&regs.rip).is_some_and(|bp| bp.region);
        if region {
            self.hits += 1;
            self.region_arrival(tid, regs.rip, &regs)?;
        }
        // A step that fired a watchpoint halts for the watchpoint (outside a goal).
        self.dbg.last_step_slots = slots;
        let stop = match self.on_triggers(tid, slots) {
            Some(SessionStop::Reached { tid }) => SessionStop::Reached { tid },
            Some(watch) if !self.dbg.quiet => watch,
            _ => {
                self.on_step(tid);
                SessionStop::Stepped { tid }
            }
        };
        self.dbg.halt(tid, HaltKind::InCode, stop);
        Ok(())
    }

    fn on_fork(&mut self, tid: Tid, child_pid: Pid) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        let Event::NewProcess { child, flags, .. } = ev else {
            return Err(self.divergence(tid, ev.describe(), "a new process".into()));
        };
        let thread = flags & libc::CLONE_THREAD as u64 != 0;
        let parent = self.proc(tid);
        let breakpoints = if flags & libc::CLONE_VM as u64 != 0 {
            parent.breakpoints.clone()
        } else {
            Rc::new(RefCell::new(parent.breakpoints.borrow().clone()))
        };
        // A thread keeps its process's image (`tid` names the process); a new process is its
        // own.
        let image = parent.image.clone().map(|mut i| {
            if !thread {
                i.tid = child;
            }
            i.pid = child_pid;
            i
        });
        let parent_image = parent.image.clone();
        let group = if thread { parent.group } else { child };
        let parent_group = parent.group;
        let entry = parent.entry.as_ref().map(|(nr, args, _)| (*nr, *args));
        // A child of a process holding shared memory shares it: like a thread, it waits for its
        // first turn in the unit (`ThreadStart`), as it did while recording.
        // Not a vfork child: its parent waits in the kernel until it execs or exits.
        let vfork = flags & libc::CLONE_VFORK as u64 != 0;
        let joins_unit = !thread && !vfork && self.units.fork(parent_group, child).is_some();
        let waits_for_turn = thread || joins_unit;
        let parent = self.proc(tid);
        let mut proc = Proc::new(child_pid, group, !waits_for_turn, waits_for_turn, breakpoints, image);
        proc.auxv = parent.auxv.clone();
        proc.objects = parent.objects.clone();
        proc.stretch = self.ev.index + 1;
        // The kernel clears the alternate signal stack of a thread sharing the address space.
        proc.altstack = if flags & libc::CLONE_VM as u64 != 0 { None } else { parent.altstack };
        if flags & libc::CLONE_CHILD_CLEARTID as u64 != 0 {
            proc.clear_tid = entry.map_or(0, |(nr, args)| self.clone_child_tid(pid, nr, &args));
        }
        self.procs.insert(child, proc);
        self.by_pid.insert(child_pid, child);
        self.ev.pop()?;
        let mut started = self.early_children.remove(&child_pid);
        // The flags of a `clone` made without its exit signal, for the child's registers.
        let quieted =
            entry.filter(|(nr, a)| *nr == Sysno::clone as u64 && quiet_clone(a[0]) != a[0]).map(|(_, a)| a[0]);
        if !thread && !started && (joins_unit || quieted.is_some()) {
            match ptrace::wait_pid(child_pid).map_err(Error::ptrace(child_pid, "waiting for a new process"))? {
                Wait::Stopped { .. } => started = true,
                w => return Err(self.divergence(child, "a new process".into(), describe_status(w.raw_exit_status()))),
            }
        }
        if let Some(flags) = quieted.filter(|_| !thread) {
            let mut regs = ptrace::get_regs(child_pid).map_err(Error::ptrace(child_pid, "reading registers"))?;
            regs.rdi = flags;
            ptrace::set_regs(child_pid, &regs).map_err(Error::ptrace(child_pid, "restoring clone's flags"))?;
        }
        if thread {
            // The thread waits at its first stop for its `ThreadStart` event. The kernel wrote
            // its real id where the program asked; the program must see the recorded one.
            if !started {
                match ptrace::wait_pid(child_pid).map_err(Error::ptrace(child_pid, "waiting for a new thread"))? {
                    Wait::Stopped { .. } => {}
                    w => {
                        return Err(self.divergence(child, "a new thread".into(), describe_status(w.raw_exit_status())))
                    }
                }
            }
            if let Some((nr, args)) = entry {
                self.write_tid_words(pid, child, flags, nr, &args)?;
            }
        } else {
            if let (Some(parent), Some(image)) = (&parent_image, &self.proc(child).image) {
                // The observer's per-process state (and its debug registers, which a fork does
                // not inherit) for the copy of the parent.
                let image = image.clone();
                self.pages_forked(self.proc(tid).group, self.proc(child).group);
                self.observer.on_fork(parent, &image);
                self.arm_requested_in_new_process(child, started)?;
            }
            if started && !joins_unit {
                self.go(child_pid, 0, "starting child")?;
            }
        }
        if thread && self.observer_watch.contains_key(&self.proc(child).group) {
            self.sync_debug_registers(child)?;
        }
        if thread && self.dbg.focus == Some(self.proc(child).group) {
            // Debug registers are not inherited: arm the debugged process's watchpoints.
            for (slot, w) in self.dbg.watch.iter().enumerate() {
                if let Some(w) = w {
                    debugreg::set_watchpoint(child_pid, slot, *w)
                        .map_err(Error::ptrace(child_pid, "arming a watchpoint in a new thread"))?;
                }
            }
        }
        self.go(pid, 0, "resuming")
    }

    /// The child-tid pointer of a `clone`/`clone3` call.
    fn clone_child_tid(&self, pid: Pid, nr: u64, args: &[u64; 6]) -> u64 {
        if nr == Sysno::clone3 as u64 {
            let mut b = [0u8; 8];
            return mem::read_exact(pid, args[0] + 16, &mut b).map_or(0, |()| u64::from_le_bytes(b));
        }
        args[3]
    }

    /// Put the recorded thread id where `CLONE_PARENT_SETTID` / `CLONE_CHILD_SETTID` made the
    /// kernel store the real one.
    fn write_tid_words(&mut self, pid: Pid, child: Tid, flags: u64, nr: u64, args: &[u64; 6]) -> Result<(), Error> {
        let (ctid, ptid) = if nr == Sysno::clone3 as u64 {
            let mut b = [0u8; 32];
            mem::read(pid, args[0], &mut b).map_err(Error::ptrace(pid, "reading clone3 args"))?;
            let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
            (word(16), word(24))
        } else {
            (args[3], args[2])
        };
        let id = child.0.to_le_bytes();
        if flags & libc::CLONE_PARENT_SETTID as u64 != 0 && ptid != 0 {
            mem::write(pid, ptid, &id).map_err(Error::ptrace(pid, "writing the thread id"))?;
        }
        if flags & libc::CLONE_CHILD_SETTID as u64 != 0 && ctid != 0 {
            mem::write(pid, ctid, &id).map_err(Error::ptrace(pid, "writing the thread id"))?;
        }
        Ok(())
    }

    fn on_signal(&mut self, tid: Tid, sig: i32, tsc: Option<Emulated>) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        match (&ev, tsc) {
            (Event::Cpuid { leaf, subleaf, result, .. }, Some(Emulated::Cpuid(l, s)))
                if (*leaf, *subleaf) == (l, s) =>
            {
                let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                cpuid::finish(&mut regs, *result);
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "emulating cpuid"))?;
                self.ev.pop()?;
                self.resume_user(tid, 0, "resuming")
            }
            (Event::Rdtsc { rax, rdx, rcx, .. }, Some(Emulated::Tsc(len, _))) => {
                let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                process::finish_tsc(&mut regs, len, *rax, *rdx, *rcx);
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "emulating rdtsc"))?;
                self.ev.pop()?;
                self.resume_user(tid, 0, "resuming")
            }
            (Event::Signal { sig: rsig, siginfo, .. }, _) if *rsig == sig => {
                if self.proc(tid).injecting == Some(sig) {
                    if let Ok(info) = <ptrace::SigInfo>::try_from(siginfo.as_slice()) {
                        ptrace::set_siginfo(pid, &info).map_err(Error::ptrace(pid, "setting siginfo"))?;
                    }
                    self.procs.get_mut(&tid).expect("known").injecting = None;
                }
                self.ev.pop()?;
                // Another asynchronous signal recorded right behind this one (no syscall in
                // between: this one was ignored) is made pending now, so the kernel delivers
                // it next, as it did while recording.
                if let Some(Event::Signal { sig: next, asynchronous: true, .. }) = self.ev.next_of(tid)? {
                    let next = *next;
                    self.signal_thread(tid, next).map_err(Error::ptrace(pid, "queueing a signal"))?;
                    self.procs.get_mut(&tid).expect("known").injecting = Some(next);
                }
                self.resume_user(tid, sig, "delivering a signal")
            }
            _ => {
                let actual = match tsc {
                    Some(Emulated::Tsc(..)) => "rdtsc".to_string(),
                    Some(Emulated::Cpuid(leaf, subleaf)) => format!("cpuid leaf {leaf:#x} subleaf {subleaf:#x}"),
                    None => format!("signal {}", trace::event::signal_name(sig)),
                };
                Err(self.divergence(tid, ev.describe(), actual))
            }
        }
    }

    fn on_gone(&mut self, tid: Tid, status: i32) -> Result<(), Error> {
        // The end of a cut-short trace: nothing more to check.
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        match ev {
            Event::Exit { status: rstatus, .. } if rstatus == status => {
                self.ev.pop()?;
                let p = self.procs.remove(&tid).expect("known");
                self.by_pid.remove(&p.pid);
                if !self.procs.values().any(|q| q.group == p.group) {
                    self.units.leave(p.group);
                }
                if tid == self.root {
                    self.root_status = Some(status);
                }
                if self.dbg.focus == Some(p.group) && !self.procs.values().any(|q| q.group == p.group) {
                    self.dbg.halted = None;
                    self.dbg.pending = Some(SessionStop::ProcessExited { process: p.group, status });
                }
                Ok(())
            }
            other => Err(self.divergence(tid, other.describe(), describe_status(status))),
        }
    }
}

/// The flags a replayed `clone` of a process runs with: without its exit signal (`CSIGNAL`).
/// The program never sees the replay's own `SIGCHLD`s (its recorded ones come from the trace,
/// and `wait4` is emulated), but a real one pending as a later `fork` begins makes the kernel
/// give that fork up (`-ERESTARTNOINTR`), and one pending in a re-executed `rt_sigsuspend`
/// wakes it: a replayed child that signals nobody leaves the replayed parent alone. (A
/// thread's `clone` has no exit signal.)
fn quiet_clone(flags: u64) -> u64 {
    if flags & libc::CLONE_THREAD as u64 != 0 {
        return flags;
    }
    flags & !(libc::CSIGNAL as u64)
}

/// The auxiliary vector at the start of `stack` (pairs of words up to and including `AT_NULL`).
fn auxv_bytes(stack: &[u8]) -> Vec<u8> {
    let mut end = 0;
    while end + 16 <= stack.len() {
        let key = u64::from_le_bytes(stack[end..end + 8].try_into().expect("8 bytes"));
        end += 16;
        if key == 0 {
            break;
        }
    }
    stack[..end].to_vec()
}

/// The temporary signal mask (pointer, size) a syscall installs while it waits, if any (the
/// table's [`Mask`]: `ppoll`, `pselect6`, `epoll_pwait(2)`).
fn mask_argument(pid: Pid, nr: u64, args: &[u64; 6]) -> Option<(u64, u64)> {
    let (ptr, size) = match syscalls::lookup(nr)?.mask? {
        Mask::Args(ptr, size) => (args[ptr as usize], args[size as usize]),
        Mask::Pselect6(arg) => {
            // The argument points to { const sigset_t *ss; size_t ss_len; }.
            if args[arg as usize] == 0 {
                return None;
            }
            let mut b = [0u8; 16];
            if mem::read(pid, args[arg as usize], &mut b).ok()? != 16 {
                return None;
            }
            (u64::from_le_bytes(b[..8].try_into().ok()?), u64::from_le_bytes(b[8..].try_into().ok()?))
        }
    };
    (ptr != 0).then_some((ptr, size))
}
