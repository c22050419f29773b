//! The messages exchanged between [`crate::DebugHost`] (the replayer side)
//! and the host process, over a `SOCK_SEQPACKET` socket pair (one message
//! per packet, little-endian fields).
//!
//! Both ends are built from this crate, so the format is private and may
//! change with it. Messages the host sends from its fault handler
//! ([`PAGE_REQUEST`], [`MAPS_REQUEST`], [`CRASHED`]) have fixed layouts so
//! that the handler can build them without allocating.

/// Replayer -> host: load a module (first message).
pub const INIT: u32 = 1;
/// Replayer -> host: run one region's debug function. Layout: tag, region
/// u32, flags u32, pid u32, load bias u64, the stop's registers (27 u64, `user_regs_struct`
/// order), [mappings if `FLAG_MAPS`], argument count u32,
/// then per argument: kind u32 (0: address u64 + size u64; 1: bytes; 2: bytes,
/// pointer count u32, then per pointer: byte offset u32, argument index u32; 3: bytes copied
/// from the program address u64 that follows).
pub const INVOKE: u32 = 2;
/// Replayer -> host: bytes of program memory (answer to [`PAGE_REQUEST`]).
/// Layout: tag u32, errno i32 (0 = ok), length u32, pad u32, bytes.
pub const PAGE_DATA: u32 = 3;
/// Replayer -> host: the program's current mappings (answer to [`MAPS_REQUEST`]).
pub const MAPS: u32 = 4;
/// Either way: a message waits in the shared mailbox (see `channel`); the
/// whole message is this one word.
pub const DOORBELL: u32 = 5;

/// Host -> replayer: module loaded, every entry resolved; u32: 1 when
/// userfaultfd serves the faults.
pub const READY: u32 = 101;
/// Host -> replayer: the module could not be loaded; text follows.
pub const INIT_ERROR: u32 = 102;
/// Host -> replayer: please read program memory. Layout: tag u32, pad u32, addr u64, len u64.
pub const PAGE_REQUEST: u32 = 103;
/// Host -> replayer: please send the program's mappings (an address was not mirrored).
/// Layout: tag u32, pad u32, the address u64.
pub const MAPS_REQUEST: u32 = 104;
/// Host -> replayer: the debug function returned (or could not run). Layout:
/// tag u32, status u32 (`STATUS_*`), write count u32, writes u64..., panic
/// message (bytes), error text (bytes), watch request count u32, then per request: address
/// u64, length u64, access u32 (0 write, 1 read-write), label (bytes); check count u32, then per
/// check (`rdb_check!`): ok u32, line u32, column u32, condition (bytes), message (bytes),
/// backtrace (bytes; empty unless [`FLAG_CHECK_BACKTRACE`]).
pub const DONE: u32 = 105;
/// [`DONE`] status: the function ran.
pub const STATUS_RAN: u32 = 0;
/// [`DONE`] status: not run, some program range collides with host memory.
pub const STATUS_COLLISION: u32 = 1;
/// [`DONE`] status: ran, but a range mapped during the call collided.
pub const STATUS_RAN_WITH_COLLISION: u32 = 2;
/// [`DONE`] status: not run, the request was malformed.
pub const STATUS_PROTOCOL: u32 = 3;
/// Host -> replayer: the host is dying of a signal. Layout: tag u32, signal u32,
/// addr u64, reason u32, pad u32.
pub const CRASHED: u32 = 106;

/// Why the host crashed ([`CRASHED`] reason field).
pub mod reason {
    /// A fault at an address the program does not map.
    pub const UNMAPPED: u32 = 1;
    /// A fault at a program address whose bytes could not be read.
    pub const UNREADABLE: u32 = 2;
    /// A write to program memory, with the abort policy.
    pub const WRITE_ABORTED: u32 = 3;
    /// Another fatal signal (abort, illegal instruction, ...).
    pub const SIGNAL: u32 = 4;
    /// A fault at a program address that collides with the host's own memory.
    pub const COLLISION: u32 = 5;
    /// A fault in a program page that is not readable (a guard page).
    pub const NOT_READABLE: u32 = 6;
    /// A fault just below the stack pointer: debug code overflowed the host's stack.
    pub const STACK_OVERFLOW: u32 = 7;
}

/// Size of the fixed header of a [`PAGE_DATA`] message.
pub const PAGE_DATA_HEADER: usize = 16;
/// Most mappings one [`MAPS`] or [`INVOKE`] message carries.
pub const MAX_RANGES: usize = 4096;
/// Size of one range in a [`MAPS`] message: start u64, end u64, prot u32, pad u32.
pub const RANGE_SIZE: usize = 24;
/// Largest message either side sends (a full [`MAPS`] message).
pub const MAX_MESSAGE: usize = 8 + MAX_RANGES * RANGE_SIZE;

/// Invoke flag: the program ran since the last call; mirrored pages are stale.
pub const FLAG_INVALIDATE: u32 = 1;
/// The debug function id of rdb's own report of a watched value's change (`rdb::watch`): the
/// host prints it (arguments: old bytes, new bytes, `rdb_access` record, label, syscall name).
pub const WATCH_REPORT: u32 = u32::MAX;

/// Invoke flag: a mapping list follows.
pub const FLAG_MAPS: u32 = 2;
/// Invoke flag: the stop is right after an instruction that accessed watched memory (for
/// backtraces: the innermost frame's line is the instruction before `rip`).
pub const FLAG_AFTER_ACCESS: u32 = 4;

/// Invoke flag: checks made by the call carry the program's backtrace (`rdb find`'s answer).
pub const FLAG_CHECK_BACKTRACE: u32 = 8;

/// Fault handling: userfaultfd when available, else the fault handler.
pub const FAULTS_AUTO: u32 = 0;
/// Fault handling: the `SIGSEGV` handler only.
pub const FAULTS_SIGNAL: u32 = 1;
/// Fault handling: userfaultfd, or fail.
pub const FAULTS_USERFAULTFD: u32 = 2;

/// How the host reads program memory.
pub const FILL_DIRECT: u32 = 0;
/// The replayer sends the bytes.
pub const FILL_PARENT: u32 = 1;

/// A program mapping as sent to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeSpec {
    pub start: u64,
    pub end: u64,
    /// `PROT_*` bits of the program's mapping (0: reserved, never readable).
    pub prot: u32,
}

/// Appends little-endian fields to a message.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn new(tag: u32) -> Writer {
        let mut w = Writer(Vec::with_capacity(64));
        w.u32(tag);
        w
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
        self
    }
    pub fn ranges(&mut self, ranges: &[RangeSpec]) -> &mut Self {
        self.u32(ranges.len() as u32);
        for r in ranges {
            self.u64(r.start).u64(r.end).u32(r.prot).u32(0);
        }
        self
    }
}

/// Reads little-endian fields from a message; `None` when it is too short.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*head))
    }
    pub fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*head))
    }
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        if self.0.len() < len {
            return None;
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(head)
    }
    pub fn range(&mut self) -> Option<RangeSpec> {
        let start = self.u64()?;
        let end = self.u64()?;
        let prot = self.u32()?;
        self.u32()?;
        Some(RangeSpec { start, end, prot })
    }
}

pub(crate) use crate::sys::{recv, send};
