//! Watched values (`rdb find --watch NAME`): the statement after which a debug-only function of
//! a program static (`#[rdb_macros::watched(crate::jobs::QUEUE)] fn ordered(q: &Queue) -> bool`)
//! first gives another value, named by its instruction, source line and backtrace, as
//! `rdb find --expr` names a change.
//!
//! The function runs in the debug host like an event callback (its descriptor's event is
//! `watched`; `argv[0]` points to the static in the program's memory), and its value comes back
//! as the `Debug` text of a passing check. What it read is known from the host's mirror: the
//! host runs with one page per fill, asking the replayer for each page of the program it
//! touches ([`DebugHost::record_pages`]), and its mirror is made stale before each call, so the
//! pages asked for are the pages the call read. The search is one replay of the searched
//! process in which the observer protects those pages ([`ReplayObserver::take_page_watches`]):
//! at each write to them ([`ReplayObserver::on_page_write`], right after the writing
//! instruction) and at each system call exit whose recorded writes touch them
//! ([`ReplayObserver::on_syscall`]), the function is run again and the pages it read are
//! protected too. A function is deterministic over the memory it reads: while no byte it read
//! changes, it reads the same bytes and gives the same value; so the first write after which
//! its value differs is a write to a page it read at its last run, and is seen. The search stops
//! there (the session's interrupter halts the replay at its next event).
//!
//! Not seen: writes by another process into memory shared with this one, and memory the
//! function reads that is unmapped or mapped anew under it.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdb_descriptors::CallbackEvent;
use rdb_host::{ArgValue, DebugHost, HostOptions, MemoryAccess, ProgramBacktracer};
use rdb_runtime::trace::Tid;
use rdb_runtime::{
    BreakpointStop, ProcessImage, ReplayObserver, ReplayOptions, Resume, Session, SessionStop, SyscallStop,
};
use rdb_tracee::Target;

use crate::find::FindError;
use crate::find_expr::{function_symbols, writer, Change, Value};

/// What the search stops at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// The first value other than the one at the start.
    Changes,
    /// The first value `false` (a `fn(&T) -> bool`).
    FirstFalse,
}

/// A search for a watched value's first change.
pub struct WatchOptions {
    pub replay: ReplayOptions,
    /// The recorded executable, rebuilt by `cargo rdb build` with the watched function.
    pub binary: PathBuf,
    /// The watched function's name (`ordered`, `checks::ordered`): its path ends with it.
    pub name: String,
    pub mode: WatchMode,
    /// The recorded process to search in (default: the one the recording started).
    pub process: Option<Tid>,
    /// Set (from a signal handler) to stop the search.
    pub interrupt: &'static AtomicBool,
}

/// How a search ended.
pub struct WatchOutcome {
    /// The function's path and the static it is given.
    pub function: String,
    pub variable: String,
    /// Its value at the start (`Debug` text).
    pub initial: String,
    /// The change found (values as `Debug` text bytes).
    pub change: Option<Change>,
    /// Runs of the function, writes to its pages looked at, system calls looked at.
    pub evaluations: u64,
    pub page_writes: u64,
    pub syscalls: u64,
    /// Pages protected at the end.
    pub pages: usize,
    pub interrupted: bool,
    pub elapsed: Duration,
}

/// What the search and its observer share.
struct Shared {
    host: DebugHost,
    id: u32,
    name: String,
    /// The static's run-time address.
    static_at: u64,
    process: Option<Tid>,
    active: bool,
    mode: WatchMode,
    initial: String,
    last: String,
    /// Pages read by the function's runs (`(address, length)`), and those given to the replayer.
    read: Vec<(u64, u64)>,
    protected: Vec<(u64, u64)>,
    evaluations: u64,
    page_writes: u64,
    syscalls: u64,
    change: Option<Change>,
    binary: PathBuf,
    backtracer: ProgramBacktracer,
    functions: Vec<(u64, u64)>,
    bias: u64,
    halt: Option<Arc<AtomicBool>>,
}

impl Shared {
    /// Runs the function for the program as `target` shows it: its value; the pages it read are
    /// added to those to protect.
    fn evaluate(&mut self, target: &dyn Target) -> Result<String, String> {
        self.host.invalidate_mappings();
        self.host.take_pages();
        let call = self
            .host
            .invoke_callback(self.id, &[ArgValue::Address(self.static_at)], target)
            .map_err(|e| e.to_string())?;
        let checks = self.host.take_checks();
        for page in self.host.take_pages() {
            if !self.read.contains(&page) {
                self.read.push(page);
            }
        }
        self.evaluations += 1;
        if !call.is_clean() {
            return Err(format!("the watched function `{}` did not complete: {call}", self.name));
        }
        match checks.into_iter().find(|c| c.condition == "watched") {
            Some(c) => Ok(c.message),
            None => Err(format!("the watched function `{}` gave no value", self.name)),
        }
    }

