//! Reverse expression watchpoints (`rdb find --expr PLACE --changes`): every statement that
//! changed a place over a program static (the static itself, `LIST.head->next->value`,
//! `STATE.items[3].count`), in program order, each named by its instruction, source line and
//! backtrace.
//!
//! The place is resolved by the caller through the main binary's DWARF (`rdb_locate`): the
//! static's link-time address, then the steps to the value (constant offsets for fields and
//! indices, the pointer words a dereference reads, a slice's or `Vec`'s data pointer and
//! length), the value's size and type. Evaluating it reads a set of ranges: the words on the
//! way and the value's bytes. A change of the value needs a write to one of them, so those
//! are what is watched; when a write moves the place (a pointer or a length on the way), the
//! watch follows it to the ranges the place reads now. The search is one replay of the
//! searched process with:
//!
//! - **hardware write watchpoints** ([`Session::set_watchpoint`], armed in every thread) over
//!   the ranges, cut into at most [`debugreg::SLOTS`] aligned pieces of 1, 2, 4 or 8 bytes. A
//!   trigger halts the replay right after the writing instruction: the place is evaluated
//!   there (the registers re-armed when it moved) and, when its value differs from the last
//!   one seen, the change is reported. The instruction is
//!   found by decoding its function from its symbol's start up to `rip` (the instruction that
//!   ends at `rip`); frame 0 of the backtrace is its line.
//! - **the system calls' recorded writes**: the kernel's writes (a `read` into the static) fire
//!   no debug register, and the replayer writes a call's recorded effects itself. The search's
//!   observer looks at every exit of a call of the searched process whose recorded writes
//!   overlap the ranges ([`ReplayObserver::on_syscall`], no halt): a change there is reported
//!   as that system call's event; a place the call moved halts the session (its interrupter)
//!   where the thread resumes user code, and the registers are re-armed there.
//!
//! So every change of the place's value made by the searched process is found, in the
//! replay's order, exactly (a write of the same value is no change; a value may also be
//! none: a null pointer or an index past the length on the way, memory not mapped). Not seen: writes by
//! another process into memory shared with this one (none of a static's, unless the program
//! maps over it).
//!
//! A place that may not fit four aligned pieces (a static of more than 32 bytes; for a place
//! behind pointers, one piece per word on the way plus the value's) is watched with page
//! protection instead ([`ReplayObserver::take_page_watches`]): the observer looks at each
//! write to its pages ([`ReplayObserver::on_page_write`], standing right after the
//! instruction) and records a change there, without a halt; the ranges a moved place reads
//! are protected too (the old ones stay protected: their writes are looked at and are no
//! change); `stop_at` then halts the replay at its next event. Going back is refused while the pages are protected (the observer's
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
use rdb_runtime::{BreakpointStop, ProcessImage, ReplayObserver, ReplayOptions, Session, SessionStop, SyscallStop};
use rdb_tracee::debugreg::{self, WatchKind};
use rdb_tracee::{Memory, Target, Watchpoint};

use crate::find::{resume, FindError};
use crate::DebugError;

/// A place over a program static, as the main binary's DWARF gives it: the static, then the
/// steps to the watched value (fields, constant indices, dereferences).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// What the user wrote (`crate::bank::AUDITED`, `LIST.head->next->value`).
    pub expr: String,
    /// The static's link-time address.
    pub address: u64,
    /// From the static to the value (empty: the static itself).
    pub steps: Vec<Step>,
    /// The value's size and the DWARF's name of its type (`u64`, `AtomicU64`, `int`, `[u8; 16]`).
    pub size: u64,
    pub type_name: String,
}

/// One step of a place (`rdb_locate::PlaceStep`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The address moves on by this many bytes (a field, an array element).
    Offset(u64),
    /// The pointer word at the address is read; the place is where it points, none when it is
    /// 0 (`none`: what the program calls it, `null` or `None`; `what`: the pointer as written).
    Deref { what: String, none: String },
    /// The address holds a slice or `Vec`: data pointer word at `data`, length word at `len`;
    /// the place is element `index` (of `element` bytes) when the length holds it.
    Index { data: u64, len: u64, index: u64, element: u64, what: String },
}

