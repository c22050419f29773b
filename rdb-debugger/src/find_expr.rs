//! Reverse expression watchpoints (`rdb find --expr STATIC --changes`): every statement that
//! changed a program static, in program order, each named by its instruction, source line and
//! backtrace.
//!
//! The static is resolved by the caller through the main binary's DWARF (`rdb_locate`): its
//! link-time address, size and type. The search is one replay of the searched process with:
//!
//! - **hardware write watchpoints** ([`Session::set_watchpoint`], armed in every thread) over
//!   the static, cut into at most [`debugreg::SLOTS`] aligned pieces of 1, 2, 4 or 8 bytes. A
//!   trigger halts the replay right after the writing instruction: the value is read there
//!   and, when it differs from the last one seen, the change is reported. The instruction is
//!   found by decoding its function from its symbol's start up to `rip` (the instruction that
//!   ends at `rip`); frame 0 of the backtrace is its line.
//! - **the system calls' recorded writes**: the kernel's writes (a `read` into the static) fire
//!   no debug register, and the replayer writes a call's recorded effects itself. The search's
//!   observer looks at every exit of a call of the searched process whose recorded writes
//!   overlap the static ([`ReplayObserver::on_syscall`], no halt): a change there is reported
//!   as that system call's event, without a halt.
//!
//! So every change of the static's bytes made by the searched process is found, in the
//! replay's order, exactly (a write of the same value is no change). Not seen: writes by
//! another process into memory shared with this one (none of a static's, unless the program
//! maps over it).
//!
//! A static that does not fit four aligned pieces (more than 32 bytes) is watched with page
//! protection instead ([`ReplayObserver::take_page_watches`]): the observer looks at each
//! write to its pages ([`ReplayObserver::on_page_write`], standing right after the
//! instruction) and records a change there, without a halt; `stop_at` then halts the replay at
//! its next event. Going back is refused while the pages are protected (the observer's
//! protection only follows the replay forwards).
//!
//! The cost is one replay, with a halt per write to the static and per system call: the
//! statement is found without going back (no probe replays an interval again).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdb_host::ProgramBacktracer;
use rdb_runtime::trace::{Tid, Trace};
use rdb_runtime::{
    BreakpointStop, ProcessImage, ReplayObserver, ReplayOptions, Resume, Session, SessionStop, SyscallStop,
};
use rdb_tracee::debugreg::{self, WatchKind};
use rdb_tracee::{Memory, Target, Watchpoint};

use crate::find::FindError;
use crate::DebugError;

/// A program static, as the main binary's DWARF gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// What the user wrote (`crate::bank::AUDITED`).
    pub expr: String,
    /// Link-time address.
    pub address: u64,
    pub size: u64,
    /// The DWARF's name of its type (`u64`, `AtomicU64`, `int`, `[u8; 16]`).
    pub type_name: String,
}

/// A search for the changes of a static.
pub struct ExprOptions {
    pub replay: ReplayOptions,
    /// The recorded executable (byte-identical) with its DWARF.
    pub binary: PathBuf,
    pub watched: Watched,
    /// The recorded process to search in (default: the one the recording started).
    pub process: Option<Tid>,
    /// Stop at this change (from 1), the replay halted right after it (for `--then gdb`).
    pub stop_at: Option<usize>,
    /// Set (from a signal handler) to stop the search with the changes found so far.
    pub interrupt: &'static AtomicBool,
}

/// One change of the static's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// From 1, in program order.
    pub number: usize,
    /// The last event replayed before the change (a trace index, as `rdb info --events`
    /// numbers them): for a system call's write, that system call's event.
    pub event: u64,
    /// Recorded id of the writing thread.
    pub thread: Tid,
    /// The writing instruction's run-time address (for a system call: its `syscall`
    /// instruction), `None` when it could not be decoded (then `after` is the address after
    /// it).
    pub instruction: Option<u64>,
    pub after: u64,
    /// The function of that instruction (innermost inlined frame).
    pub function: String,
    /// The statement: the innermost frame with a source file outside the Rust standard library
    /// (`/rustc/…`), else frame 0's.
    pub file: String,
    pub line: u32,
    /// `Some(name)`: the kernel wrote it, in this system call.
    pub syscall: Option<String>,
    pub old: Vec<u8>,
    pub new: Vec<u8>,
    /// The program's backtrace there (`#0 f at file:line:col` per line).
    pub backtrace: String,
}

