//! The rdb descriptor format.
//!
//! `cargo rdb build` and `rdb-clang` write two JSON files beside each main
//! binary; any replayer uses them to run debug code at the right places:
//!
//! - [`FunctionDescriptors`] (`<bin>.rdb-functions.json`): for each debug
//!   region, how to find its debug function in the debug module, where it
//!   comes from in the source, and the code location(s) in the main binary
//!   where it must run.
//! - [`ArgumentDescriptors`] (`<bin>.rdb-arguments.json`): for each region and
//!   argument position, the program variable passed and where it lives at
//!   each code location.
//! - [`CallbackDescriptor`]s (in the function descriptor file): the debug-only
//!   functions to call when an event happens in the program (a system call,
//!   a call of a function, an access to watched memory).
//!
//! Both carry `format` and `version` fields checked on load ([`load_functions`],
//! [`load_arguments`]). Stability policy: fields are only ever added within a
//! version (readers ignore unknown fields); any rename, removal or change of
//! meaning bumps [`VERSION`]. The JSON schema is `descriptors/schema/*.json`,
//! generated from these types (`cargo test -p rdb-descriptors` checks it is
//! current; `RDB_BLESS=1` rewrites it). The prose is `descriptors/FORMAT.md`.

pub mod build;

pub use build::{CargoBuild, DebugLevel, ProgramBuild, SectionDigest};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Value of the `format` field of a function descriptor file.
pub const FUNCTIONS_FORMAT: &str = "rdb-functions";
/// Value of the `format` field of an argument descriptor file.
pub const ARGUMENTS_FORMAT: &str = "rdb-arguments";
/// The descriptor format version this crate reads and writes.
pub const VERSION: u32 = 5;

/// Name of the ELF section of a Rust debug module that maps region ids to
/// debug functions: pairs of little-endian `u64` (region id, function address).
pub const REGION_TABLE_SECTION: &str = "rdb_regions";

/// Name of the ELF section of a Rust debug module that maps callback ids to
/// debug functions (same layout as [`REGION_TABLE_SECTION`]).
pub const CALLBACK_TABLE_SECTION: &str = "rdb_callbacks";

/// `<bin>.rdb-functions.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionDescriptors {
    /// Always [`FUNCTIONS_FORMAT`].
    pub format: String,
    /// Always [`VERSION`] for files this crate writes.
    pub version: u32,
    /// Source language of the program: `rust` or `c`.
    pub language: Language,
    /// The compiler that built the main binary and the debug module
    /// (`rustc --version --verbose` first line, or `clang --version` first line).
    /// Type layouts are only shared when this matches.
    pub toolchain: String,
    /// The main binary these descriptors describe.
    pub binary: BinaryIdentity,
    /// File name of the debug module, relative to the descriptor file.
    pub debug_module: String,
    /// One entry per debug region.
    pub functions: Vec<FunctionDescriptor>,
    /// One entry per event callback (version 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callbacks: Vec<CallbackDescriptor>,
    /// For each source file rdb changed to build the main binary (debug code removed): the
    /// line of the user's file each line of the binary's source comes from, to report places
    /// in the program (backtraces) with the user's lines (version 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub line_maps: Vec<LineMap>,
}

/// Lines of a source file the main binary was built from, mapped to the user's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LineMap {
    /// The file, as the DWARF names it (absolute for Rust).
    pub file: PathBuf,
    /// Index `i`: the user's line for line `i + 1` of the binary's source.
    pub lines: Vec<u32>,
}

/// Identity of a file: where it was and what it contained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BinaryIdentity {
    /// Path of the file when the descriptors were written.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// BLAKE3 hash of the whole file, lowercase hex.
    pub blake3: String,
}

impl BinaryIdentity {
    /// The identity of the file at `path` as it is now. This is the one place
    /// rdb hashes a binary: producers write it into the descriptors, consumers
    /// compare it with a trace's recorded executable.
    pub fn of(path: &Path) -> std::io::Result<BinaryIdentity> {
        let data = std::fs::read(path)?;
        Ok(BinaryIdentity { path: path.to_path_buf(), size: data.len() as u64, blake3: hash_bytes(&data) })
    }
}

