//! A function's machine code decoded once ([`Code`], cached per function by
//! [`Index::code`](crate::index::Index::code)), and the register facts the
//! checks reading it share: which general register an operand is, which
//! registers an instruction or a call writes, which memory operands name a
//! fixed address. The checks: `stale` (a static kept in a register and
//! stored later), `coroutine` (a field of a future not stored yet), `joins`
//! (a value held in one register on every path into a join).

use crate::loader::Binary;
use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfo, OpAccess, OpKind, Register};

/// The instructions of a function's code ranges, sorted by address.
pub struct Code {
    pub ranges: Vec<gimli::Range>,
    pub insns: Vec<Instruction>,
    /// Whether every range could be read (the instructions of those that
    /// could not are missing).
    pub complete: bool,
}

impl Code {
    pub fn new(binary: &Binary, ranges: Vec<gimli::Range>) -> Code {
        let mut insns: Vec<Instruction> = Vec::new();
        let mut complete = true;
        for range in &ranges {
            match binary.code(range.begin, range.end) {
                Some(bytes) => insns.extend(Decoder::with_ip(64, bytes, range.begin, DecoderOptions::NONE)),
                None => complete = false,
            }
        }
        insns.sort_by_key(|i| i.ip());
        Code { ranges, insns, complete }
    }

    /// The index of the instruction at `address`.
    pub fn at(&self, address: u64) -> Option<usize> {
        self.insns.binary_search_by_key(&address, |i| i.ip()).ok()
    }

    /// Whether `address` is in the function's code.
    pub fn inside(&self, address: u64) -> bool {
        self.ranges.iter().any(|r| r.begin <= address && address < r.end)
    }
}

/// The general registers in the DWARF x86-64 numbering.
const GPRS: [Register; 16] = {
    use Register::*;
    [RAX, RDX, RCX, RBX, RSI, RDI, RBP, RSP, R8, R9, R10, R11, R12, R13, R14, R15]
};

/// The general registers a call may change (System V x86-64: the
/// caller-saved ones), by DWARF number.
pub const CALLER_SAVED: [usize; 9] = [0, 1, 2, 4, 5, 8, 9, 10, 11];

/// [`CALLER_SAVED`] as a mask (a bit per DWARF number; checked by a test).
pub const CALLER_SAVED_MASK: u32 = 0b1111_0011_0111;

/// The DWARF number of a 64-bit general register.
pub fn gpr(register: Register) -> Option<usize> {
    GPRS.iter().position(|&r| r == register)
}

/// The 64-bit general register of a DWARF number.
pub fn gpr_register(dwarf: usize) -> Register {
    GPRS[dwarf]
}

/// Whether an operand access may write.
pub fn writes(access: OpAccess) -> bool {
    matches!(access, OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite)
}

/// Whether an operand access may read.
pub fn reads(access: OpAccess) -> bool {
    matches!(access, OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite)
}

/// The general registers (a bit per DWARF number) an instruction writes,
/// besides what a call it makes may change.
pub fn written_gprs(info: &InstructionInfo) -> u32 {
    info.used_registers()
        .iter()
        .filter(|u| writes(u.access()))
        .filter_map(|u| gpr(u.register().full_register()))
        .fold(0, |mask, g| mask | 1 << g)
}

/// Whether the instruction is a call.
pub fn is_call(instruction: &Instruction) -> bool {
    matches!(instruction.flow_control(), FlowControl::Call | FlowControl::IndirectCall)
}

/// Whether a branch names its target (`jmp`/`jcc` to an address, not through
/// a register or memory).
pub fn is_direct(instruction: &Instruction) -> bool {
    instruction.op_count() > 0 && matches!(instruction.op0_kind(), OpKind::NearBranch64 | OpKind::NearBranch32)
}

/// Whether a memory operand names a fixed address (RIP-relative, where the
/// displacement is then the address, or absolute): a static.
pub fn fixed_address(memory: &iced_x86::UsedMemory) -> bool {
    memory.base() == Register::RIP || (memory.base() == Register::None && memory.index() == Register::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_registers_are_numbered_as_dwarf_numbers_them() {
        assert_eq!(gpr(Register::RDX), Some(1));
        assert_eq!(gpr(Register::R14), Some(14));
        assert_eq!(gpr(Register::EAX), None);
        assert_eq!(gpr_register(7), Register::RSP);
        assert_eq!(CALLER_SAVED_MASK, CALLER_SAVED.iter().fold(0, |mask, g| mask | 1 << g));
    }
}