/// How a search ended.
pub struct ExprOutcome {
    pub watched: Watched,
    /// The static's bytes when the process started.
    pub initial: Vec<u8>,
    pub changes: Vec<Change>,
    /// Watchpoint triggers (writes, changing or not) and system calls looked at.
    pub writes: u64,
    pub syscalls: u64,
    /// Debug-register slots used.
    pub slots: usize,
    /// Watched with page protection (larger than the debug registers hold).
    pub pages: bool,
    /// Stopped by the user before the end (the changes so far are listed).
    pub interrupted: bool,
    /// The replay went to its end (no `stop_at`).
    pub elapsed: Duration,
    /// The replay, halted right after the last change listed when `stop_at` asked, its
    /// watchpoints removed and syscalls no longer caught.
    pub session: Option<Session<'static>>,
}

/// `[addr, addr + len)` cut into aligned pieces of 1, 2, 4 or 8 bytes (`None`: more than
/// `max`).
pub fn watch_pieces(addr: u64, len: u64, max: usize) -> Option<Vec<(u64, u8)>> {
    let mut out = Vec::new();
    let (mut at, end) = (addr, addr.checked_add(len)?);
    while at < end {
        let size = [8u64, 4, 2, 1].into_iter().find(|&s| at % s == 0 && at + s <= end).expect("1 always fits");
        out.push((at, size as u8));
        if out.len() > max {
            return None;
        }
        at += size;
    }
    Some(out)
}

/// The value `bytes` typed as `type_name` says when it names an integer, `bool`, `char` or
/// float (Rust's atomics too), else its bytes in hex (memory order).
pub fn show_value(type_name: &str, bytes: &[u8]) -> String {
    let base = type_name.rsplit("::").next().unwrap_or(type_name).trim();
    let base = base.strip_prefix("Atomic").map(str::to_ascii_lowercase).unwrap_or_else(|| base.to_string());
    let n = bytes.len();
    let word = |signed: bool| -> Option<String> {
        if n == 0 || n > 8 {
            return None;
        }
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(bytes);
        let v = u64::from_le_bytes(w);
        Some(if signed {
            let shift = 64 - 8 * n as u32;
            (((v << shift) as i64) >> shift).to_string()
        } else {
            v.to_string()
        })
    };
    let c_signed = matches!(
        base.as_str(),
        "int" | "long" | "long int" | "short" | "short int" | "long long" | "long long int" | "signed char" | "char"
    ) || base.starts_with("int") && base.ends_with("_t")
        || base == "ssize_t";
    let c_unsigned =
        base.starts_with("unsigned") || base.starts_with("uint") && base.ends_with("_t") || base == "size_t";
    let shown = match base.as_str() {
        "bool" | "_Bool" if n == 1 => Some(if bytes[0] == 0 { "false".into() } else { "true".into() }),
        "u8" | "u16" | "u32" | "u64" | "usize" => word(false),
        "i8" | "i16" | "i32" | "i64" | "isize" => word(true),
        "char" if n == 4 => {
            let v = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
            Some(char::from_u32(v).map_or_else(|| format!("{v:#x}"), |c| format!("{c:?}")))
        }
        "f32" | "float" if n == 4 => Some(f32::from_le_bytes(bytes.try_into().expect("4 bytes")).to_string()),
        "f64" | "double" if n == 8 => Some(f64::from_le_bytes(bytes.try_into().expect("8 bytes")).to_string()),
        _ if c_unsigned => word(false),
        _ if c_signed => word(true),
        _ => None,
    };
    shown.unwrap_or_else(|| {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex} (bytes)")
    })
}

/// What the search and its observer share: the static's last value seen and the changes.
struct Seen {
    binary: PathBuf,
    /// The searched process, and the static's run-time address there (once known).
    process: Option<Tid>,
    addr: Option<u64>,
    size: usize,
    last: Vec<u8>,
    changes: Vec<Change>,
    syscalls: u64,
    backtracer: ProgramBacktracer,
    /// The main binary's function symbols (link-time start, size), sorted, and its load bias.
    functions: Vec<(u64, u64)>,
    bias: u64,
    /// Watched with page protection (the static does not fit the debug registers): asked for
    /// (`Some(false)`), then given to the replayer (`Some(true)`).
    pages: Option<bool>,
    /// Writes to the protected pages looked at.
    page_writes: u64,
    /// Set when change `stop_at` is seen by the observer: the session halts at its next event.
    stop_at: Option<usize>,
    halt: Option<Arc<AtomicBool>>,
}

