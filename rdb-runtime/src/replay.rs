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
use rdb_tracee::{mem, procfs, this_process as sys, Pid};

use crate::displace::{self, StepOver};
use crate::observer::{BreakpointStop, ProcessImage, ReplayObserver};
use crate::process;
use crate::syscalls::{self, Mask, Policy, Sysno};
use crate::trace::{self, event::describe_status, files::ReplayFiles, Event, EventReader, MappedFile, Tid, Trace};
use crate::Error;

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
enum Stop {
    Entry { nr: u64, args: [u64; 6], pc: u64 },
    Exit { ret: i64 },
    Fork { child: Pid },
    Signal { sig: i32, tsc: Option<(usize, bool)> },
    Gone { status: i32 },
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

/// A planted breakpoint: the byte the `int3` replaced and how to run its instruction.
#[derive(Debug, Clone)]
struct Breakpoint {
    orig: u8,
    over: StepOver,
}

type Breakpoints = Rc<RefCell<BTreeMap<u64, Breakpoint>>>;

struct Proc {
    pid: Pid,
    /// Recorded id of the thread group (process) the thread belongs to.
    group: Tid,
    /// Resumed into user code or into a re-executed syscall: while it is, no other thread of
    /// its group may be resumed into user code.
    user: bool,
    /// A new thread stopped at its first stop, waiting for its `ThreadStart` event.
    unstarted: bool,
    entry: Option<(u64, [u64; 6], Mode)>,
    /// Signal we injected and whose delivery stop we await.
    injecting: Option<i32>,
    breakpoints: Breakpoints,
    image: Option<ProcessImage>,
    killed: bool,
}

/// Events read ahead of the current position (needed to see a process's next event).
struct Events {
    reader: EventReader,
    /// Bumped at every event consumed and breakpoint hit (see `stall`).
    progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
    buf: VecDeque<Event>,
    index: u64,
    exhausted: bool,
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
        Ok(self.buf.front())
    }
    fn pop(&mut self) -> Result<Event, Error> {
        self.fill(1)?;
        self.index += 1;
        self.progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.buf.pop_front().expect("pop after head"))
    }
    /// The next event of `tid`, looking ahead (bounded).
    fn next_of(&mut self, tid: Tid) -> Result<Option<&Event>, Error> {
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
    fn next_of_indexed(&mut self, tid: Tid) -> Result<Option<(u64, &Event)>, Error> {
        let mut i = 0;
        loop {
            self.fill(i + 1)?;
            match self.buf.get(i) {
                None => return Ok(None),
                Some(e) if e.tid() == tid => return Ok(self.buf.get(i).map(|e| (self.index + i as u64, e))),
                Some(_) => i += 1,
            }
            if i > 100_000 {
                return Ok(None);
            }
        }
    }
}

struct Replayer<'o> {
    ev: Events,
    procs: HashMap<Tid, Proc>,
    by_pid: HashMap<Pid, Tid>,
    parked: HashMap<Tid, Stop>,
    early_children: HashSet<Pid>,
    /// The files the trace names: its kept copies, else the originals, checked.
    files: ReplayFiles,
    observer: &'o mut dyn ReplayObserver,
    echo: bool,
    root: Tid,
    root_status: Option<i32>,
    hits: u64,
    steps: u64,
    /// `RDB_DEBUG` set: log every stop (for debugging rdb itself).
    debug: bool,
}

