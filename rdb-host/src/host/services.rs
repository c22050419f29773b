//! What the host gives debug code through `rdb::` (the `rdb-api` crate, C's `rdb.h`): the
//! program's backtrace where the current call stopped it, and watchpoint requests.
//!
//! **Backtraces** are computed here, on the mirror: the registers of the stop come with each
//! call; the program's objects (executable and shared libraries, with their load biases) are
//! read from the dynamic linker's `link_map` list in the mirrored memory (`DT_DEBUG` →
//! `r_debug`), since a replayed process's `/proc/PID/maps` names no library (replay maps
//! anonymous memory filled with their bytes); frames are unwound with each object's
//! `.eh_frame` (gimli's CFI evaluator) reading the mirrored stack; names and lines come from the
//! object's DWARF (`addr2line`, which also finds a library's separate debug file, e.g. Debian's
//! `libc6-dbg`), else from its symbol table. Stack reads are checked against the mirror's
//! ranges: an unwinder following garbage stops instead of faulting.
//!
//! **Checks** (`rdb_check!`) are recorded during the call and sent back with its reply, with the
//! backtrace when the call asks for it (`rdb find` does at the hit it reports).
//!
//! **Watch requests** (`rdb::watch`) are queued during the call and sent back with its reply;
//! the replayer arms them before the program runs again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gimli::{EhFrame, EndianRcSlice, RunTimeEndian, UnwindSection};

use super::mirror;

type Slice = EndianRcSlice<RunTimeEndian>;

/// The registers of the current stop (`user_regs_struct` order), and whether `rip` is right
/// after an instruction that accessed watched memory (frame 0's line is then the instruction
/// before it).
#[derive(Clone, Copy, Default)]
pub(crate) struct StopRegs {
    pub(crate) regs: [u64; 27],
    pub(crate) after_access: bool,
}

/// Indices in `user_regs_struct`.
const RBP: usize = 4;
const RBX: usize = 5;
const R12: usize = 3;
const R13: usize = 2;
const R14: usize = 1;
const R15: usize = 0;
const RIP: usize = 16;
const RSP: usize = 19;

static STOP: Mutex<Option<StopRegs>> = Mutex::new(None);
/// The main binary (path with DWARF) the host serves.
static BINARY: Mutex<Option<PathBuf>> = Mutex::new(None);
thread_local! {
    /// Objects loaded for backtraces (debug code runs on the host's main thread).
    static OBJECTS: std::cell::RefCell<HashMap<PathBuf, Object>> = std::cell::RefCell::new(HashMap::new());
}
static WATCHES: Mutex<Vec<WatchRequest>> = Mutex::new(Vec::new());
/// The current call's copies of program memory: (host address, length, program address).
static COPIES: Mutex<Vec<(u64, u64, u64)>> = Mutex::new(Vec::new());

pub(crate) fn set_copies(copies: Vec<(u64, u64, u64)>) {
    *COPIES.lock().unwrap_or_else(|e| e.into_inner()) = copies;
}

/// A watchpoint debug code asked for.
#[derive(Debug, Clone)]
pub(crate) struct WatchRequest {
    pub(crate) address: u64,
    pub(crate) len: u64,
    pub(crate) access: u32,
    pub(crate) label: String,
}

/// The user's lines of the binary's sources, by file.
static LINE_MAPS: Mutex<Option<HashMap<PathBuf, Vec<u32>>>> = Mutex::new(None);

pub(crate) fn set_line_maps(maps: HashMap<PathBuf, Vec<u32>>) {
    *LINE_MAPS.lock().unwrap_or_else(|e| e.into_inner()) = Some(maps);
}

/// The user's line for `line` of `file` as the binary's DWARF has it.
fn user_line(file: &str, line: u32) -> u32 {
    let maps = LINE_MAPS.lock().unwrap_or_else(|e| e.into_inner());
    maps.as_ref()
        .and_then(|m| m.get(Path::new(file)))
        .and_then(|lines| lines.get((line as usize).checked_sub(1)?))
        .copied()
        .filter(|&l| l != 0)
        .unwrap_or(line)
}

pub(crate) fn set_binary(path: PathBuf) {
    *BINARY.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
}

pub(crate) fn set_stop(stop: Option<StopRegs>) {
    *STOP.lock().unwrap_or_else(|e| e.into_inner()) = stop;
}

