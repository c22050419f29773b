//! What debug code may ask rdb while a replay runs it: the system call a callback was called for
//! ([`Syscall`]), the program's stack ([`backtrace`]) and source location ([`location`]) at that
//! point, and watchpoints on program memory ([`watch`]).
//!
//! Debug code names this crate `rdb` (the package is `rdb-api`, its library `rdb`):
//!
//! ```ignore
//! #[debug_only]
//! #[rdb_macros::on_syscall(write, after)]
//! fn who_writes(call: &rdb::Syscall) {
//!     if call.fd() == Some(1) && call.data().contains(&0) {
//!         eprintln!("NUL written by {}", rdb::backtrace());
//!     }
//! }
//! ```
//!
//! # Where it works
//!
//! Debug code runs in rdb's debug host, which loads the debug module and fills
//! [`RDB_HOST_SERVICES`] with the functions below answer from: the host sees the stopped
//! program's registers and a read-only mirror of its memory, and unwinds the program's stack with
//! the unwind tables (`.eh_frame`) of each module, naming frames from the main binary's DWARF (and
//! a library's own debug information or symbols). In a plain `cargo build` of instrumented source
//! (where regions run as ordinary code and callbacks never run) nothing fills the table:
//! [`backtrace`] is empty and says why, [`location`] is `None`, [`watch`] returns
//! [`WatchError::NotReplaying`].
//!
//! # Layout
//!
//! [`Syscall`] is `#[repr(C)]`, the same struct as C's `rdb_syscall` (`rdb.h`): the replayer
//! builds it once for both languages. Its 112 bytes: `number` u64, `args` 6 × u64, `result` i64,
//! `flags` u32 (1: completed, 2: data truncated), `thread` u32, `fd` i32 (-1: none), `process`
//! u32, `name` pointer and `name_len` u64 (NUL-terminated), `data` pointer and `data_len` u64.

#![deny(missing_docs)]

use std::fmt;

/// A system call of the program, as a syscall callback sees it (`#[rdb_macros::on_syscall(..)]`).
///
/// Everything comes from the recording: the arguments the program passed, the result the kernel
/// gave it, and the bytes the call moved.
#[repr(C)]
pub struct Syscall {
    number: u64,
    args: [u64; 6],
    result: i64,
    flags: u32,
    thread: u32,
    fd: i32,
    process: u32,
    name: *const u8,
    name_len: u64,
    data: *const u8,
    data_len: u64,
}

impl Syscall {
    /// The x86-64 system call number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Its name (`write`, `openat`, ...).
    pub fn name(&self) -> &str {
        // SAFETY: the replayer points `name` at `name_len` bytes of ASCII that live for the call.
        let bytes = unsafe { raw_slice(self.name, self.name_len) };
        std::str::from_utf8(bytes).unwrap_or("?")
    }

    /// The six argument registers as the program set them (unused ones as they were).
    pub fn args(&self) -> [u64; 6] {
        self.args
    }

    /// Argument `i` (0-based); 0 past the sixth.
    pub fn arg(&self, i: usize) -> u64 {
        self.args.get(i).copied().unwrap_or(0)
    }

    /// The recorded result (a negative errno on failure), in an `after` callback; `None` in a
    /// `before` callback, where the call has not run yet.
    pub fn result(&self) -> Option<i64> {
        (self.flags & FLAG_COMPLETED != 0).then_some(self.result)
    }

    /// The file descriptor the call works on, for calls whose first argument is one (`read`,
    /// `write`, `sendto`, `close`, ...).
    pub fn fd(&self) -> Option<i32> {
        (self.fd >= 0).then_some(self.fd)
    }

    /// The bytes the call moved between the program and the outside world: what it sends for
    /// calls that read the program's memory (`write`, `pwrite64`, `writev`, `sendto`: the bytes
    /// written, as many as the recorded result says were taken), what it received for calls that
    /// fill it (`read`, `pread64`, `readv`, `recvfrom`, `recvmsg`: in an `after` callback only).
    /// Empty for other calls. Scattered data (iovecs) is copied for the callback up to
    /// 60 KiB: see [`Syscall::data_truncated`].
    pub fn data(&self) -> &[u8] {
        // SAFETY: the replayer points `data` at `data_len` bytes that live for the call.
        unsafe { raw_slice(self.data, self.data_len) }
    }