/// BLAKE3 of a file's bytes, lowercase hex (the `blake3` of [`BinaryIdentity`]).
pub fn hash_file(path: &Path) -> std::io::Result<String> {
    Ok(hash_bytes(&std::fs::read(path)?))
}

/// BLAKE3 of bytes, lowercase hex.
pub fn hash_bytes(data: &[u8]) -> String {
    blake3::hash(data).to_hex().to_string()
}

/// Source language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    C,
}

/// One debug region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionDescriptor {
    /// Region id, unique within one binary; argument descriptors refer to it.
    pub region: u32,
    /// How to find the region's debug function in the debug module.
    pub entry: DebugEntry,
    /// Where the region is written in the user's (instrumented) source: the
    /// `rdb_begin` marker, and the `rdb_end` marker.
    pub begin: SourceLocation,
    pub end: SourceLocation,
    /// Where the region runs in the source the main binary is built from (the
    /// instrumented source with regions stripped): the first statement after
    /// the region, or the end of the enclosing block. Lines differ from
    /// `begin` when debug-only items or regions above were removed.
    pub anchor: SourceLocation,
    /// The enclosing function, as written in the DWARF (`DW_AT_name`, with the
    /// linkage name when there is one).
    pub function: EnclosingFunction,
    /// Code locations in the main binary where the debug function must run,
    /// before the instruction at that address executes. Several when the
    /// compiler duplicated the code; empty when the region's code was removed
    /// (then `note` says why).
    pub locations: Vec<CodeLocation>,
    /// Human-readable remark (e.g. why `locations` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Copies of the region's code where it cannot run (version 5): the optimizer
    /// computes several calls at once there, or gave the copy no point where the
    /// region's place is well defined. A replayer stops at each address too and
    /// reports, each time the program passes there, that the region did not run
    /// and why, never running the debug function there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unserved: Vec<UnservedCopy>,
}

/// A copy of a region's code where the region cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnservedCopy {
    /// Where the program passes once per pass through the copy (module-relative),
    /// with its symbol and offset, as in [`CodeLocation`].
    pub address: u64,
    pub symbol: String,
    pub offset: u64,
    /// Why the region cannot run there, one sentence.
    pub reason: String,
}

/// How a replayer finds a region's debug function in the debug module.
///
/// Calling convention, for both kinds: the function is
/// `extern "C" fn(argv: *const *const c_void)`, where `argv[i]` is the
/// address of argument `i` (argument descriptor `position == i`) as the
/// debug code must see it: the program's own address for `stack`/`symbol`
/// arguments, or the address of a debug-side copy for `register`/`pieces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DebugEntry {
    /// An exported dynamic symbol of that name.
    Symbol { name: String },
    /// The entry of [`REGION_TABLE_SECTION`] whose id is the region id.
    RegionTable,
    /// The entry of [`CALLBACK_TABLE_SECTION`] whose id is the callback id.
    CallbackTable,
}

/// A debug-only function the replay calls when an event happens in the program.
///
/// Its debug function has the regions' calling convention (`argv`); what `argv`
/// holds depends on [`CallbackEvent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallbackDescriptor {
    /// Callback id, unique within the binary among region and callback ids;
    /// argument descriptors whose `region` is this id describe its arguments.
    pub id: u32,
    /// How to find its debug function in the debug module.
    pub entry: DebugEntry,
    /// The callback function as written (`who_writes`, `hooks::who_writes`).
    pub function: String,
    /// Where the callback's attribute (or C macro) is written.
    pub source: SourceLocation,
    /// What makes the replay call it.
    pub event: CallbackEvent,
    /// Human-readable remark (e.g. why it can never be called).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The event a callback is called for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "on", rename_all = "snake_case")]