/// The watch requests of the call that just ended.
pub(crate) fn take_watches() -> Vec<WatchRequest> {
    std::mem::take(&mut *WATCHES.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The table debug modules find through `RDB_HOST_SERVICES`.
pub(crate) static SERVICES: rdb::Services = rdb::Services {
    version: rdb::SERVICES_VERSION,
    backtrace: service_backtrace,
    watch: service_watch,
    check: service_check,
};

/// A check's outcome (`rdb_check!`), sent back with the call's reply.
#[derive(Debug, Clone)]
pub(crate) struct CheckRecord {
    pub(crate) ok: bool,
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) condition: String,
    pub(crate) message: String,
    /// The program's backtrace at the check, when the call asked for it.
    pub(crate) backtrace: String,
}

static CHECKS: Mutex<Vec<CheckRecord>> = Mutex::new(Vec::new());
/// Whether the current call's checks carry the program's backtrace.
static CHECK_BACKTRACES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn set_check_backtraces(on: bool) {
    CHECK_BACKTRACES.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The checks of the call that just ended.
pub(crate) fn take_checks() -> Vec<CheckRecord> {
    std::mem::take(&mut *CHECKS.lock().unwrap_or_else(|e| e.into_inner()))
}

unsafe extern "C" fn service_check(
    ok: u32,
    line: u32,
    column: u32,
    condition: *const u8,
    condition_len: usize,
    message: *const u8,
    message_len: usize,
) {
    // SAFETY: the caller passes readable strings of these lengths.
    let text =
        |p: *const u8, n: usize| String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p, n) }).into_owned();
    let backtrace = if CHECK_BACKTRACES.load(std::sync::atomic::Ordering::Relaxed) {
        let raw = std::panic::catch_unwind(backtrace_text).unwrap_or_default();
        format!("{:#}", rdb::parse_backtrace(&raw))
    } else {
        String::new()
    };
    let record = CheckRecord {
        ok: ok != 0,
        line,
        column,
        condition: text(condition, condition_len),
        message: text(message, message_len),
        backtrace,
    };
    CHECKS.lock().unwrap_or_else(|e| e.into_inner()).push(record);
}

unsafe extern "C" fn service_backtrace(buf: *mut u8, cap: usize) -> usize {
    let text = std::panic::catch_unwind(backtrace_text).unwrap_or_else(|_| b"note\x1fthe unwinder failed\x1e".to_vec());
    let n = text.len().min(cap);
    // SAFETY: the caller passes `cap` writable bytes at `buf`.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n) };
    text.len()
}

unsafe extern "C" fn service_watch(
    address: u64,
    len: u64,
    access: u32,
    label: *const u8,
    label_len: usize,
    why: *mut u8,
    why_cap: usize,
) -> usize {
    // SAFETY: the caller passes `label_len` readable bytes.
    let label = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(label, label_len) }).into_owned();
    // A copy the replayer made of a small stack variable stands for the program's memory.
    let copied = COPIES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|&&(host, n, _)| host <= address && address.saturating_add(len) <= host + n)
        .map(|&(host, _, from)| from + (address - host));
    let address = copied.unwrap_or(address);
    let refusal = if len == 0 {
        Some("a zero-sized value has no memory to watch".to_string())
    } else if !readable(address, len) {
        Some(format!(
            "{address:#x}..{:#x} is not the program's memory (a debug-only value? watch program variables)",
            address.wrapping_add(len)
        ))
    } else {
        WATCHES.lock().unwrap_or_else(|e| e.into_inner()).push(WatchRequest { address, len, access, label });
        None
    };
    match refusal {
        None => 0,
        Some(text) => {
            let n = text.len().min(why_cap);
            // SAFETY: the caller passes `why_cap` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), why, n) };
            n.max(1)
        }
    }
}

/// Whether `[address, address+len)` is mirrored program memory that can be read.
fn readable(address: u64, len: u64) -> bool {
    // SAFETY: debug code (the caller) is the only user of the state during its call.
    let st = unsafe { mirror::state() };
    st.readable_now(address, len)
}

/// 8 bytes of program memory, if mirrored and readable.
fn read_u64(address: u64) -> Option<u64> {
    // SAFETY: checked readable in the mirror; a fault fills the page.
    readable(address, 8).then(|| unsafe { (address as *const u64).read_unaligned() })
}