/// The value of a place at one point: its bytes, or why it has none there (a null pointer on
/// the way, an index past the length, memory that cannot be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Bytes(Vec<u8>),
    Absent(String),
}

/// Reads all of a buffer from the program's memory at an address, or says why not.
pub type ReadMemory<'a> = dyn FnMut(u64, &mut [u8]) -> Result<(), String> + 'a;

/// A place evaluated: its value and every range it read (the pointer and length words on the
/// way, then the value's bytes): `(address, length)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluated {
    pub value: Value,
    pub ranges: Vec<(u64, u64)>,
}

impl Watched {
    /// The place in a process whose main binary is loaded at `bias`, reading its memory with
    /// `read`. `Err`: the static itself cannot be read.
    pub fn evaluate(&self, bias: u64, read: &mut ReadMemory<'_>) -> Result<Evaluated, String> {
        let mut at = self.address.wrapping_add(bias);
        let mut ranges = Vec::new();
        let mut word = |at: u64, ranges: &mut Vec<(u64, u64)>| -> Result<u64, String> {
            ranges.push((at, 8));
            let mut w = [0u8; 8];
            read(at, &mut w).map_err(|e| format!("{at:#x} cannot be read: {e}"))?;
            Ok(u64::from_le_bytes(w))
        };
        let absent = |why: String, ranges: Vec<(u64, u64)>| Ok(Evaluated { value: Value::Absent(why), ranges });
        for step in &self.steps {
            match step {
                Step::Offset(n) => at = at.wrapping_add(*n),
                Step::Deref { what, none } => match word(at, &mut ranges) {
                    Ok(0) => return absent(format!("`{what}` is {none}"), ranges),
                    Ok(p) => at = p,
                    Err(e) => return absent(format!("`{what}` at {e}"), ranges),
                },
                Step::Index { data, len, index, element, what } => {
                    let n = match word(at.wrapping_add(*len), &mut ranges) {
                        Ok(n) => n,
                        Err(e) => return absent(format!("the length of `{what}` at {e}"), ranges),
                    };
                    let p = match word(at.wrapping_add(*data), &mut ranges) {
                        Ok(p) => p,
                        Err(e) => return absent(format!("the data pointer of `{what}` at {e}"), ranges),
                    };
                    if *index >= n {
                        // Not its length: a length that changes while the index stays out of range
                        // is no change of the value.
                        return absent(format!("index {index} is out of range for `{what}`"), ranges);
                    }
                    at = p.wrapping_add(index.wrapping_mul(*element));
                }
            }
        }
        ranges.push((at, self.size));
        let mut bytes = vec![0u8; self.size as usize];
        match read(at, &mut bytes) {
            Ok(()) => Ok(Evaluated { value: Value::Bytes(bytes), ranges }),
            Err(e) if self.steps.is_empty() => Err(format!("`{}` at {at:#x} cannot be read: {e}", self.expr)),
            Err(e) => absent(format!("`{}` at {at:#x} cannot be read: {e}", self.expr), ranges),
        }
    }

    /// Whether the place moves (a pointer or a length is read on the way).
    pub fn moves(&self) -> bool {
        self.steps.iter().any(|s| !matches!(s, Step::Offset(_)))
    }