pub enum CallbackEvent {
    /// Any of these system calls, before it runs or after it completed.
    /// `argv[0]` points to an `rdb_syscall` record (`rdb.h`, `rdb::Syscall`).
    Syscall { syscalls: Vec<SyscallName>, when: When },
    /// Each call of a function (`returns` false: once its arguments are in place, `argv[i]`
    /// pointing to argument `i` as the argument descriptors say), or each return from it
    /// (`argv[0]` pointing to the returned value).
    Call { function: String, target: CallTarget, returns: bool },
    /// Each access to a static of the program, through the x86 debug registers (`reads`
    /// false: writes only; true: reads and writes). `argv[0]` → the old bytes (`size`),
    /// `argv[1]` → the new bytes, `argv[2]` → an `rdb_access` record (`rdb.h`, `rdb::Access`).
    Access { variable: String, symbol: String, address: u64, size: u64, type_name: String, reads: bool },
    /// Never called by an event: a watched value for `rdb find --watch` (`#[watched(STATIC)]`),
    /// called where the search evaluates it. `argv[0]` points to the static's bytes in the
    /// program's memory; the function's value comes back as a check whose message is its
    /// `Debug` text.
    Watched { variable: String, symbol: String, address: u64, size: u64, type_name: String },
}

/// The function a call callback watches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallTarget {
    /// A function of the main binary, found in its DWARF: one site per out-of-line copy.
    Program {
        /// Its path (`events::vm::Vm::push`, C `insert`).
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        linkage_name: Option<String>,
        sites: Vec<CallSite>,
        /// For `returns`: how the value comes back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        return_value: Option<ReturnValue>,
    },
    /// A symbol found at run time: in the executable's or a shared library's dynamic symbol
    /// table (the first object defining it, in load order: the executable, then the libraries
    /// as they are mapped). Arguments are the System V argument registers at its first
    /// instruction (`argv[i]` → the 8 bytes of `rdi`, `rsi`, `rdx`, `rcx`, `r8`, `r9`), the
    /// returned value `rax`.
    Symbol { symbol: String },
}

/// One out-of-line copy of a function (module-relative addresses).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallSite {
    /// The function's first instruction.
    pub entry: u64,
    /// Where its arguments are in place (after the prologue): a call callback runs here.
    pub address: u64,
    /// Symbol containing `address`, and the offset into it.
    pub symbol: String,
    pub offset: u64,
    /// `address` is also a branch target inside the function (a loop starts there): the
    /// callback runs only at the first arrival after the function was entered at `entry`.
    pub reentered: bool,
}

/// How a function returns its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReturnValue {
    pub type_name: String,
    pub size: u64,
    pub class: ReturnClass,
}

/// Where a returned value is, once the function returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReturnClass {
    /// Nothing (a zero-sized type).
    None,
    /// In `rax` (up to 8 bytes).
    Rax,
    /// In `rax` then `rdx` (9 to 16 bytes).
    RaxRdx,
    /// In `xmm0` (floating point).
    Xmm0,
    /// In memory at the address `rax` holds.
    Memory,
}

/// A system call by name and x86-64 number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SyscallName {
    pub name: String,
    pub number: u64,
}

/// Before an event (a system call has not run yet) or after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum When {
    Before,
    After,
}

/// A place in a source file. Lines and columns are 1-based; columns count
/// characters (UTF-8 scalar values), as rustc's diagnostics do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceLocation {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

/// The function a region is written in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnclosingFunction {
    /// Name as in the source, with its module path when known (`app::Vm::run`).
    pub name: String,
    /// Mangled symbol name, when the function has one in the main binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linkage_name: Option<String>,
}

/// A code address in the main binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CodeLocation {
    /// Module-relative address: the virtual address in the ELF file (add the
    /// load bias of a position-independent executable).
    pub address: u64,
    /// Symbol (function) containing the address, and the offset into it.
    pub symbol: String,
    pub offset: u64,
    /// For [`DebugEntry::RegionTable`]: the id of the table entry to call at
    /// this location, when it is not the region id. A region in a generic
    /// function has one debug function per instantiation; each location
    /// (the code of one instantiation) names the entry of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<u32>,
}

/// `<bin>.rdb-arguments.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArgumentDescriptors {
    /// Always [`ARGUMENTS_FORMAT`].
    pub format: String,
    /// Always [`VERSION`] for files this crate writes.
    pub version: u32,
    pub arguments: Vec<ArgumentDescriptor>,
}