/// A NUL-terminated string of program memory (at most 4 KiB), read 8 bytes at a time.
fn read_cstring(read: Reader<'_>, address: u64) -> Option<String> {
    let mut out = Vec::new();
    for i in 0..512 {
        let word = read(address + 8 * i)?.to_le_bytes();
        for b in word {
            if b == 0 {
                return Some(String::from_utf8_lossy(&out).into_owned());
            }
            out.push(b);
        }
    }
    None
}

/// Reads 8 bytes of the program's memory (the mirror's in the host, the tracee's for
/// [`program_backtrace`]).
type Reader<'a> = &'a dyn Fn(u64) -> Option<u64>;

/// An object of the program, loaded for unwinding and naming.
struct Object {
    eh_frame: Option<(EhFrame<Slice>, gimli::BaseAddresses)>,
    /// Link-time address ranges of its loadable segments.
    segments: Vec<(u64, u64)>,
    dynamic: Option<u64>,
    names: Option<addr2line::Loader>,
    /// Function symbols (static and dynamic) with a size, as (start, end, name), by start:
    /// an address past a symbol's end is not named after it (a stripped library's local
    /// functions, `start_thread`, are not the exported function before them).
    symbols: Vec<(u64, u64, String)>,
}

impl Object {
    fn load(path: &Path) -> Option<Object> {
        use object::{Object as _, ObjectSection, ObjectSegment, ObjectSymbol};
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let segments = file.segments().map(|s| (s.address(), s.address() + s.size())).collect();
        let dynamic = file.section_by_name(".dynamic").map(|s| s.address());
        let eh_frame = file.section_by_name(".eh_frame").and_then(|s| {
            let bytes = s.uncompressed_data().ok()?;
            let mut eh = EhFrame::from(Slice::new(std::rc::Rc::from(&*bytes), RunTimeEndian::Little));
            eh.set_address_size(8);
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(s.address());
            if let Some(t) = file.section_by_name(".text") {
                bases = bases.set_text(t.address());
            }
            if let Some(g) = file.section_by_name(".got") {
                bases = bases.set_got(g.address());
            }
            Some((eh, bases))
        });
        let mut symbols: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
            .filter_map(|s| Some((s.address(), s.address() + s.size(), s.name().ok()?.to_string())))
            .collect();
        symbols.sort();
        symbols.dedup_by_key(|s| s.0);
        Some(Object { eh_frame, segments, dynamic, names: addr2line::Loader::new(path).ok(), symbols })
    }

    /// The function symbol whose bytes hold `relative`.
    fn symbol(&self, relative: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.0 <= relative).checked_sub(1)?;
        let (_, end, name) = &self.symbols[i];
        (relative < *end).then_some(name.as_str())
    }

    fn contains(&self, relative: u64) -> bool {
        self.segments.iter().any(|&(s, e)| s <= relative && relative < e)
    }
}

/// The program's objects: (path, load bias), the executable first.
fn program_objects(
    objects: &mut HashMap<PathBuf, Object>,
    read: Reader<'_>,
    binary: &Path,
    bias: u64,
) -> Vec<(PathBuf, u64)> {
    let mut out = vec![(binary.to_path_buf(), bias)];
    let Some(exe) = loaded(objects, binary) else { return out };
    let Some(dynamic) = exe.dynamic else { return out };
    // DT_DEBUG (21) in the running .dynamic points to r_debug; r_map is its second field.
    let mut at = bias.wrapping_add(dynamic);
    let mut r_debug = 0;
    for _ in 0..512 {
        let (Some(tag), Some(value)) = (read(at), read(at + 8)) else { break };
        if tag == 0 {
            break;
        }
        if tag == 21 {
            r_debug = value;
            break;
        }
        at += 16;
    }
    let mut map = if r_debug != 0 { read(r_debug + 8).unwrap_or(0) } else { 0 };
    for _ in 0..1024 {
        if map == 0 {
            break;
        }
        let (Some(l_addr), Some(l_name), Some(next)) = (read(map), read(map + 8), read(map + 24)) else {
            break;
        };
        if let Some(name) = read_cstring(read, l_name).filter(|n| n.starts_with('/')) {
            out.push((PathBuf::from(name), l_addr));
        }
        map = next;
    }
    out
}

fn loaded<'a>(objects: &'a mut HashMap<PathBuf, Object>, path: &Path) -> Option<&'a Object> {
    if !objects.contains_key(path) {
        let object = Object::load(path)?;
        objects.insert(path.to_path_buf(), object);
    }
    objects.get(path)
}