impl Seen {
    /// A change to `now`, seen in `target` (thread `tid`) after `event`: recorded with the
    /// backtrace there.
    fn change(&mut self, target: &dyn Target, tid: Tid, event: u64, at: (Option<u64>, Option<u64>), now: Vec<u8>) {
        let (instruction, syscall) = at;
        let binary = self.binary.clone();
        let bt = self.backtracer.backtrace(target, &binary, syscall.is_none());
        let frames = bt.frames();
        let function = frames.first().and_then(|f| f.function.clone()).unwrap_or_else(|| "??".into());
        let statement = frames
            .iter()
            .find(|f| f.file.as_deref().is_some_and(|p| !p.starts_with("/rustc/")) && f.line != 0)
            .or(frames.first());
        let (file, line) = statement.map_or((String::from("??"), 0), |f| (f.file.clone().unwrap_or_default(), f.line));
        self.changes.push(Change {
            number: self.changes.len() + 1,
            event,
            thread: tid,
            instruction,
            after: target.regs().rip,
            function,
            file,
            line,
            syscall: syscall.map(rdb_runtime::syscalls::name),
            old: std::mem::replace(&mut self.last, now.clone()),
            new: now,
            backtrace: format!("{bt:#}"),
        });
        if self.stop_at.is_some_and(|n| self.changes.len() >= n) {
            if let Some(h) = &self.halt {
                h.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The search's observer: no breakpoints; at each system call exit of the searched process
/// whose recorded writes overlap the static, a change when its value differs; for a static
/// watched with page protection, the same at each write to its pages.
struct SyscallWrites {
    seen: Rc<RefCell<Seen>>,
}

impl ReplayObserver for SyscallWrites {
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
        let mut seen = self.seen.borrow_mut();
        match (seen.pages, seen.addr) {
            (Some(false), Some(addr)) => {
                seen.pages = Some(true);
                vec![(addr, seen.size as u64)]
            }
            _ => Vec::new(),
        }
    }

    fn on_page_write(&mut self, stop: &BreakpointStop<'_>, _addr: u64) -> Result<(), String> {
        let mut seen = self.seen.borrow_mut();
        let Some(addr) = seen.addr else { return Ok(()) };
        if seen.process != Some(stop.image.tid) {
            return Ok(());
        }
        seen.page_writes += 1;
        let mut now = vec![0u8; seen.size];
        stop.read_memory(addr, &mut now).map_err(|e| format!("the watched static at {addr:#x} cannot be read: {e}"))?;
        if now != seen.last {
            let at = writer(&seen.functions, seen.bias, stop, stop.regs.rip);
            seen.change(stop, stop.tid, stop.stretch.saturating_sub(1), (at, None), now);
        }
        Ok(())
    }

    fn can_go_back(&self) -> Result<(), String> {
        match self.seen.borrow().pages {
            Some(true) => {
                Err("the page protection `rdb find --expr` put on a large static only follows the replay forwards"
                    .into())
            }
            _ => Ok(()),
        }
    }

    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<(), String> {
        let mut seen = self.seen.borrow_mut();
        let Some(addr) = seen.addr else { return Ok(()) };
        if seen.process != Some(stop.process) {
            return Ok(());
        }
        seen.syscalls += 1;
        let end = addr + seen.size as u64;
        if !stop.writes.iter().any(|w| w.addr < end && addr < w.addr.saturating_add(w.bytes.len() as u64)) {
            return Ok(());
        }
        let mut now = vec![0u8; seen.size];
        stop.read_memory(addr, &mut now).map_err(|e| format!("the watched static at {addr:#x} cannot be read: {e}"))?;
        if now != seen.last {
            // The `syscall` instruction is the 2 bytes before `rip`.
            let at = stop.regs.rip.wrapping_sub(2);
            seen.change(stop, stop.tid, stop.event, (Some(at), Some(stop.nr)), now);
        }
        Ok(())
    }
}

/// The search's replay.
struct Watch {
    session: Session<'static>,
    seen: Rc<RefCell<Seen>>,
}

/// Runs the search (see the module docs).
pub fn find_changes(opts: ExprOptions) -> Result<ExprOutcome, FindError> {
    let started = Instant::now();
    let (header, _) = Trace::peek(&opts.replay.trace_dir).map_err(DebugError::from)?;
    let actual = crate::blake3_file(&opts.binary)?;
    if actual != header.program_blake3 {
        return Err(DebugError::BinaryMismatch {
            binary: opts.binary.clone(),
            recorded: header.program,
            expected: header.program_blake3,
            actual,
        }
        .into());
    }
    let w = &opts.watched;
    if w.size == 0 {
        return Err(FindError::Usage(format!("`{}` is zero-sized: it has no memory to watch", w.expr)));
    }
    // What does not fit the debug registers is watched with page protection.
    let pieces = watch_pieces(w.address, w.size, debugreg::SLOTS);
    let mut replay = opts.replay.clone();
    replay.echo_output = false;
    let seen = Rc::new(RefCell::new(Seen {
        binary: opts.binary.clone(),
        process: None,
        addr: None,
        size: w.size as usize,
        last: Vec::new(),
        changes: Vec::new(),
        syscalls: 0,
        backtracer: ProgramBacktracer::default(),
        functions: function_symbols(&opts.binary),
        bias: 0,
        pages: None,
        page_writes: 0,
        stop_at: opts.stop_at,
        halt: None,
    }));
    let mut session = Session::start(&replay, SyscallWrites { seen: seen.clone() })?;
    let process = opts.process.unwrap_or(session.root());
    session.set_focus(Some(process));
    // A checkpoint at the start for `--then gdb` to go back to.
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
    let image =
        session.image().ok_or_else(|| FindError::Usage(format!("process {process} has no executable image")))?;
    if crate::blake3_file(&image.file)? != actual {
        return Err(FindError::Usage(format!(
            "process {process} runs {}, not {}: name the process that runs it with --pid",
            image.exe.display(),
            opts.binary.display()
        )));
    }
    let addr = w.address.wrapping_add(image.load_bias);
    let mut initial = vec![0u8; w.size as usize];
    session
        .read_memory(addr, &mut initial)
        .map_err(|e| FindError::Usage(format!("`{}` at {addr:#x} cannot be read in process {process}: {e}", w.expr)))?;
    let mut slot = 0;
    let mut slots = Vec::new();
    for (a, len) in pieces.clone().unwrap_or_default() {
        while slot < debugreg::SLOTS && session.watch_slot_held_by_observer(slot) {
            slot += 1;
        }
        if slot == debugreg::SLOTS {
            return Err(FindError::Usage("no debug register is free for the watch".into()));
        }
        let at = a.wrapping_add(image.load_bias);
        session.set_watchpoint(slot, Watchpoint { addr: at, len, kind: WatchKind::Write })?;
        slots.push(slot);
        slot += 1;
    }
    {
        let mut s = seen.borrow_mut();
        s.process = Some(process);
        s.addr = Some(addr);
        s.last = initial.clone();
        s.bias = image.load_bias;
        s.pages = pieces.is_none().then_some(false);
        s.halt = Some(session.interrupter());
    }
    let mut watch = Watch { session, seen: seen.clone() };
    // Ctrl-C halts the replay at its next event.
    let forward = crate::find::ForwardInterrupt::start(opts.interrupt, watch.session.interrupter());
    let mut outcome = ExprOutcome {
        watched: w.clone(),
        initial,
        changes: Vec::new(),
        writes: 0,
        syscalls: 0,
        slots: slots.len(),
        pages: false,
        interrupted: false,
        elapsed: Duration::ZERO,
        session: None,
    };
    let result = watch.run(&mut outcome, opts.stop_at, opts.interrupt);
    drop(forward);
    result?;
    for s in slots {
        let _ = watch.session.remove_watchpoint(s);
    }
    {
        let mut s = seen.borrow_mut();
        // Looked at no more: `rdb gdb` may go on from here.
        s.addr = None;
        outcome.changes = std::mem::take(&mut s.changes);
        outcome.syscalls = s.syscalls;
        outcome.writes += s.page_writes;
        outcome.pages = s.pages.is_some();
    }
    if let Some(n) = opts.stop_at {
        outcome.changes.truncate(n);
    }
    outcome.elapsed = started.elapsed();
    outcome.session = Some(watch.session);
    Ok(outcome)
}

impl Watch {
    fn run(
        &mut self,
        outcome: &mut ExprOutcome,
        stop_at: Option<usize>,
        interrupt: &AtomicBool,
    ) -> Result<(), FindError> {
        loop {
            // A change seen by the observer (a system call's, or under page protection) sets
            // the session's interrupter when it is change `stop_at`: the replay halts at its
            // next event. A change by an instruction under a debug register halts right after it.
            if stop_at.is_some_and(|n| self.seen.borrow().changes.len() >= n) {
                return Ok(());
            }
            match self.session.resume(Resume::Continue)? {
                SessionStop::Watchpoint { tid, .. } => {
                    outcome.writes += 1;
                    self.look(tid)?;
                }
                SessionStop::ProcessExited { .. } | SessionStop::End => return Ok(()),
                SessionStop::Interrupted { .. } if interrupt.load(Ordering::Relaxed) => {
                    outcome.interrupted = true;
                    return Ok(());
                }
                _ => {}
            }
        }
    }

    /// Halted in `tid` right after an instruction wrote to the static: a change when the value
    /// differs from the last one seen.
    fn look(&mut self, tid: Tid) -> Result<(), FindError> {
        let (addr, size) = {
            let s = self.seen.borrow();
            (s.addr.expect("watching"), s.size)
        };
        let mut now = vec![0u8; size];
        self.session.read_memory(addr, &mut now)?;
        if now == self.seen.borrow().last {
            return Ok(());
        }
        let view = self.session.thread(tid)?;
        // The thread's stretch is named by the index of its next event: the one before it is
        // the last one replayed.
        let stretch = self.session.threads().iter().find(|t| t.tid == tid).map_or(0, |t| t.stretch);
        let mut seen = self.seen.borrow_mut();
        let instruction = writer(&seen.functions, seen.bias, &view, view.regs().rip);
        seen.change(&view, tid, stretch.saturating_sub(1), (instruction, None), now);
        Ok(())
    }
}

/// The instruction that ends at `after`, decoded from the start of the main binary's function
/// holding it (`functions`: link-time start and size, sorted; `bias`: the load bias); `None`
/// outside the main binary or where no instruction ends there.
fn writer(functions: &[(u64, u64)], bias: u64, target: &dyn Target, after: u64) -> Option<u64> {
    let relative = after.wrapping_sub(1).wrapping_sub(bias);
    let i = functions.partition_point(|&(start, _)| start <= relative).checked_sub(1)?;
    let (start, size) = functions[i];
    if relative >= start + size.max(1) || after.wrapping_sub(bias) - start > 1 << 20 {
        return None;
    }
    let from = start.wrapping_add(bias);
    let mut code = vec![0u8; (after - from) as usize];
    target.read_exact(from, &mut code).ok()?;
    let mut decoder = iced_x86::Decoder::with_ip(64, &code, from, iced_x86::DecoderOptions::NONE);
    let mut ip = from;
    while decoder.can_decode() {
        let instr = decoder.decode();
        if instr.is_invalid() {
            return None;
        }
        if instr.next_ip() == after {
            return Some(ip);
        }
        ip = instr.next_ip();
    }
    None
}

/// The function symbols of `binary` (link-time start, size), sorted by start.
fn function_symbols(binary: &Path) -> Vec<(u64, u64)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(data) = std::fs::read(binary) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*data) else { return Vec::new() };
    let mut out: Vec<(u64, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    out.sort_unstable();
    out.dedup_by_key(|s| s.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_aligned_and_at_most_max() {
        assert_eq!(watch_pieces(0x1000, 8, 4), Some(vec![(0x1000, 8)]));
        assert_eq!(watch_pieces(0x1004, 4, 4), Some(vec![(0x1004, 4)]));
        assert_eq!(watch_pieces(0x1002, 8, 4), Some(vec![(0x1002, 2), (0x1004, 4), (0x1008, 2)]));
        assert_eq!(watch_pieces(0x1000, 32, 4), Some(vec![(0x1000, 8), (0x1008, 8), (0x1010, 8), (0x1018, 8)]));
        assert_eq!(watch_pieces(0x1000, 40, 4), None);
        assert_eq!(watch_pieces(0x1001, 8, 4), Some(vec![(0x1001, 1), (0x1002, 2), (0x1004, 4), (0x1008, 1)]));
        assert_eq!(watch_pieces(0x1001, 16, 4), None);
    }

    #[test]
    fn values_are_typed_by_their_base_type() {
        assert_eq!(show_value("u64", &42u64.to_le_bytes()), "42");
        assert_eq!(show_value("core::sync::atomic::AtomicU64", &10u64.to_le_bytes()), "10");
        assert_eq!(show_value("int", &(-3i32).to_le_bytes()), "-3");
        assert_eq!(show_value("unsigned int", &7u32.to_le_bytes()), "7");
        assert_eq!(show_value("i16", &(-1i16).to_le_bytes()), "-1");
        assert_eq!(show_value("bool", &[1]), "true");
        assert_eq!(show_value("[u8; 3]", &[1, 2, 0xff]), "0x0102ff (bytes)");
        assert_eq!(show_value("struct point", &[0, 1]), "0x0001 (bytes)");
    }
}
