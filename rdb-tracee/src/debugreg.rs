//! The x86 debug registers of a stopped thread: four hardware watchpoints (DR0-DR3, each up to
//! 8 aligned bytes), which fired (DR6), and how each is armed (DR7). Set through
//! `PTRACE_POKEUSER` at `offsetof(struct user, u_debugreg)`; the kernel checks every value and
//! refuses what the CPU would not take. A fired watchpoint stops the thread with `SIGTRAP`
//! after the access (before, for [`WatchKind::Execute`]).

use std::io;

use crate::ptrace::{peek_user, poke_user};
use crate::Pid;

/// `offsetof(struct user, u_debugreg)` on x86-64.
const DEBUGREG_OFFSET: usize = 848;

/// How many watchpoints the CPU has.
pub const SLOTS: usize = 4;

fn offset(reg: usize) -> usize {
    DEBUGREG_OFFSET + reg * 8
}

/// What access fires a watchpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchKind {
    /// An instruction fetch at the address (a hardware breakpoint; length 1).
    Execute,
    /// A write.
    Write,
    /// A read or a write (x86 has no read-only watchpoints).
    ReadWrite,
}

/// A watched range: `len` is 1, 2, 4 or 8 and `addr` a multiple of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watchpoint {
    pub addr: u64,
    pub len: u8,
    pub kind: WatchKind,
}

impl Watchpoint {
    /// The DR7 bits for this watchpoint in `slot`: local enable, R/W and LEN fields.
    fn dr7_bits(&self, slot: usize) -> io::Result<u64> {
        let rw = match self.kind {
            WatchKind::Execute => 0b00,
            WatchKind::Write => 0b01,
            WatchKind::ReadWrite => 0b11,
        };
        let len = match (self.kind, self.len) {
            (WatchKind::Execute, 1) => 0b00,
            (WatchKind::Execute, _) => {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "an execute watchpoint is 1 byte long"))
            }
            (_, 1) => 0b00,
            (_, 2) => 0b01,
            (_, 4) => 0b11,
            (_, 8) => 0b10,
            (_, n) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a hardware watchpoint covers 1, 2, 4 or 8 bytes, not {n}"),
                ))
            }
        };
        if !self.addr.is_multiple_of(self.len as u64) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a {}-byte hardware watchpoint must be aligned ({:#x} is not)", self.len, self.addr),
            ));
        }
        Ok((1 << (slot * 2)) | (rw << (16 + slot * 4)) | (len << (18 + slot * 4)))
    }
}

fn dr7_mask(slot: usize) -> u64 {
    (0b11 << (slot * 2)) | (0b1111 << (16 + slot * 4))
}

fn check_slot(slot: usize) -> io::Result<()> {
    if slot >= SLOTS {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no debug register slot {slot} (0-3)")));
    }
    Ok(())
}

/// Arm `w` in `slot` (0-3) of thread `tid`, replacing what was there.
pub fn set_watchpoint(tid: Pid, slot: usize, w: Watchpoint) -> io::Result<()> {
    check_slot(slot)?;
    let bits = w.dr7_bits(slot)?;
    let dr7 = peek_user(tid, offset(7))?;
    // Disarm first: the kernel checks DR7 against the addresses already in DR0-DR3.
    poke_user(tid, offset(7), dr7 & !dr7_mask(slot))?;
    poke_user(tid, offset(slot), w.addr)?;
    poke_user(tid, offset(7), (dr7 & !dr7_mask(slot)) | bits)
}

/// Disarm `slot` of thread `tid`.
pub fn clear_watchpoint(tid: Pid, slot: usize) -> io::Result<()> {
    check_slot(slot)?;
    let dr7 = peek_user(tid, offset(7))?;
    poke_user(tid, offset(7), dr7 & !dr7_mask(slot))
}

/// The watchpoint armed in `slot`, if any.
pub fn watchpoint(tid: Pid, slot: usize) -> io::Result<Option<Watchpoint>> {
    check_slot(slot)?;
    let dr7 = peek_user(tid, offset(7))?;
    if dr7 & (0b11 << (slot * 2)) == 0 {
        return Ok(None);
    }
    let addr = peek_user(tid, offset(slot))?;
    let kind = match (dr7 >> (16 + slot * 4)) & 0b11 {
        0b00 => WatchKind::Execute,
        0b01 => WatchKind::Write,
        _ => WatchKind::ReadWrite,
    };
    let len = match (dr7 >> (18 + slot * 4)) & 0b11 {
        0b00 => 1,
        0b01 => 2,
        0b11 => 4,
        _ => 8,
    };
    Ok(Some(Watchpoint { addr, len, kind }))
}

/// Which slots fired since the last call (DR6 bits 0-3, as a bit set), and clear DR6: the CPU
/// never clears it by itself.
/// The `PTRACE_POKEUSER` offset of DR6, the debug status register.
pub fn status_offset() -> usize {
    offset(6)
}

pub fn take_hits(tid: Pid) -> io::Result<u8> {
    let dr6 = peek_user(tid, offset(6))?;
    if dr6 & 0xf != 0 {
        poke_user(tid, offset(6), 0)?;
    }
    Ok((dr6 & 0xf) as u8)
}