/// One argument of one region's debug function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArgumentDescriptor {
    /// The region (function descriptor `region`).
    pub region: u32,
    /// Position in `argv`, from 0.
    pub position: u32,
    /// The variable's name in the source (`self` for the method receiver).
    pub name: String,
    pub kind: ArgumentKind,
    /// The variable's type as the DWARF names it (`alloc::vec::Vec<i64>`).
    pub type_name: String,
    /// Size in bytes of the variable.
    pub size: u64,
    /// Where the variable lives at each of the region's code locations, in the
    /// order of the function descriptor's `locations`.
    pub locations: Vec<PlacedLocation>,
}

/// Whether an argument is a local of the enclosing function or a static,
/// or the identity of the function's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentKind {
    Local,
    Static,
    /// The canonical frame address of the function the region stopped in
    /// (an 8-byte value, a `computed` location): it tells one call from
    /// another (recursion, threads), so that debug-only locals a region
    /// shares with later regions are kept per call.
    Frame,
}

/// An argument's location at one code address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlacedLocation {
    /// The code address (a `CodeLocation::address` of the region).
    pub address: u64,
    pub location: Location,
    /// The variable's type and size at this address when they differ from
    /// the argument's `type_name` and `size`: the code of another
    /// instantiation of a generic function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Where a variable's value is, at one code address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum Location {
    /// The value is in a register (copy it into debug-side storage).
    Register { register: Register },
    /// The value is in memory at `register + offset`.
    Stack { base: Register, offset: i64 },
    /// The value is in memory at `symbol + offset` (module-relative `address`
    /// is given too; add the load bias).
    Symbol { symbol: String, offset: i64, address: u64 },
    /// The value is split: each piece gives `size` bytes, in order.
    Pieces { pieces: Vec<Piece> },
    /// The value is in memory at `P + offset`, where `P` is the 8-byte
    /// pointer held at `pointer` (a register's value, or the 8 bytes in
    /// memory at a `stack`, `symbol` or `indirect` location). Captured
    /// variables of closures and locals of `async` bodies live behind the
    /// closure's or future's `self` pointer.
    Indirect { pointer: Box<Location>, offset: i64 },
    /// The value is a constant known at compile time (little-endian bytes, hex).
    Implicit { bytes: String },
    /// The value is not stored anywhere but is `register + offset`, computed
    /// (`DW_OP_bregN offset, DW_OP_stack_value`): an index or counter the
    /// optimizer derives from another one (in an unrolled loop, each copy's
    /// `i` is the induction register plus that copy's offset). The value's
    /// `size` low bytes of the 64-bit sum, little-endian.
    Computed { register: Register, offset: i64 },
    /// The value held at the entry of the call the code location is in
    /// (version 4): the DWARF says so (`DW_OP_entry_value`), or the variable
    /// is a parameter the program never changes (a Rust binding without
    /// `mut`) that was in `value` on entry. At `entry` (module-relative, the
    /// function's first instruction) the value is at `value`; a replayer
    /// also breaks there and keeps the value's bytes per call, keyed by the
    /// canonical frame address at the entry (`rsp + 8`), and here passes the
    /// bytes kept for the call whose canonical frame address is `frame`. A
    /// call whose entry the replay did not see has no value: report it.
    EntryValue { entry: u64, value: Box<Location>, frame: FrameAddress },
    /// The compiler kept no location for the variable here.
    OptimizedOut,
    /// The DWARF names a place but the value is not there at this location,
    /// for `reason` (a sentence: a variable of an `async` body that the
    /// program does not keep across an earlier `.await`, whose frame slot
    /// is stale after the future is resumed).
    Unavailable { reason: String },
}

/// A DWARF register: its DWARF number and name (x86-64 System V numbering:
/// 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8..15 r8..r15,
/// 16 return address (rip), 17..32 xmm0..xmm15).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Register {
    pub dwarf: u16,
    pub name: String,
}

/// How to compute the canonical frame address (the value of `rsp` before the
/// call that entered the function) at a code location: `register + offset`,
/// from the unwind tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FrameAddress {
    pub register: Register,
    pub offset: i64,
}