    /// Whether `value` is what the search stops at.
    fn stops(&self, value: &str) -> bool {
        match self.mode {
            WatchMode::Changes => value != self.initial,
            WatchMode::FirstFalse => value == "false",
        }
    }

    /// Runs the function at a point where memory it read may have changed; the change when its
    /// value is the one searched for.
    fn look(
        &mut self,
        target: &dyn Target,
        tid: Tid,
        event: u64,
        at: (Option<u64>, Option<u64>),
    ) -> Result<(), String> {
        let now = self.evaluate(target)?;
        if now == self.last {
            return Ok(());
        }
        let old = std::mem::replace(&mut self.last, now.clone());
        if !self.stops(&now) {
            return Ok(());
        }
        let (instruction, syscall) = at;
        let bt = self.backtracer.backtrace(target, &self.binary, syscall.is_none());
        let frames = bt.frames();
        let function = frames.first().and_then(|f| f.function.clone()).unwrap_or_else(|| "??".into());
        let statement = frames
            .iter()
            .find(|f| f.file.as_deref().is_some_and(|p| !p.starts_with("/rustc/")) && f.line != 0)
            .or(frames.first());
        let (file, line) = statement.map_or((String::from("??"), 0), |f| (f.file.clone().unwrap_or_default(), f.line));
        self.change = Some(Change {
            number: 1,
            event,
            thread: tid,
            instruction,
            after: target.regs().rip,
            function,
            file,
            line,
            syscall: syscall.map(rdb_runtime::syscalls::name),
            old: Value::Bytes(old.into_bytes()),
            new: Value::Bytes(now.into_bytes()),
            backtrace: format!("{bt:#}"),
        });
        self.active = false;
        if let Some(h) = &self.halt {
            h.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    fn touches(&self, addr: u64, len: u64) -> bool {
        self.read.iter().any(|&(a, n)| addr < a.saturating_add(n) && a < addr.saturating_add(len))
    }
}

/// The observer: page protection over what the function read; system call exits.
struct Watching {
    shared: Rc<RefCell<Shared>>,
}

impl ReplayObserver for Watching {
    fn on_exec(&mut self, _image: &ProcessImage) -> Vec<u64> {
        Vec::new()
    }

    fn on_breakpoint(&mut self, _stop: &BreakpointStop<'_>) -> Result<(), String> {
        Ok(())
    }

    fn wants_syscall(&self, _nr: u64, exit: bool) -> bool {
        exit
    }

    fn take_page_watches(&mut self) -> Vec<(u64, u64)> {
        let mut s = self.shared.borrow_mut();
        if !s.active {
            return Vec::new();
        }
        let new: Vec<(u64, u64)> = s.read.iter().copied().filter(|r| !s.protected.contains(r)).collect();
        s.protected.extend(new.iter().copied());
        new
    }

    fn on_page_write(&mut self, stop: &BreakpointStop<'_>, _addr: u64) -> Result<(), String> {
        let mut s = self.shared.borrow_mut();
        if !s.active || s.process != Some(stop.image.tid) {
            return Ok(());
        }
        s.page_writes += 1;
        let at = writer(&s.functions, s.bias, stop, stop.regs.rip);
        s.look(stop, stop.tid, stop.stretch.saturating_sub(1), (at, None))
    }

    fn can_go_back(&self) -> Result<(), String> {
        Err("the page protection of `rdb find --watch` only follows the replay forwards".into())
    }

    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<(), String> {
        let mut s = self.shared.borrow_mut();
        if !s.active || s.process != Some(stop.process) {
            return Ok(());
        }
        s.syscalls += 1;
        if !stop.writes.iter().any(|w| s.touches(w.addr, w.bytes.len() as u64)) {
            return Ok(());
        }
        // The `syscall` instruction is the 2 bytes before `rip`.
        let at = stop.regs.rip.wrapping_sub(2);
        s.look(stop, stop.tid, stop.event, (Some(at), Some(stop.nr)))
    }
}

/// Runs the search (see the module docs).
pub fn find_watch(opts: WatchOptions) -> Result<WatchOutcome, FindError> {
    let started = Instant::now();
    crate::check_binary(&opts.replay.trace_dir, &opts.binary)?;
    let null = std::fs::File::create("/dev/null").map_err(FindError::Io)?;
    let mut host = DebugHost::for_binary(
        &opts.binary,
        HostOptions {
            stdout: Some(null),
            memory: MemoryAccess::ViaReplayer,
            pages_per_fill: 1,
            ..HostOptions::default()
        },
    )?;
    let watched: Vec<_> = host
        .callbacks()
        .filter_map(|c| match &c.event {
            CallbackEvent::Watched { variable, address, .. } => {
                Some((c.id, c.function.clone(), variable.clone(), *address))
            }
            _ => None,
        })
        .collect();
    let names = || watched.iter().map(|w| format!("`{}`", w.1)).collect::<Vec<_>>().join(", ");
    let matching: Vec<_> =
        watched.iter().filter(|w| w.1 == opts.name || w.1.ends_with(&format!("::{}", opts.name))).cloned().collect();
    let (id, function, variable, address) = match matching.as_slice() {
        [one] => one.clone(),
        [] if watched.is_empty() => {
            return Err(FindError::Usage(format!(
                "{} has no watched function (`#[debug_only] #[rdb_macros::watched(STATIC)] fn {}(v: &T) -> R`, built \
                 with `cargo rdb build`)",
                opts.binary.display(),
                opts.name
            )))
        }
        [] => {
            return Err(FindError::Usage(format!(
                "no watched function `{}` in {}: it has {}",
                opts.name,
                opts.binary.display(),
                names()
            )))
        }
        _ => return Err(FindError::Usage(format!("`{}` names several watched functions: {}", opts.name, names()))),
    };
    host.record_pages(true);
    let mut replay = opts.replay.clone();
    replay.echo_output = false;
    let shared = Rc::new(RefCell::new(Shared {
        host,
        id,
        name: function.clone(),
        static_at: 0,
        process: None,
        active: false,
        mode: opts.mode,
        initial: String::new(),
        last: String::new(),
        read: Vec::new(),
        protected: Vec::new(),
        evaluations: 0,
        page_writes: 0,
        syscalls: 0,
        change: None,
        binary: opts.binary.clone(),
        backtracer: ProgramBacktracer::default(),
        functions: function_symbols(&opts.binary),
        bias: 0,
        halt: None,
    }));
    let mut session = Session::start(&replay, Watching { shared: shared.clone() })?;
    let process = opts.process.unwrap_or(session.root());
    session.set_focus(Some(process));
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
    let image =
        session.image().ok_or_else(|| FindError::Usage(format!("process {process} has no executable image")))?;
    if crate::blake3_file(&image.file)? != crate::blake3_file(&opts.binary)? {
        return Err(FindError::Usage(format!(
            "process {process} runs {}, not {}: name the process that runs it with --pid",
            image.exe.display(),
            opts.binary.display()
        )));
    }
    let tid = session.halted_thread().unwrap_or(process);
    let initial = {
        let view = session.thread(tid)?;
        let mut s = shared.borrow_mut();
        s.bias = image.load_bias;
        s.static_at = image.load_bias.wrapping_add(address);
        s.evaluate(&view).map_err(|e| FindError::Usage(format!("at the start of process {process}: {e}")))?
    };
    if opts.mode == WatchMode::FirstFalse && initial != "true" && initial != "false" {
        return Err(FindError::Usage(format!(
            "--first-false needs a watched function that returns a bool; `{function}` gave {initial} at the start \
             (use --changes)"
        )));
    }
    let mut outcome = WatchOutcome {
        function,
        variable,
        initial: initial.clone(),
        change: None,
        evaluations: 0,
        page_writes: 0,
        syscalls: 0,
        pages: 0,
        interrupted: false,
        elapsed: Duration::ZERO,
    };
    let holds_at_start = {
        let mut s = shared.borrow_mut();
        s.initial = initial.clone();
        s.last = initial;
        s.process = Some(process);
        s.halt = Some(session.interrupter());
        let stops = opts.mode == WatchMode::FirstFalse && s.stops(&s.last);
        s.active = !stops;
        stops
    };
    if !holds_at_start {
        let forward = crate::find::forward_interrupt(opts.interrupt, session.interrupter());
        loop {
            if shared.borrow().change.is_some() {
                break;
            }
            match session.resume(Resume::Continue)? {
                SessionStop::ProcessExited { .. } | SessionStop::End => break,
                SessionStop::Interrupted { .. } if opts.interrupt.load(Ordering::Relaxed) => {
                    outcome.interrupted = true;
                    break;
                }
                _ => {}
            }
        }
        drop(forward);
    }
    let mut s = shared.borrow_mut();
    s.active = false;
    outcome.change = s.change.take();
    outcome.evaluations = s.evaluations;
    outcome.page_writes = s.page_writes;
    outcome.syscalls = s.syscalls;
    outcome.pages = s.protected.len();
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}