/// Replay a trace.
pub fn replay(opts: &ReplayOptions, observer: &mut dyn ReplayObserver) -> Result<ReplayOutcome, Error> {
    let trace = Trace::open(&opts.trace_dir)?;
    let ends_early = trace.ends_early();
    let differences = trace::machine_differences(trace.header());
    if !differences.is_empty() {
        eprintln!(
            "rdb: warning: this machine differs from the one the trace was recorded on:\n  {}\n  cpuid cannot be trapped here and re-executed calls run on this kernel, so the replay may diverge",
            differences.join("\n  ")
        );
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
    let stall = crate::stall::StallWatch::start(recorded);
    let mut ev = Events {
        reader: trace.events()?,
        progress: stall.progress.clone(),
        buf: VecDeque::new(),
        index: 0,
        exhausted: false,
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
        files,
        observer,
        echo: opts.echo_output,
        root: tid,
        root_status: None,
        hits: 0,
        steps: 0,
        debug: std::env::var_os("RDB_DEBUG").is_some(),
    };
    r.procs.insert(
        tid,
        Proc {
            pid,
            group: tid,
            user: true,
            unstarted: false,
            entry: None,
            injecting: None,
            breakpoints: Rc::new(RefCell::new(BTreeMap::new())),
            image: None,
            killed: false,
        },
    );
    r.by_pid.insert(pid, tid);
    // The replayer's thread runs with the TSC disabled like the program (see
    // `sys::disable_tsc_for_this_thread`): switching between the two at every stop then needs no
    // control-register write, which the hypervisor traps.
    let tsc = sys::disable_tsc_for_this_thread().ok();
    let result = r.apply_exec(tid).and_then(|_| {
        r.notify_exec(tid)?;
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
        r.run()
    });
    drop(tsc);
    let result = match result {
        Err(_) if stall.fired() => {
            let expected = r.head_desc().unwrap_or_default();
            Err(Error::Divergence(Box::new(Divergence {
                index: r.ev.index,
                tid: r.ev.buf.front().map_or(tid, |e| e.tid()),
                pid: Pid(-1),
                expected,
                actual: format!(
                    "no progress for {} s: the program ran without reaching this event (it spins in user code on data the trace gave it: a damaged or crafted trace?) and was stopped",
                    stall.limit.as_secs()
                ),
                pc: 0,
                location: None,
            })))
        }
        other => other,
    };
    drop(stall);
    // Children that stopped before their fork event was handled are tracees too; one that
    // shows up only now (a stop, not an exit) is killed as well, or waiting for it would block
    // forever (seen replaying a crafted trace that diverged around a vfork).
    let leftover: Vec<Pid> = r.procs.values().map(|p| p.pid).chain(r.early_children.iter().copied()).collect();
    for p in &leftover {
        let _ = ptrace::kill(*p, libc::SIGKILL);
    }
    if !leftover.is_empty() {
        while let Ok(Some((pid, w))) = ptrace::wait_any() {
            if matches!(w, Wait::Stopped { .. }) {
                let _ = ptrace::kill(pid, libc::SIGKILL);
            }
        }
    }
    let _ = std::io::stdout().flush();
    result?;
    if ends_early {
        return Err(Error::EndsEarly { events: r.ev.index });
    }
    Ok(ReplayOutcome {
        events: r.ev.index,
        exit_status: r.root_status,
        breakpoint_hits: r.hits,
        breakpoint_steps: r.steps,
    })
}

/// Handling the stop lets the thread run user code.
fn resumes_user_code(stop: &Stop) -> bool {
    matches!(stop, Stop::Exit { .. } | Stop::Signal { .. })
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

    fn run(&mut self) -> Result<(), Error> {
        loop {
            let head_tid = match self.ev.head()? {
                Some(e) => e.tid(),
                None => return Ok(()),
            };
            let busy = self.group_busy(head_tid);
            match self.parked.get(&head_tid) {
                // Its turn comes when no other thread of its group runs user code.
                Some(stop) if busy && resumes_user_code(stop) => {}
                Some(_) => {
                    let stop = self.parked.remove(&head_tid).expect("parked");
                    self.handle(head_tid, stop)?;
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
                self.handle(tid, stop)?;
            } else {
                self.parked.insert(tid, stop);
            }
        }
    }

    /// Another thread of `tid`'s group is running user code.
    fn group_busy(&self, tid: Tid) -> bool {
        let Some(me) = self.procs.get(&tid) else { return false };
        self.procs.iter().any(|(t, p)| *t != tid && p.group == me.group && p.user)
    }

    /// Make `sig` pending for exactly this thread (not for any thread of its process).
    fn signal_thread(&self, tid: Tid, sig: i32) -> std::io::Result<()> {
        let p = self.proc(tid);
        let leader = self.procs.get(&p.group).map_or(p.pid, |l| l.pid);
        ptrace::tgkill(leader, p.pid, sig)
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
        p.user = true;
        let pid = p.pid;
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "starting a thread"))
    }

    /// Classify a stop; the thread is no longer running user code unless the stop is one
    /// handled on the spot (it is resumed where it was).
    fn classify(&mut self, pid: Pid, w: Wait) -> Result<Option<Stop>, Error> {
        let tid = self.by_pid.get(&pid).copied();
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
        let resume = |sig: i32| ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, "resuming"));
        if self.proc(tid).killed {
            resume(0)?;
            return Ok(None);
        }
        if sig == libc::SIGTRAP | 0x80 {
            let info = ptrace::syscall_info(pid).map_err(Error::ptrace(pid, "reading syscall info"))?;
            return Ok(match info.stop {
                SyscallStop::Entry { nr, args } => Some(Stop::Entry { nr, args, pc: info.pc }),
                SyscallStop::Exit { ret } => {
                    if self.proc(tid).entry.is_none() {
                        resume(0)?; // a new child returning from fork
                        None
                    } else {
                        Some(Stop::Exit { ret })
                    }
                }
                SyscallStop::Other => {
                    resume(0)?;
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
                    resume(0)?;
                    return Ok(None);
                }
                _ => {
                    resume(0)?;
                    return Ok(None);
                }
            }
        }
        if event != 0 {
            resume(0)?;
            return Ok(None);
        }
        if sig == libc::SIGTRAP {
            // Breakpoint hits first, with as few ptrace calls as possible (SIGTRAP is never
            // a group-stop, so no siginfo is needed to tell).
            let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            let addr = regs.rip.wrapping_sub(1);
            if self.proc(tid).breakpoints.borrow().contains_key(&addr) {
                return self.hit_breakpoint(tid, addr, regs);
            }
        }
        let Ok(info) = ptrace::get_siginfo(pid) else {
            resume(0)?; // group-stop
            return Ok(None);
        };
        let synchronous = is_synchronous(sig, si_code(&info));
        let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        if sig == libc::SIGSEGV {
            if let Some(tsc) = process::tsc_instruction(pid, regs.rip) {
                return Ok(Some(Stop::Signal { sig, tsc: Some(tsc) }));
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
        // recorded ones are injected from the trace instead.
        resume(0)?;
        Ok(None)
    }

    fn handle(&mut self, tid: Tid, stop: Stop) -> Result<(), Error> {
        match stop {
            Stop::Entry { nr, args, pc } => self.on_entry(tid, nr, args, pc),
            Stop::Exit { ret } => self.on_exit(tid, ret),
            Stop::Fork { child } => self.on_fork(tid, child),
            Stop::Signal { sig, tsc } => self.on_signal(tid, sig, tsc),
            Stop::Gone { status } => self.on_gone(tid, status),
        }
    }

    fn on_entry(&mut self, tid: Tid, nr: u64, args: [u64; 6], pc: u64) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
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
            Event::NewProcess { .. } if policy == Policy::NewProcess => Mode::ReExecuted,
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
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
        if leaving_thread {
            // Wait until the thread is really gone: the kernel clears its CLONE_CHILD_CLEARTID
            // word on the way out, and a joining thread may be scheduled next.
            loop {
                match ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "waiting for a thread to exit"))? {
                    Wait::Stopped { .. } => ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?,
                    w => {
                        self.parked.insert(tid, Stop::Gone { status: w.raw_exit_status() });
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn on_exit(&mut self, tid: Tid, real_ret: i64) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let (nr, args, mode) = self.procs.get_mut(&tid).expect("known").entry.take().expect("exit after entry");
        if matches!(mode, Mode::Exec) {
            if real_ret != 0 {
                let desc = self.head_desc()?;
                return Err(self.divergence(tid, desc, format!("execve failed with {real_ret}")));
            }
            self.apply_exec(tid)?;
        }
        // A recording killed right after an exec ends with the exec: the replay ends there.
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        let Event::Syscall { nr: rnr, args: rargs, ret, writes, output, .. } = &ev else {
            return Err(self.divergence(tid, ev.describe(), format!("end of syscall {}", syscalls::name(nr))));
        };
        let n = syscalls::nargs(nr);
        if *rnr != nr || rargs[..n] != args[..n] {
            return Err(self.divergence(tid, ev.describe(), format!("end of syscall {}", syscalls::name(nr))));
        }
        let ret = *ret;
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
                self.fill_mapping(tid, f, ret as u64, args[1], args[5])?;
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
        if self.echo {
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
            || Sysno::new(nr as usize).is_some_and(|c| syscalls::maps_a_file(c, &args))
        {
            // The argument registers were rewritten at entry; the program keeps its own.
            (regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9) =
                (args[0], args[1], args[2], args[3], args[4], args[5]);
        }
        // A call interrupted by a signal that another thread then took (a process-directed
        // signal wakes one thread, any thread may dequeue it): the kernel restarted it without
        // delivering anything. The restart codes never reach the program; redo the restart.
        const ERESTARTSYS: i64 = -512;
        const ERESTARTNOINTR: i64 = -513;
        const ERESTARTNOHAND: i64 = -514;
        const ERESTART_RESTARTBLOCK: i64 = -516;
        if matches!(ret, ERESTARTSYS | ERESTARTNOINTR | ERESTARTNOHAND | ERESTART_RESTARTBLOCK)
            && !matches!(self.ev.nth_of(tid, 1)?, Some(Event::Signal { asynchronous: true, .. }))
        {
            regs.rax = if ret == ERESTART_RESTARTBLOCK { Sysno::restart_syscall as u64 } else { nr };
            regs.rip -= 2;
        }
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "setting the result"))?;
        self.ev.pop()?;
        if matches!(mode, Mode::Exec) {
            self.notify_exec(tid)?;
        }
        let sig = match self.ev.next_of(tid)? {
            Some(Event::Signal { sig, asynchronous: true, .. }) => *sig,
            _ => 0,
        };
        if sig != 0 {
            self.procs.get_mut(&tid).expect("known").injecting = Some(sig);
        }
        // A suspended process already has its signal pending.
        let sig = if matches!(mode, Mode::Suspended) { 0 } else { sig };
        self.procs.get_mut(&tid).expect("known").user = true;
        ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, "resuming"))
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
        mem::write(pid, addr, &data).map_err(Error::ptrace(pid, "filling a mapping"))
    }

    /// Set up a freshly exec'ed image exactly as recorded: initial stack (argv, envp, auxv,
    /// random bytes) and stack pointer, `rdtsc` trapping.
    fn apply_exec(&mut self, tid: Tid) -> Result<(), Error> {
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
        self.procs.get_mut(&tid).expect("known").image = Some(image);
        self.ev.pop()?;
        Ok(())
    }

    /// Tell the observer about a new image and plant its breakpoints.
    fn notify_exec(&mut self, tid: Tid) -> Result<(), Error> {
        let p = &self.procs[&tid];
        let Some(image) = p.image.clone() else { return Ok(()) };
        let pid = p.pid;
        let bps = self.observer.on_exec(&image);
        if bps.is_empty() {
            return Ok(());
        }
        let table = p.breakpoints.clone();
        // Slots for displaced instructions (see `displace`), in the executable segments' tails.
        // RDB_SINGLE_STEP=1: step over every breakpoint the classic way (a check on `displace`).
        let single_step = std::env::var_os("RDB_SINGLE_STEP").is_some_and(|v| v == "1");
        let mut slots = if single_step {
            displace::Slots::default()
        } else {
            displace::Slots::for_image(&image.file, image.load_bias)
        };
        for addr in bps {
            let mut code = [0u8; 16];
            let n = mem::read(pid, addr, &mut code).map_err(Error::ptrace(pid, "reading breakpoint address"))?;
            if n == 0 {
                return Err(Error::Observer(format!(
                    "breakpoint address {addr:#x} is not mapped in {}",
                    image.exe.display()
                )));
            }
            if code[..2] == [0x0f, 0x05] || code[..2] == [0x0f, 0x31] || code[..3] == [0x0f, 0x01, 0xf9] {
                return Err(Error::Observer(format!(
                    "cannot break at {addr:#x}: it is a syscall or rdtsc instruction"
                )));
            }
            if table.borrow().contains_key(&addr) {
                continue;
            }
            // Another breakpoint inside these bytes reads as 0xcc: put its byte back first.
            for (&at, bp) in table.borrow().range(addr + 1..addr + n as u64) {
                code[(at - addr) as usize] = bp.orig;
            }
            let mut prepared = displace::prepare(addr, &code[..n], slots.free());
            if single_step {
                prepared.over = StepOver::Step;
            }
            if let StepOver::Displaced(at) = prepared.over {
                mem::write(pid, at, &prepared.slot_code)
                    .map_err(Error::ptrace(pid, "writing a displaced instruction"))?;
                slots.take(prepared.slot_code.len() as u64);
            }
            mem::write(pid, addr, &[0xcc]).map_err(Error::ptrace(pid, "planting a breakpoint"))?;
            table.borrow_mut().insert(addr, Breakpoint { orig: code[0], over: prepared.over });
        }
        Ok(())
    }

    /// A breakpoint stop: run the observer, then carry on past the instruction. Returns a
    /// stop for the main loop when stepping the instruction raised a signal.
    fn hit_breakpoint(&mut self, tid: Tid, addr: u64, mut regs: ptrace::Regs) -> Result<Option<Stop>, Error> {
        let pid = self.proc(tid).pid;
        regs.rip = addr;
        self.hits += 1;
        self.ev.progress.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let image = self.proc(tid).image.clone().unwrap_or(ProcessImage {
            tid,
            pid,
            exe: PathBuf::new(),
            file: PathBuf::new(),
            load_bias: 0,
        });
        let stop = BreakpointStop { tid, pid, addr, regs, image: &image };
        self.observer.on_breakpoint(&stop).map_err(Error::Observer)?;
        let bp = self.proc(tid).breakpoints.borrow()[&addr].clone();
        match bp.over {
            StepOver::Displaced(slot) => {
                // The instruction's copy ends with a jump back: no second stop.
                regs.rip = slot;
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "resuming at a displaced instruction"))?;
                ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
                return Ok(None);
            }
            StepOver::Call(instr) => {
                let read = |at: u64| {
                    let mut b = [0u8; 8];
                    matches!(mem::read(pid, at, &mut b), Ok(8)).then(|| u64::from_le_bytes(b))
                };
                if let Some((ret, target)) = displace::emulate_call(&instr, &regs, read) {
                    let sp = regs.rsp.wrapping_sub(8);
                    if mem::write(pid, sp, &ret.to_le_bytes()).is_ok() {
                        regs.rsp = sp;
                        regs.rip = target;
                        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "emulating a call"))?;
                        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
                        return Ok(None);
                    }
                }
                // An unreadable operand or stack: let the CPU run it and fault as it would.
            }
            StepOver::Step => {}
        }
        // Step over the original instruction, then put the breakpoint back.
        self.steps += 1;
        ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "rewinding to the breakpoint"))?;
        mem::write(pid, addr, &[bp.orig]).map_err(Error::ptrace(pid, "lifting a breakpoint"))?;
        loop {
            ptrace::single_step(pid, 0).map_err(Error::ptrace(pid, "stepping over a breakpoint"))?;
            match ptrace::wait_pid(pid).map_err(Error::ptrace(pid, "stepping over a breakpoint"))? {
                Wait::Stopped { sig: libc::SIGTRAP, .. } => break,
                Wait::Stopped { sig, .. } => {
                    if ptrace::get_siginfo(pid).is_ok_and(|info| is_synchronous(sig, si_code(&info))) {
                        // The instruction faulted (and had no effect): the breakpoint goes
                        // back, and the signal takes its recorded course.
                        mem::write(pid, addr, &[0xcc]).map_err(Error::ptrace(pid, "re-planting a breakpoint"))?;
                        return Ok(Some(Stop::Signal { sig, tsc: None }));
                    }
                    // A stray signal of the replay world: drop it.
                }
                w => return self.on_gone(tid, w.raw_exit_status()).map(|()| None),
            }
        }
        mem::write(pid, addr, &[0xcc]).map_err(Error::ptrace(pid, "re-planting a breakpoint"))?;
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))?;
        Ok(None)
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
        let image = parent.image.clone().map(|mut i| {
            i.tid = child;
            i.pid = child_pid;
            i
        });
        let group = if thread { parent.group } else { child };
        let entry = parent.entry.as_ref().map(|(nr, args, _)| (*nr, *args));
        self.procs.insert(
            child,
            Proc {
                pid: child_pid,
                group,
                user: !thread,
                unstarted: thread,
                entry: None,
                injecting: None,
                breakpoints,
                image,
                killed: false,
            },
        );
        self.by_pid.insert(child_pid, child);
        self.ev.pop()?;
        let started = self.early_children.remove(&child_pid);
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
        } else if started {
            ptrace::resume_syscall(child_pid, 0).map_err(Error::ptrace(child_pid, "starting child"))?;
        }
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))
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

    fn on_signal(&mut self, tid: Tid, sig: i32, tsc: Option<(usize, bool)>) -> Result<(), Error> {
        let pid = self.proc(tid).pid;
        let Some(ev) = self.ev.head()?.cloned() else { return Ok(()) };
        match (&ev, tsc) {
            (Event::Rdtsc { rax, rdx, rcx, .. }, Some((len, _))) => {
                let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                process::finish_tsc(&mut regs, len, *rax, *rdx, *rcx);
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "emulating rdtsc"))?;
                self.ev.pop()?;
                self.procs.get_mut(&tid).expect("known").user = true;
                ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))
            }
            (Event::Signal { sig: rsig, siginfo, .. }, _) if *rsig == sig => {
                if self.proc(tid).injecting == Some(sig) {
                    if let Ok(info) = <ptrace::SigInfo>::try_from(siginfo.as_slice()) {
                        ptrace::set_siginfo(pid, &info).map_err(Error::ptrace(pid, "setting siginfo"))?;
                    }
                    self.procs.get_mut(&tid).expect("known").injecting = None;
                }
                self.ev.pop()?;
                self.procs.get_mut(&tid).expect("known").user = true;
                // Another asynchronous signal recorded right behind this one (no syscall in
                // between: this one was ignored) is made pending now, so the kernel delivers
                // it next, as it did while recording.
                if let Some(Event::Signal { sig: next, asynchronous: true, .. }) = self.ev.next_of(tid)? {
                    let next = *next;
                    self.signal_thread(tid, next).map_err(Error::ptrace(pid, "queueing a signal"))?;
                    self.procs.get_mut(&tid).expect("known").injecting = Some(next);
                }
                ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, "delivering a signal"))
            }
            _ => {
                let actual = if tsc.is_some() {
                    "rdtsc".to_string()
                } else {
                    format!("signal {}", trace::event::signal_name(sig))
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
                if tid == self.root {
                    self.root_status = Some(status);
                }
                Ok(())
            }
            other => Err(self.divergence(tid, other.describe(), describe_status(status))),
        }
    }
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