    /// The data as text, with invalid UTF-8 replaced.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.data())
    }

    /// The recorded id of the thread that made the call (what `gettid` returned to it).
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// The recorded id of its process.
    pub fn process(&self) -> u32 {
        self.process
    }

    /// Whether this is a `before` callback (the call has not run yet).
    pub fn is_before(&self) -> bool {
        self.flags & FLAG_COMPLETED == 0
    }

    /// Whether [`Syscall::data`] holds only the first part of the data (a call that scattered
    /// more than 60 KiB over several buffers).
    pub fn data_truncated(&self) -> bool {
        self.flags & FLAG_TRUNCATED != 0
    }
}

/// [`Syscall`] flag: the call completed (an `after` callback).
const FLAG_COMPLETED: u32 = 1;
/// [`Syscall`] flag: the data was cut short.
const FLAG_TRUNCATED: u32 = 2;

impl fmt::Debug for Syscall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name())?;
        for (i, a) in self.args.iter().take(3).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{a:#x}")?;
        }
        f.write_str(")")?;
        if let Some(r) = self.result() {
            write!(f, " = {r}")?;
        }
        Ok(())
    }
}

/// # Safety
/// `ptr` must point to `len` readable bytes that outlive the returned slice (or `len` is 0).
unsafe fn raw_slice<'a>(ptr: *const u8, len: u64) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: forwarded from the function's contract.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }
}

/// An access to watched memory, as a memory callback (`#[rdb_macros::on_write(..)]`,
/// `on_read`) sees it: `#[repr(C)]`, the same struct as C's `rdb_access` (40 bytes: `address`
/// u64, `len` u64, `pc` u64, `thread` u32, `flags` u32 (1: the bytes changed, 2: a system call
/// wrote them), `syscall` u64).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Access {
    address: u64,
    len: u64,
    pc: u64,
    thread: u32,
    flags: u32,
    syscall: u64,
}

impl Access {
    /// The watched address.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// How many bytes are watched there.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is watched (never for a real access).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address right after the accessing instruction (the processor reports accesses
    /// once the instruction completed); [`location`] and [`backtrace`] name the accessing
    /// instruction's own line.
    pub fn pc(&self) -> u64 {
        self.pc
    }

    /// The recorded id of the thread that accessed it.
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// Whether the bytes changed (a write; an unchanged value after a `on_read` hit means a read,
    /// or a write of the same bytes).
    pub fn changed(&self) -> bool {
        self.flags & 1 != 0
    }

    /// The system call that wrote the memory (the kernel's writes, e.g. `read` into a watched
    /// buffer, are replayed from the trace and reported at the call's exit), if one did.
    pub fn syscall(&self) -> Option<u64> {
        (self.flags & 2 != 0).then_some(self.syscall)
    }
}

/// One frame of the program's stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The code address (for frames above the innermost one: the return address).
    pub pc: u64,
    /// The function, as the DWARF or the symbol table names it (`app::vm::Vm::push`, `write`).
    pub function: Option<String>,
    /// Source file, line and column of `pc` (of the call, for frames above the innermost one).
    pub file: Option<String>,
    /// 1-based line; 0 when unknown.
    pub line: u32,
    /// 1-based column; 0 when unknown.
    pub column: u32,
    /// The file the code belongs to (the program's executable, `libc.so.6`, ...).
    pub object: Option<String>,
    /// The code is the program's executable's (not a shared library's).
    pub in_program: bool,
}

impl Frame {
    /// Whether the frame is the program's own code: in its executable, with a source file that
    /// is not Rust's standard library (`/rustc/...`) nor a crate of cargo's registry.
    pub fn is_user_code(&self) -> bool {
        self.in_program
            && self.file.as_deref().is_some_and(|f| !f.starts_with("/rustc/") && !f.contains("/.cargo/registry/"))
    }