/// The backtrace text `rdb-api` parses (see `rdb::backtrace`).
fn backtrace_text() -> Vec<u8> {
    let stop = *STOP.lock().unwrap_or_else(|e| e.into_inner());
    let binary = BINARY.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (Some(stop), Some(binary)) = (stop, binary) else {
        return b"note\x1fno stop is being served\x1e".to_vec();
    };
    // SAFETY: the caller is debug code, the only user of the state during its call.
    let bias = unsafe { mirror::state() }.bias;
    OBJECTS.with(|cell| backtrace_in(&mut cell.borrow_mut(), &read_u64, stop, &binary, bias))
}

/// The objects a [`ProgramBacktracer`] loaded (their unwind tables and DWARF), kept between
/// backtraces.
#[derive(Default)]
pub struct ProgramBacktracer {
    objects: HashMap<PathBuf, Object>,
}

impl ProgramBacktracer {
    /// The backtrace of the thread stopped as `target` has it, unwound as a check's is (the
    /// executable `binary` with its DWARF, the shared libraries the program loaded), read
    /// from the tracee itself: for the replayer's own reports, without a debug host.
    /// `after_access`: `rip` is right after an instruction that wrote watched memory (frame
    /// 0 names that instruction's line).
    pub fn backtrace(&mut self, target: &dyn rdb_tracee::Target, binary: &Path, after_access: bool) -> rdb::Backtrace {
        let read = |address: u64| -> Option<u64> {
            let mut b = [0u8; 8];
            target.read_exact(address, &mut b).ok().map(|()| u64::from_le_bytes(b))
        };
        let stop = StopRegs { regs: rdb_tracee::ptrace::reg_words(target.regs()), after_access };
        let raw = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            backtrace_in(&mut self.objects, &read, stop, binary, target.load_bias())
        }))
        .unwrap_or_else(|_| b"note\x1fthe unwinder failed\x1e".to_vec());
        rdb::parse_backtrace(&raw)
    }
}

fn backtrace_in(
    objects: &mut HashMap<PathBuf, Object>,
    read: Reader<'_>,
    stop: StopRegs,
    binary: &Path,
    bias: u64,
) -> Vec<u8> {
    let list = program_objects(objects, read, binary, bias);
    let mut out = Vec::new();
    let mut regs = stop.regs;
    let mut note = None;
    for depth in 0..128 {
        let pc = regs[RIP];
        // Frames above the innermost are return addresses: their call is the byte before.
        let probe = if depth == 0 && !stop.after_access { pc } else { pc.wrapping_sub(1) };
        let found = list.iter().find_map(|(path, bias)| {
            let object = loaded(objects, path)?;
            object.contains(probe.wrapping_sub(*bias)).then(|| (path.clone(), *bias))
        });
        let Some((path, obj_bias)) = found else {
            note = Some(format!("{pc:#x} is in no object the program loaded"));
            out.extend(record(pc, None, None, None, false));
            break;
        };
        let object = loaded(objects, &path).expect("loaded above");
        let in_program = path == *binary;
        let relative = probe.wrapping_sub(obj_bias);
        let mut named = false;
        if let Some(loader) = &object.names {
            if let Ok(mut frames) = loader.find_frames(relative) {
                let mut inner = Vec::new();
                while let Ok(Some(f)) = frames.next() {
                    let function = f.function.as_ref().and_then(|n| n.demangle().ok().map(|s| strip_hash(&s)));
                    let (file, line, column) = match &f.location {
                        Some(l) => {
                            let line = l.line.unwrap_or(0);
                            let line = l.file.map_or(line, |f| user_line(f, line));
                            (l.file.map(str::to_string), line, l.column.unwrap_or(0))
                        }
                        None => (None, 0, 0),
                    };
                    inner.push((function, file, line, column));
                }
                for (function, file, line, column) in inner {
                    if function.is_some() || file.is_some() {
                        named = true;
                        out.extend(record(
                            pc,
                            Some(&path),
                            function.as_deref(),
                            file.as_deref().map(|f| (f, line, column)),
                            in_program,
                        ));
                    }
                }
            }
            if !named {
                if let Some(symbol) = object.symbol(relative) {
                    named = true;
                    let name = addr2line::demangle_auto(symbol.into(), None);
                    out.extend(record(pc, Some(&path), Some(&strip_hash(&name)), None, in_program));
                }
            }
        }
        if !named {
            out.extend(record(pc, Some(&path), None, None, in_program));
        }
        match unwind(object, read, pc.wrapping_sub(obj_bias), depth == 0 && !stop.after_access, &regs) {
            Ok(Some(next)) => regs = next,
            Ok(None) => break,
            Err(why) => {
                note = Some(why);
                break;
            }
        }
        if is_outermost(&out) {
            break;
        }
    }
    if let Some(n) = note {
        out.extend_from_slice(b"note\x1f");
        out.extend_from_slice(n.as_bytes());
        out.push(0x1e);
    }
    out
}