/// One piece of a split value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Piece {
    /// Size in bytes.
    pub size: u64,
    pub location: Location,
}

impl Register {
    /// The register with this x86-64 DWARF number, named.
    pub fn x86_64(dwarf: u16) -> Register {
        const NAMES: [&str; 17] = [
            "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
            "r15", "rip",
        ];
        let name = match dwarf {
            0..=16 => NAMES[dwarf as usize].to_string(),
            17..=32 => format!("xmm{}", dwarf - 17),
            _ => format!("dwarf{dwarf}"),
        };
        Register { dwarf, name }
    }
}

impl FunctionDescriptors {
    /// A new, empty file for `binary`.
    pub fn new(language: Language, toolchain: String, binary: BinaryIdentity, debug_module: String) -> Self {
        FunctionDescriptors {
            format: FUNCTIONS_FORMAT.to_string(),
            version: VERSION,
            language,
            toolchain,
            binary,
            debug_module,
            functions: Vec::new(),
            callbacks: Vec::new(),
            line_maps: Vec::new(),
        }
    }
}

impl ArgumentDescriptors {
    /// A new, empty file.
    pub fn new() -> Self {
        ArgumentDescriptors { format: ARGUMENTS_FORMAT.to_string(), version: VERSION, arguments: Vec::new() }
    }
}

impl Default for ArgumentDescriptors {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a descriptor file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is not an rdb descriptor file: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path} has format `{found}`, expected `{expected}`")]
    Format { path: PathBuf, found: String, expected: &'static str },
    #[error("{path} has descriptor version {found}; this rdb reads version {VERSION}: rebuild with `cargo rdb build` (or rdb-clang) from this rdb")]
    Version { path: PathBuf, found: u32 },
}

#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

fn load<T: serde::de::DeserializeOwned>(path: &Path, expected: &'static str) -> Result<T, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
    let header: Header = serde_json::from_str(&text).map_err(|source| Error::Json { path: path.into(), source })?;
    if header.format != expected {
        return Err(Error::Format { path: path.into(), found: header.format, expected });
    }
    if header.version != VERSION {
        return Err(Error::Version { path: path.into(), found: header.version });
    }
    serde_json::from_str(&text).map_err(|source| Error::Json { path: path.into(), source })
}

/// Loads and checks a function descriptor file.
pub fn load_functions(path: &Path) -> Result<FunctionDescriptors, Error> {
    load(path, FUNCTIONS_FORMAT)
}

/// Loads and checks an argument descriptor file.
pub fn load_arguments(path: &Path) -> Result<ArgumentDescriptors, Error> {
    load(path, ARGUMENTS_FORMAT)
}

/// Writes a descriptor file atomically (temporary file, then rename), so a
/// reader never sees half a file.
pub fn store<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    text.push('\n');
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Paths of the artefacts that sit beside a main binary.
pub fn artefact_paths(binary: &Path) -> ArtefactPaths {
    let name = binary.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = binary.parent().unwrap_or(Path::new("."));
    ArtefactPaths {
        debug_module: dir.join(format!("{name}.rdb.so")),
        functions: dir.join(format!("{name}.rdb-functions.json")),
        arguments: dir.join(format!("{name}.rdb-arguments.json")),
    }
}

/// The files beside a main binary `<bin>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtefactPaths {
    /// `<bin>.rdb.so`
    pub debug_module: PathBuf,
    /// `<bin>.rdb-functions.json`
    pub functions: PathBuf,
    /// `<bin>.rdb-arguments.json`
    pub arguments: PathBuf,
}

/// JSON schemas of both files, as (file name, schema text).
pub fn schemas() -> [(&'static str, String); 2] {
    let f = schemars::schema_for!(FunctionDescriptors);
    let a = schemars::schema_for!(ArgumentDescriptors);
    [
        ("rdb-functions.schema.json", serde_json::to_string_pretty(&f).unwrap() + "\n"),
        ("rdb-arguments.schema.json", serde_json::to_string_pretty(&a).unwrap() + "\n"),
    ]
}