    /// The most debug-register pieces the place may need: one per pointer or length word
    /// (aligned words), and the value's (exact for a place that does not move).
    pub fn max_pieces(&self, bias: u64) -> Option<usize> {
        if !self.moves() {
            let at = self.steps.iter().fold(self.address.wrapping_add(bias), |a, s| match s {
                Step::Offset(n) => a.wrapping_add(*n),
                _ => a,
            });
            return watch_pieces(at, self.size, usize::MAX).map(|p| p.len());
        }
        let words: usize = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Offset(_) => 0,
                Step::Deref { .. } => 1,
                Step::Index { .. } => 2,
            })
            .sum();
        let value = if matches!(self.size, 1 | 2 | 4 | 8) { 1 } else { self.size.div_ceil(8) as usize + 1 };
        Some(words + value)
    }
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
    /// Stop at the first change after which this holds (none when it holds from the start:
    /// the replay is not run), the replay halted right after it, as for `stop_at`.
    pub first: Option<Predicate>,
}

/// A condition over a place's value (`rdb find --expr PLACE --first COND`): `value OP N`, OP
/// one of `==`, `!=`, `<`, `<=`, `>`, `>=`, N an integer (decimal or `0x` hex, `-` allowed),
/// `true` or `false`. It compares the value as its type makes it an integer ([`integer_value`]:
/// integers, atomics, `bool`, `char`, pointers); a value that is none (a null pointer on the
/// way) satisfies no condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predicate {
    /// As the user wrote it.
    pub text: String,
    op: Cmp,
    rhs: i128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Predicate {
    /// `value OP N` parsed, or what is wrong with it.
    pub fn parse(text: &str) -> Result<Predicate, String> {
        let usage = || format!("{text:?}: expected `value OP N` (OP: == != < <= > >=; N: an integer, true or false)");
        let rest = text.trim().strip_prefix("value").ok_or_else(usage)?.trim_start();
        let (op, rest) =
            [("==", Cmp::Eq), ("!=", Cmp::Ne), ("<=", Cmp::Le), (">=", Cmp::Ge), ("<", Cmp::Lt), (">", Cmp::Gt)]
                .into_iter()
                .find_map(|(s, op)| rest.strip_prefix(s).map(|r| (op, r.trim())))
                .ok_or_else(usage)?;
        let (negative, digits) = match rest.strip_prefix('-') {
            Some(d) => (true, d.trim_start()),
            None => (false, rest),
        };
        let magnitude = match digits {
            "true" if !negative => Some(1),
            "false" if !negative => Some(0),
            _ => match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
                Some(hex) => i128::from_str_radix(&hex.replace('_', ""), 16).ok(),
                None => digits.replace('_', "").parse::<i128>().ok(),
            },
        };
        let magnitude = magnitude.filter(|_| !digits.starts_with(['+', '-'])).ok_or_else(usage)?;
        Ok(Predicate { text: text.trim().to_string(), op, rhs: if negative { -magnitude } else { magnitude } })
    }

    /// Whether a value of `type_name` can be compared (checked before a search runs).
    pub fn check_type(&self, type_name: &str, size: u64) -> Result<(), String> {
        match integer_value(type_name, &vec![0u8; size.min(64) as usize]) {
            Some(_) => Ok(()),
            None => Err(format!(
                "`{}` compares integers, and a value of type {type_name} ({size} bytes) is not one \
                 (integers, atomics, bool, char and pointers are)",
                self.text
            )),
        }
    }

    /// Whether `value` (of `type_name`) satisfies the condition.
    pub fn holds(&self, type_name: &str, value: &Value) -> bool {
        let Value::Bytes(b) = value else { return false };
        let Some(v) = integer_value(type_name, b) else { return false };
        match self.op {
            Cmp::Eq => v == self.rhs,
            Cmp::Ne => v != self.rhs,
            Cmp::Lt => v < self.rhs,
            Cmp::Le => v <= self.rhs,
            Cmp::Gt => v > self.rhs,
            Cmp::Ge => v >= self.rhs,
        }
    }
}