    /// `file:line:column` (or `file:line`), when the frame has a source location.
    pub fn source(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        Some(match (self.line, self.column) {
            (0, _) => file.clone(),
            (l, 0) => format!("{file}:{l}"),
            (l, c) => format!("{file}:{l}:{c}"),
        })
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.function {
            Some(name) => f.write_str(name)?,
            None => write!(f, "{:#x}", self.pc)?,
        }
        match self.source() {
            Some(source) => write!(f, " at {source}"),
            None => match &self.object {
                Some(o) => write!(f, " in {}", o.rsplit('/').next().unwrap_or(o)),
                None => Ok(()),
            },
        }
    }
}

/// The program's stack at the point debug code runs, innermost frame first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Backtrace {
    frames: Vec<Frame>,
    /// Why the backtrace is empty or stops early, when it does.
    note: Option<String>,
}

impl Backtrace {
    /// The frames, innermost first.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Why the backtrace is empty or ends before `main`'s caller, when rdb knows.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Whether some frame is in a function of this name: the last segment of its path, or the
    /// whole path (`push`, `Vm::push`, `app::vm::Vm::push`).
    pub fn contains(&self, function: &str) -> bool {
        self.frames.iter().any(|f| f.function.as_deref().is_some_and(|n| names_function(n, function)))
    }

    /// The innermost frame of the program's own code (see [`Frame::is_user_code`]; else the
    /// innermost frame in the program's executable).
    pub fn program_frame(&self) -> Option<&Frame> {
        self.frames.iter().find(|f| f.is_user_code()).or_else(|| self.frames.iter().find(|f| f.in_program))
    }
}

/// Whether the qualified name `name` is `wanted` or ends with `::wanted`.
fn names_function(name: &str, wanted: &str) -> bool {
    name == wanted || name.strip_suffix(wanted).is_some_and(|head| head.ends_with("::"))
}

impl fmt::Display for Backtrace {
    /// One line, innermost frame first (`write in libc.so.6 <- emit at src/main.rs:9:5 <- main
    /// at src/main.rs:20:5`); with `{:#}` one frame per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.frames.is_empty() {
            return write!(f, "(no backtrace: {})", self.note.as_deref().unwrap_or("no frames"));
        }
        for (i, frame) in self.frames.iter().enumerate() {
            if f.alternate() {
                if i > 0 {
                    f.write_str("\n")?;
                }
                write!(f, "#{i} {frame}")?;
            } else {
                if i > 0 {
                    f.write_str(" <- ")?;
                }
                write!(f, "{frame}")?;
            }
        }
        Ok(())
    }
}

/// The program's stack where debug code runs (a region's location, a callback's event).
pub fn backtrace() -> Backtrace {
    let Some(services) = services() else {
        return Backtrace { frames: Vec::new(), note: Some(NOT_REPLAYING.into()) };
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        // SAFETY: the host's function writes at most `cap` bytes into `buf`.
        let needed = unsafe { (services.backtrace)(buf.as_mut_ptr(), buf.len()) };
        if needed <= buf.len() {
            buf.truncate(needed);
            return parse_backtrace(&buf);
        }
        buf.resize(needed, 0);
    }
}

/// The source location where debug code runs: the innermost frame of the program's own code (a
/// syscall callback is called inside the C library and Rust's standard library; this is where
/// the program's code called them; see [`Backtrace::program_frame`]).
/// `None` outside a replay or when no frame was found; where the program's code has no line
/// information (a release build without debug information) the frame has its function but no
/// `file`, and `line` 0.
pub fn location() -> Option<Frame> {
    let bt = backtrace();
    bt.program_frame().or(bt.frames.first()).cloned()
}

const NOT_REPLAYING: &str = "not running in rdb's debug host (a plain build runs debug code as ordinary code)";

/// Field separator and record terminator of the host's backtrace text.
const FIELD: u8 = 0x1f;
const RECORD: u8 = 0x1e;