/// Rust legacy symbols' `::h0123…` hash suffix dropped.
fn strip_hash(name: &str) -> String {
    match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => head.to_string(),
        _ => name.to_string(),
    }
}

/// Whether the last frame recorded is where a stack starts (`_start`, a thread's `clone3`).
fn is_outermost(out: &[u8]) -> bool {
    let last = out[..out.len().saturating_sub(1)].rsplit(|&b| b == 0x1e).next().unwrap_or(&[]);
    let function = last.split(|&b| b == 0x1f).nth(2).unwrap_or(&[]);
    matches!(function, b"_start" | b"clone3" | b"__clone3" | b"clone")
}

fn record(
    pc: u64,
    object: Option<&Path>,
    function: Option<&str>,
    source: Option<(&str, u32, u32)>,
    in_program: bool,
) -> Vec<u8> {
    let mut r = format!(
        "{pc:x}\x1f{}\x1f{}\x1f",
        object.map(|o| o.display().to_string()).unwrap_or_default(),
        function.unwrap_or("")
    );
    if let Some((file, line, column)) = source {
        r.push_str(&format!("{file}\x1f{line}\x1f{column}"));
    } else {
        r.push_str("\x1f0\x1f0");
    }
    r.push_str(if in_program { "\x1f1\x1e" } else { "\x1f0\x1e" });
    r.into_bytes()
}

/// The caller's registers, from the CFI row for `relative` (the object's link-time address of
/// the frame's pc; `top`: the innermost frame, whose pc is not a return address). `None` at
/// the end of the stack.
fn unwind(
    object: &Object,
    read: Reader<'_>,
    relative: u64,
    top: bool,
    regs: &[u64; 27],
) -> Result<Option<[u64; 27]>, String> {
    let Some((eh, bases)) = &object.eh_frame else { return Err("no unwind information (.eh_frame)".into()) };
    let lookup = if top { relative } else { relative.wrapping_sub(1) };
    let mut ctx = Box::new(gimli::UnwindContext::new());
    let row = eh
        .unwind_info_for_address(bases, &mut ctx, lookup, EhFrame::cie_from_offset)
        .map_err(|_| format!("no unwind information for {:#x}", regs[RIP]))?;
    let dwarf_reg = |r: gimli::Register| -> Option<u64> {
        Some(match r.0 {
            0 => regs[10],
            1 => regs[12],
            2 => regs[11],
            3 => regs[RBX],
            4 => regs[13],
            5 => regs[14],
            6 => regs[RBP],
            7 => regs[RSP],
            8 => regs[9],
            9 => regs[8],
            10 => regs[7],
            11 => regs[6],
            12 => regs[R12],
            13 => regs[R13],
            14 => regs[R14],
            15 => regs[R15],
            16 => regs[RIP],
            _ => return None,
        })
    };
    let cfa = match row.cfa() {
        gimli::CfaRule::RegisterAndOffset { register, offset } => {
            dwarf_reg(*register).ok_or("an unusual CFA rule")?.wrapping_add(*offset as u64)
        }
        gimli::CfaRule::Expression(_) => return Err("a CFA computed by an expression (not followed)".into()),
    };
    let restore = |reg: gimli::Register, current: u64| -> Result<u64, String> {
        match row.register(reg) {
            gimli::RegisterRule::Undefined => Ok(if reg == gimli::X86_64::RA { 0 } else { current }),
            gimli::RegisterRule::SameValue => Ok(current),
            gimli::RegisterRule::Offset(o) => {
                read(cfa.wrapping_add(o as u64)).ok_or_else(|| format!("the stack at {cfa:#x} cannot be read"))
            }
            gimli::RegisterRule::ValOffset(o) => Ok(cfa.wrapping_add(o as u64)),
            gimli::RegisterRule::Register(r) => dwarf_reg(r).ok_or_else(|| "an unusual register rule".to_string()),
            _ => Err("an unwind rule rdb does not follow".into()),
        }
    };
    let mut next = *regs;
    // Undefined return address: the outermost frame.
    let ra = match row.register(gimli::X86_64::RA) {
        gimli::RegisterRule::Undefined => return Ok(None),
        _ => restore(gimli::X86_64::RA, 0)?,
    };
    if ra == 0 {
        return Ok(None);
    }
    next[RIP] = ra;
    next[RSP] = cfa;
    next[RBP] = restore(gimli::X86_64::RBP, regs[RBP])?;
    next[RBX] = restore(gimli::X86_64::RBX, regs[RBX])?;
    next[R12] = restore(gimli::X86_64::R12, regs[R12])?;
    next[R13] = restore(gimli::X86_64::R13, regs[R13])?;
    next[R14] = restore(gimli::X86_64::R14, regs[R14])?;
    next[R15] = restore(gimli::X86_64::R15, regs[R15])?;
    if next[RSP] <= regs[RSP] && next[RIP] == regs[RIP] {
        return Err("the unwinder made no progress".into());
    }
    Ok(Some(next))
}