/// The value `bytes` of `type_name` as an integer, as [`show_value`] shows it (signed or not by
/// its type; `bool` 0 or 1; a `char` its code; a pointer its address); `None` for other types
/// (floats, arrays, structs).
pub fn integer_value(type_name: &str, bytes: &[u8]) -> Option<i128> {
    let base = type_name.rsplit("::").next().unwrap_or(type_name).trim();
    if matches!(base, "f32" | "f64" | "float" | "double" | "long double") {
        return None;
    }
    let shown = show_value(type_name, bytes);
    match shown.as_str() {
        "true" => return Some(1),
        "false" => return Some(0),
        _ => {}
    }
    if let Some(hex) = shown.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(i128::from);
    }
    if shown.starts_with('\'') {
        return (bytes.len() == 4).then(|| i128::from(u32::from_le_bytes(bytes.try_into().expect("4 bytes"))));
    }
    shown.parse::<i128>().ok()
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
    pub old: Value,
    pub new: Value,
    /// The program's backtrace there (`#0 f at file:line:col` per line).
    pub backtrace: String,
}

/// How a search ended.
pub struct ExprOutcome {
    pub watched: Watched,
    /// The place's value when the process started.
    pub initial: Value,
    pub changes: Vec<Change>,
    /// Watchpoint triggers (writes, changing or not) and system calls looked at.
    pub writes: u64,
    pub syscalls: u64,
    /// Debug-register slots used (the most at once).
    pub slots: usize,
    /// Watched with page protection (the place may need more than the debug registers hold).
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
    let pointer = type_name.ends_with('*')
        || type_name.starts_with('&')
        || type_name.starts_with("*const ")
        || type_name.starts_with("*mut ");
    let shown = match base.as_str() {
        _ if pointer && n == 8 => Some(format!("{:#x}", u64::from_le_bytes(bytes.try_into().expect("8 bytes")))),
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

/// A read of `len` bytes that read them all.
pub(crate) fn exact<E: std::fmt::Display>(read: Result<usize, E>, len: usize) -> Result<(), String> {
    match read {
        Ok(n) if n == len => Ok(()),
        Ok(n) => Err(format!("{n} of its {len} bytes are mapped")),
        Err(e) => Err(e.to_string()),
    }
}

/// A value as [`show_value`] shows it; no value: why, in angle brackets.
pub fn show(type_name: &str, value: &Value) -> String {
    match value {
        Value::Bytes(b) => show_value(type_name, b),
        Value::Absent(why) => format!("<none: {why}>"),
    }
}

/// What the search and its observer share: the place's last value seen, the ranges it read
/// there, and the changes.
struct Seen {
    binary: PathBuf,
    watched: Watched,
    /// The searched process (once known); `active` while the search looks at it.
    process: Option<Tid>,
    active: bool,
    last: Value,
    ranges: Vec<(u64, u64)>,
    changes: Vec<Change>,
    syscalls: u64,
    backtracer: ProgramBacktracer,
    /// The main binary's function symbols (link-time start, size), sorted, and its load bias.
    functions: Vec<(u64, u64)>,
    bias: u64,
    /// Watched with page protection (the place does not fit the debug registers): the ranges
    /// given to the replayer so far (their pages stay protected; a range the place reads
    /// after a pointer moved is added).
    pages: bool,
    protected: Vec<(u64, u64)>,
    /// Writes to the protected pages looked at.
    page_writes: u64,
    /// The place moved while the observer looked (a system call wrote a pointer on the way):
    /// the debug registers are armed again at the halt that follows (before user code runs).
    rearm: bool,
    /// Set when change `stop_at` is seen by the observer: the session halts at its next event.
    stop_at: Option<usize>,
    /// `stop_at` is set to the first change after which this holds.
    first: Option<Predicate>,
    halt: Option<Arc<AtomicBool>>,
}

impl Seen {
    /// The place evaluated again with `read`: a change to record when its value differs from
    /// the last one seen (the ranges are kept either way).
    fn evaluate(&mut self, read: &mut ReadMemory<'_>) -> Result<Option<Value>, String> {
        let e = self.watched.evaluate(self.bias, read)?;
        if e.ranges != self.ranges {
            self.ranges = e.ranges;
            self.rearm = true;
        }
        Ok((e.value != self.last).then_some(e.value))
    }

    /// Whether a write of `len` bytes at `addr` touches memory the place read.
    fn touches(&self, addr: u64, len: u64) -> bool {
        self.ranges.iter().any(|&(a, n)| addr < a.saturating_add(n) && a < addr.saturating_add(len))
    }

    /// A change to `now`, seen in `target` (thread `tid`) after `event`: recorded with the
    /// backtrace there.
    fn change(&mut self, target: &dyn Target, tid: Tid, event: u64, at: (Option<u64>, Option<u64>), now: Value) {
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
        let holds = |p: &Predicate| p.holds(&self.watched.type_name, &self.last);
        if self.stop_at.is_none() && self.first.as_ref().is_some_and(holds) {
            self.stop_at = Some(self.changes.len());
        }
        if self.stop_at.is_some_and(|n| self.changes.len() >= n) {
            if let Some(h) = &self.halt {
                h.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The search's observer: no breakpoints; at each system call exit of the searched process
/// whose recorded writes touch memory the place read, a change when its value differs; for a
/// place watched with page protection, the same at each write to its pages.
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
        if !seen.active || !seen.pages {
            return Vec::new();
        }
        let new: Vec<(u64, u64)> = seen.ranges.iter().copied().filter(|r| !seen.protected.contains(r)).collect();
        seen.protected.extend(new.iter().copied());
        seen.rearm = false;
        new
    }

    fn on_page_write(&mut self, stop: &BreakpointStop<'_>, _addr: u64) -> Result<(), String> {
        let mut seen = self.seen.borrow_mut();
        if !seen.active || seen.process != Some(stop.image.tid) {
            return Ok(());
        }
        seen.page_writes += 1;
        let mut read = |a: u64, buf: &mut [u8]| exact(stop.read_memory(a, buf), buf.len());
        if let Some(now) = seen.evaluate(&mut read)? {
            let at = writer(&seen.functions, seen.bias, stop, stop.regs.rip);
            seen.change(stop, stop.tid, stop.stretch.saturating_sub(1), (at, None), now);
        }
        Ok(())
    }

    fn can_go_back(&self) -> Result<(), String> {
        if !self.seen.borrow().protected.is_empty() {
            return Err(
                "the page protection `rdb find --expr` put on a large place only follows the replay forwards".into()
            );
        }
        Ok(())
    }

    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<(), String> {
        let mut seen = self.seen.borrow_mut();
        if !seen.active || seen.process != Some(stop.process) {
            return Ok(());
        }
        seen.syscalls += 1;
        if !stop.writes.iter().any(|w| seen.touches(w.addr, w.bytes.len() as u64)) {
            return Ok(());
        }
        let mut read = |a: u64, buf: &mut [u8]| exact(stop.read_memory(a, buf), buf.len());
        let now = seen.evaluate(&mut read)?;
        if seen.rearm && !seen.pages {
            // The debug registers follow the place at the halt before this thread runs user
            // code again.
            if let Some(h) = &seen.halt {
                h.store(true, Ordering::SeqCst);
            }
        }
        if let Some(now) = now {
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
    /// The debug-register slots armed, and the pieces they watch.
    slots: Vec<usize>,
    pieces: Vec<(u64, u8)>,
    /// The most slots used at once.
    most: usize,
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
    if let Some(p) = &opts.first {
        p.check_type(&w.type_name, w.size).map_err(|e| FindError::Usage(format!("--first {e}")))?;
    }
    let mut replay = opts.replay.clone();
    replay.echo_output = false;
    let seen = Rc::new(RefCell::new(Seen {
        binary: opts.binary.clone(),
        watched: w.clone(),
        process: None,
        active: false,
        last: Value::Absent(String::new()),
        ranges: Vec::new(),
        changes: Vec::new(),
        syscalls: 0,
        backtracer: ProgramBacktracer::default(),
        functions: function_symbols(&opts.binary),
        bias: 0,
        pages: false,
        protected: Vec::new(),
        page_writes: 0,
        rearm: false,
        stop_at: opts.stop_at,
        first: opts.first.clone(),
        halt: None,
    }));
    let mut session = Session::start(&replay, SyscallWrites { seen: seen.clone() })?;
    let process = opts.process.unwrap_or(session.root());
    session.set_focus(Some(process));
    // A checkpoint at the start for `--then gdb` to go back to.
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
    let image =
        session.image().ok_or_else(|| FindError::Usage(format!("process {process} has no executable image")))?;
    if crate::blake3_file(&image.file)? != actual {
        return Err(FindError::Usage(format!(
            "process {process} runs {}, not {}: name the process that runs it with --pid",
            image.exe.display(),
            opts.binary.display()
        )));
    }
    let bias = image.load_bias;
    let initial = {
        let mut read = |a: u64, buf: &mut [u8]| exact(session.read_memory(a, buf), buf.len());
        w.evaluate(bias, &mut read).map_err(|e| FindError::Usage(format!("{e} in process {process}")))?
    };
    // What may not fit the debug registers is watched with page protection.
    let pages = w.max_pieces(bias).is_none_or(|n| n > debugreg::SLOTS);
    {
        let mut s = seen.borrow_mut();
        s.process = Some(process);
        s.active = true;
        s.last = initial.value.clone();
        s.ranges = initial.ranges.clone();
        s.bias = bias;
        s.pages = pages;
        s.halt = Some(session.interrupter());
        if s.stop_at.is_none() && opts.first.as_ref().is_some_and(|p| p.holds(&w.type_name, &initial.value)) {
            // It holds from the start: no change to look for.
            s.stop_at = Some(0);
        }
    }
    let mut watch = Watch { session, seen: seen.clone(), slots: Vec::new(), pieces: Vec::new(), most: 0 };
    if !pages {
        watch.arm()?;
    }
    // Ctrl-C halts the replay at its next event.
    let forward = crate::find::forward_interrupt(opts.interrupt, watch.session.interrupter());
    let mut outcome = ExprOutcome {
        watched: w.clone(),
        initial: initial.value,
        changes: Vec::new(),
        writes: 0,
        syscalls: 0,
        slots: 0,
        pages: false,
        interrupted: false,
        elapsed: Duration::ZERO,
        session: None,
    };
    let result = watch.run(&mut outcome, opts.interrupt);
    drop(forward);
    result?;
    for s in std::mem::take(&mut watch.slots) {
        let _ = watch.session.remove_watchpoint(s);
    }
    outcome.slots = watch.most;
    {
        let mut s = seen.borrow_mut();
        // Looked at no more: `rdb gdb` may go on from here.
        s.active = false;
        outcome.changes = std::mem::take(&mut s.changes);
        outcome.syscalls = s.syscalls;
        outcome.writes += s.page_writes;
        outcome.pages = s.pages;
    }
    if let Some(n) = seen.borrow().stop_at {
        outcome.changes.truncate(n);
    }
    outcome.elapsed = started.elapsed();
    outcome.session = Some(watch.session);
    Ok(outcome)
}

impl Watch {
    fn run(&mut self, outcome: &mut ExprOutcome, interrupt: &AtomicBool) -> Result<(), FindError> {
        loop {
            // A change seen by the observer (a system call's, or under page protection) sets
            // the session's interrupter when it is change `stop_at`: the replay halts at its
            // next event. A change by an instruction under a debug register halts right after it.
            let reached = {
                let seen = self.seen.borrow();
                seen.stop_at.is_some_and(|n| seen.changes.len() >= n)
            };
            if reached {
                return Ok(());
            }
            match resume(&mut self.session)? {
                SessionStop::Watchpoint { tid, .. } => {
                    outcome.writes += 1;
                    self.look(tid)?;
                }
                SessionStop::ProcessExited { .. } | SessionStop::End => return Ok(()),
                SessionStop::Interrupted { .. } if interrupt.load(Ordering::Relaxed) => {
                    outcome.interrupted = true;
                    return Ok(());
                }
                // A system call moved the place: the thread has not run user code since.
                SessionStop::Interrupted { .. } if self.seen.borrow().rearm => self.arm()?,
                _ => {}
            }
        }
    }

    /// Arms the debug registers over the ranges the place read last (those of the pieces
    /// already armed stay).
    fn arm(&mut self) -> Result<(), FindError> {
        let ranges = {
            let mut s = self.seen.borrow_mut();
            s.rearm = false;
            s.ranges.clone()
        };
        let mut pieces = Vec::new();
        for (a, n) in ranges {
            match watch_pieces(a, n, debugreg::SLOTS) {
                Some(p) => pieces.extend(p),
                None => pieces.extend(std::iter::repeat_n((a, 0), debugreg::SLOTS + 1)),
            }
        }
        pieces.sort_unstable();
        pieces.dedup();
        if pieces == self.pieces {
            return Ok(());
        }
        let expr = self.seen.borrow().watched.expr.clone();
        if pieces.len() > debugreg::SLOTS {
            return Err(FindError::Usage(format!(
                "`{expr}` moved to memory that does not fit the {} debug registers (unaligned pointer or \
                 value): rdb cannot go on watching it exactly",
                debugreg::SLOTS
            )));
        }
        for s in std::mem::take(&mut self.slots) {
            self.session.remove_watchpoint(s)?;
        }
        let mut slot = 0;
        for &(at, len) in &pieces {
            while slot < debugreg::SLOTS && self.session.watch_slot_held_by_observer(slot) {
                slot += 1;
            }
            if slot == debugreg::SLOTS {
                return Err(FindError::Usage(format!("no debug register is free to watch `{expr}`")));
            }
            self.session.set_watchpoint(slot, Watchpoint { addr: at, len, kind: WatchKind::Write })?;
            self.slots.push(slot);
            slot += 1;
        }
        self.most = self.most.max(self.slots.len());
        self.pieces = pieces;
        Ok(())
    }

    /// Halted in `tid` right after an instruction wrote to memory the place read: a change
    /// when the value differs from the last one seen; the registers follow the place when it
    /// moved.
    fn look(&mut self, tid: Tid) -> Result<(), FindError> {
        let now = {
            let session = &mut self.session;
            let mut read = |a: u64, buf: &mut [u8]| exact(session.read_memory(a, buf), buf.len());
            self.seen.borrow_mut().evaluate(&mut read).map_err(FindError::Usage)?
        };
        if self.seen.borrow().rearm {
            self.arm()?;
        }
        let Some(now) = now else { return Ok(()) };
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
pub(crate) fn writer(functions: &[(u64, u64)], bias: u64, target: &dyn Target, after: u64) -> Option<u64> {
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
pub(crate) fn function_symbols(binary: &Path) -> Vec<(u64, u64)> {
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

    /// A place read from a small memory image: the ranges are every word read on the way,
    /// then the value's; a null pointer or an index past the length leaves no value.
    #[test]
    fn places_read_their_pointer_and_length_words() {
        let mut memory = std::collections::BTreeMap::new();
        let mut put = |at: u64, v: u64| {
            for (i, b) in v.to_le_bytes().into_iter().enumerate() {
                memory.insert(at + i as u64, b);
            }
        };
        // STATIC at 0x1000 (bias 0x100): { len @8, data @16 } -> elements of 16 bytes at
        // 0x2000, whose field @8 is a pointer to 0x3000.
        put(0x1108, 2);
        put(0x1110, 0x2000);
        put(0x2018, 0x3000);
        put(0x3004, 0x2a);
        let place = |index: u64| Watched {
            expr: "S.items[1].next.value".into(),
            address: 0x1000,
            steps: vec![
                Step::Index { data: 16, len: 8, index, element: 16, what: "S.items".into() },
                Step::Offset(8),
                Step::Deref { what: "S.items[1].next".into(), none: "None".into() },
                Step::Offset(4),
            ],
            size: 4,
            type_name: "u32".into(),
        };
        let mut read = |at: u64, buf: &mut [u8]| -> Result<(), String> {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = *memory.get(&(at + i as u64)).unwrap_or(&0);
            }
            if at == 0xdead {
                return Err("unmapped".into());
            }
            Ok(())
        };
        let e = place(1).evaluate(0x100, &mut read).unwrap();
        assert_eq!(e.value, Value::Bytes(vec![0x2a, 0, 0, 0]));
        assert_eq!(e.ranges, vec![(0x1108, 8), (0x1110, 8), (0x2018, 8), (0x3004, 4)]);
        assert!(place(1).moves() && place(1).max_pieces(0x100) == Some(4));
        let e = place(2).evaluate(0x100, &mut read).unwrap();
        assert_eq!(e.value, Value::Absent("index 2 is out of range for `S.items`".into()));
        assert_eq!(e.ranges, vec![(0x1108, 8), (0x1110, 8)]);
        let e = place(0).evaluate(0x100, &mut read).unwrap();
        assert_eq!(e.value, Value::Absent("`S.items[1].next` is None".into()));
        assert_eq!(e.ranges, vec![(0x1108, 8), (0x1110, 8), (0x2008, 8)]);
        assert_eq!(show("u32", &e.value), "<none: `S.items[1].next` is None>");
        let fixed = Watched {
            expr: "A.b".into(),
            address: 0x1000,
            steps: vec![Step::Offset(4)],
            size: 4,
            type_name: "int".into(),
        };
        assert!(!fixed.moves() && fixed.max_pieces(0) == Some(1));
    }

    /// `value OP N` conditions: parsed strictly, compared by the value's type (signed or not),
    /// none for a value that is none or of a type that is no integer.
    #[test]
    fn conditions_compare_values_as_their_type_says() {
        let p = |t: &str| Predicate::parse(t).unwrap();
        let bytes = |v: &[u8]| Value::Bytes(v.to_vec());
        assert!(p("value > 100").holds("u64", &bytes(&101u64.to_le_bytes())));
        assert!(!p("value > 100").holds("u64", &bytes(&100u64.to_le_bytes())));
        assert!(p(" value>=0x10 ").holds("core::sync::atomic::AtomicU32", &bytes(&16u32.to_le_bytes())));
        assert!(p("value < 0").holds("int", &bytes(&(-3i32).to_le_bytes())));
        assert!(!p("value < 0").holds("unsigned int", &bytes(&(-3i32).to_le_bytes())));
        assert!(p("value == -3").holds("i64", &bytes(&(-3i64).to_le_bytes())));
        assert!(p("value != 0").holds("struct node *", &bytes(&0x5555_0000u64.to_le_bytes())));
        assert!(p("value == true").holds("bool", &bytes(&[1])));
        assert!(p("value <= 1_000").holds("usize", &bytes(&1000u64.to_le_bytes())));
        assert!(p("value == 97").holds("char", &bytes(&u32::from('a').to_le_bytes())));
        assert!(!p("value != 5").holds("u64", &Value::Absent("`P` is null".into())));
        for bad in ["value", "value = 3", "x > 3", "value > three", "value > --3", "value > -true", "value >"] {
            assert!(Predicate::parse(bad).is_err(), "{bad}");
        }
        assert!(p("value > 1").check_type("u32", 4).is_ok());
        assert!(p("value > 1").check_type("f64", 8).is_err());
        assert!(p("value > 1").check_type("[u8; 16]", 16).is_err());
        assert!(p("value > 1").check_type("struct point", 8).is_err());
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
        assert_eq!(show_value("struct node *", &0x5555_0000u64.to_le_bytes()), "0x55550000");
    }
}