/// Frames from the host's text: records of `pc, object, function, file, line, column, in_program`
/// separated by 0x1f and ended by 0x1e; a record whose pc field is `note` carries the note.
#[doc(hidden)]
pub fn parse_backtrace(text: &[u8]) -> Backtrace {
    let mut bt = Backtrace::default();
    for record in text.split(|&b| b == RECORD).filter(|r| !r.is_empty()) {
        let fields: Vec<String> =
            record.split(|&b| b == FIELD).map(|f| String::from_utf8_lossy(f).into_owned()).collect();
        let get = |i: usize| fields.get(i).filter(|s| !s.is_empty()).cloned();
        if fields.first().map(String::as_str) == Some("note") {
            bt.note = get(1);
            continue;
        }
        let Some(pc) = get(0).and_then(|p| u64::from_str_radix(&p, 16).ok()) else { continue };
        bt.frames.push(Frame {
            pc,
            object: get(1),
            function: get(2),
            file: get(3),
            line: get(4).and_then(|l| l.parse().ok()).unwrap_or(0),
            column: get(5).and_then(|c| c.parse().ok()).unwrap_or(0),
            in_program: get(6).as_deref() == Some("1"),
        });
    }
    bt
}

/// Why a watchpoint could not be set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchError {
    /// Not running under rdb's replay (a plain build).
    NotReplaying,
    /// The host refused it (the text says why).
    Refused(String),
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::NotReplaying => f.write_str(NOT_REPLAYING),
            WatchError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for WatchError {}

/// What a watchpoint reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum AccessKind {
    /// Writes that change the bytes (like gdb's `watch`).
    Write = 0,
    /// Reads and writes (like gdb's `awatch`).
    ReadWrite = 1,
}

/// Watches the program memory `value` lives in, from the next instruction the program runs
/// until the end of the replay: rdb reports each write that changes it (old and new value, the
/// writing instruction's source location and function, the thread) on its standard error, in
/// program order. Call it from a region or a callback with a reference to a program variable
/// (`rdb::watch(&self.len)`); the report names the place of the call.
///
/// The value is watched with the x86 debug registers: 4 exist per process, shared with
/// `on_write`/`on_read` callbacks (and a gdb attached with `rdb gdb`), each covering an aligned
/// piece of up to 8 bytes. A value that needs more registers than are free is watched with page
/// protection (every write to its pages stops the replay and is single-stepped: slower, see the
/// README); rdb says on its standard error which is used. [`watch_access`] beyond the registers
/// is refused with a warning. [`WatchError::Refused`] is for memory that is not the program's,
/// or zero-sized.
#[track_caller]
pub fn watch<T: ?Sized>(value: &T) -> Result<(), WatchError> {
    let at = std::panic::Location::caller();
    watch_range(value as *const T as *const u8 as u64, std::mem::size_of_val(value) as u64, AccessKind::Write, at)
}

/// Like [`watch`], reporting reads as well as writes.
#[track_caller]
pub fn watch_access<T: ?Sized>(value: &T) -> Result<(), WatchError> {
    let at = std::panic::Location::caller();
    watch_range(value as *const T as *const u8 as u64, std::mem::size_of_val(value) as u64, AccessKind::ReadWrite, at)
}

fn watch_range(address: u64, len: u64, access: AccessKind, at: &std::panic::Location<'_>) -> Result<(), WatchError> {
    let services = services().ok_or(WatchError::NotReplaying)?;
    let label = format!("{}:{}:{}", at.file(), at.line(), at.column());
    let mut why = vec![0u8; 512];
    // SAFETY: the host reads `label` and writes at most `why.len()` bytes into `why`.
    let n = unsafe {
        (services.watch)(address, len, access as u32, label.as_ptr(), label.len(), why.as_mut_ptr(), why.len())
    };
    if n == 0 {
        Ok(())
    } else {
        why.truncate(n.min(why.len()));
        Err(WatchError::Refused(String::from_utf8_lossy(&why).into_owned()))
    }
}

/// The functions the debug host gives debug code (filled in when it loads the module).
#[doc(hidden)]
#[repr(C)]
pub struct Services {
    /// [`SERVICES_VERSION`].
    pub version: u32,
    /// Writes the backtrace text into `buf` (at most `cap` bytes); returns its whole length.
    pub backtrace: unsafe extern "C" fn(buf: *mut u8, cap: usize) -> usize,
    /// Requests a watchpoint; returns 0, or the length of the reason it was refused, written
    /// into `why` (at most `why_cap` bytes).
    pub watch: unsafe extern "C" fn(
        address: u64,
        len: u64,
        access: u32,
        label: *const u8,
        label_len: usize,
        why: *mut u8,
        why_cap: usize,
    ) -> usize,
    /// Records the outcome of a check (`rdb_check!`, C's `rdb_check`) for `rdb find`: `ok` 1 or
    /// 0, the check's line and column in the user's source, the condition's text and the
    /// message.
    pub check: unsafe extern "C" fn(
        ok: u32,
        line: u32,
        column: u32,
        condition: *const u8,
        condition_len: usize,
        message: *const u8,
        message_len: usize,
    ),
}