/// Prints rdb's report of a watched value's change (see `protocol::WATCH_REPORT`): `argv` holds
/// the old bytes, the new bytes, the `rdb_access` record, the label and the writing system
/// call's name (empty for an instruction), each as host storage.
pub(crate) fn report_watch(argv: &[*const std::ffi::c_void]) {
    let bytes = |i: usize, len: usize| -> &[u8] {
        // SAFETY: the replayer sent each argument's bytes; `len` is within them (checked by the
        // record's own length fields below, which the replayer wrote).
        unsafe { std::slice::from_raw_parts(argv[i] as *const u8, len) }
    };
    let access = bytes(2, 40);
    let word = |o: usize| u64::from_le_bytes(access[o..o + 8].try_into().expect("8 bytes"));
    let (address, len) = (word(0), word(8) as usize);
    let thread = u32::from_le_bytes(access[24..28].try_into().expect("4 bytes"));
    let (old, new) = (bytes(0, len), bytes(1, len));
    let text = |i: usize| -> String {
        let p = argv[i] as *const u8;
        let mut n = 0;
        // SAFETY: the replayer sends these texts NUL-terminated.
        while n < 4096 && unsafe { *p.add(n) } != 0 {
            n += 1;
        }
        String::from_utf8_lossy(bytes(i, n)).into_owned()
    };
    let (label, by) = (text(3), text(4));
    let value = |b: &[u8]| -> String {
        if b.len() <= 8 {
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(w).to_string()
        } else {
            b.iter().map(|x| format!("{x:02x}")).collect()
        }
    };
    let place = if by.is_empty() {
        let bt = backtrace_text();
        match program_frame(&bt) {
            Some(frame) => format!("at {frame}"),
            None => "at an unknown place".to_string(),
        }
    } else {
        format!("by system call `{by}`")
    };
    eprintln!(
        "rdb: watch {label}: {address:#x} ({len} bytes) changed {} -> {}, thread {thread}, {place}",
        value(old),
        value(new)
    );
}

/// The innermost frame of the program's own code in a backtrace text: `function at file:line`.
fn program_frame(text: &[u8]) -> Option<String> {
    let frames: Vec<Vec<String>> = text
        .split(|&b| b == 0x1e)
        .filter(|r| !r.is_empty() && !r.starts_with(b"note"))
        .map(|r| r.split(|&b| b == 0x1f).map(|f| String::from_utf8_lossy(f).into_owned()).collect())
        .collect();
    let user = |f: &Vec<String>| {
        f.get(6).is_some_and(|p| p == "1")
            && f.get(3).is_some_and(|file| {
                !file.is_empty() && !file.starts_with("/rustc/") && !file.contains("/.cargo/registry/")
            })
    };
    let frame = frames.iter().find(|f| user(f)).or_else(|| frames.first())?;
    let function = frame.get(2).filter(|s| !s.is_empty()).cloned().unwrap_or_else(|| format!("0x{}", frame[0]));
    Some(match frame.get(3).filter(|s| !s.is_empty()) {
        Some(file) => format!(
            "{function} ({file}:{}:{})",
            frame.get(4).map_or("0", String::as_str),
            frame.get(5).map_or("0", String::as_str)
        ),
        None => function,
    })
}