/// The layout of [`Services`] the host must fill.
#[doc(hidden)]
pub const SERVICES_VERSION: u32 = 2;

/// Records a check's outcome for `rdb find` (what `rdb_check!` expands to in a debug module);
/// `message` is only called when a replay runs the check. Outside the debug host a failing
/// check prints the message on stderr.
#[doc(hidden)]
pub fn check(ok: bool, line: u32, column: u32, condition: &str, message: impl FnOnce() -> String) {
    let message = message();
    match services() {
        // SAFETY: the host reads the two strings during the call.
        Some(s) => unsafe {
            (s.check)(ok as u32, line, column, condition.as_ptr(), condition.len(), message.as_ptr(), message.len())
        },
        None if !ok => eprintln!("rdb_check failed at line {line}: {condition}: {message}"),
        None => {}
    }
}

/// Name of the slot below, which the debug host looks up when it loads a debug module.
#[doc(hidden)]
pub const SERVICES_SYMBOL: &str = "RDB_HOST_SERVICES";

/// The host's functions, or null outside the debug host.
#[doc(hidden)]
#[no_mangle]
pub static mut RDB_HOST_SERVICES: *const Services = std::ptr::null();

fn services() -> Option<&'static Services> {
    // SAFETY: the host writes the slot once, before any debug code runs; reading a `Copy` value
    // through a raw pointer avoids a reference to a `static mut`.
    let table = unsafe { std::ptr::addr_of!(RDB_HOST_SERVICES).read() };
    // SAFETY: a non-null slot points to the host's table, alive as long as the host.
    let table = unsafe { table.as_ref() }?;
    (table.version == SERVICES_VERSION).then_some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_the_host_debug_code_learns_why_nothing_is_known() {
        let bt = backtrace();
        assert!(bt.frames().is_empty());
        assert!(bt.to_string().contains("not running in rdb's debug host"), "{bt}");
        assert_eq!(location(), None);
        assert_eq!(watch(&5u32), Err(WatchError::NotReplaying));
    }

    #[test]
    fn the_host_text_becomes_frames() {
        let text = b"7ffff7e9a1b0\x1f/lib/libc.so.6\x1fwrite\x1f\x1f0\x1f0\x1f0\x1e\
                     555555555189\x1f/app\x1fapp::emit\x1fsrc/main.rs\x1f9\x1f5\x1f1\x1enote\x1fstack ends\x1e";
        let bt = parse_backtrace(text);
        assert_eq!(bt.frames().len(), 2);
        assert_eq!(bt.to_string(), "write in libc.so.6 <- app::emit at src/main.rs:9:5");
        assert_eq!(format!("{bt:#}"), "#0 write in libc.so.6\n#1 app::emit at src/main.rs:9:5");
        assert!(bt.contains("emit") && bt.contains("app::emit") && !bt.contains("mit"));
        assert_eq!(bt.program_frame().map(|f| f.line), Some(9));
        assert_eq!(bt.note(), Some("stack ends"));
    }

    #[test]
    fn a_syscall_reads_its_fields() {
        let name = b"write\0";
        let data = b"hi\n";
        let call = Syscall {
            number: 1,
            args: [1, 0x1000, 3, 0, 0, 0],
            result: 3,
            flags: FLAG_COMPLETED,
            thread: 42,
            fd: 1,
            process: 42,
            name: name.as_ptr(),
            name_len: 5,
            data: data.as_ptr(),
            data_len: 3,
        };
        assert_eq!((call.name(), call.fd(), call.result(), call.data()), ("write", Some(1), Some(3), &b"hi\n"[..]));
        assert_eq!(format!("{call:?}"), "write(0x1, 0x1000, 0x3) = 3");
        assert_eq!(std::mem::size_of::<Syscall>(), 112);
    }
}
