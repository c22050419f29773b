//! Whether a static's memory holds its current value at a code address.
//!
//! Optimized code may keep a static in a register for a while and store it
//! later: LLVM promotes a global a loop updates to a register for the whole
//! loop and stores it once after it (clang -O2 on `total += i * i;` in a
//! loop), and a store may be scheduled after the place a region runs. The
//! DWARF describes a static only by its address, so a region reading memory
//! there would see an older value. The machine code tells: a store to the
//! static, reached from the region's address without reading the static on
//! the way, of a register that may hold the same value it held at the
//! region's address (not written in between on some path) means the value
//! may have been in that register, not in memory, at the region. A store of
//! a value computed after the region's address (unoptimized code loads it
//! from the frame first) or of a constant is the program's next change, and
//! memory is current until then.

use crate::code::{fixed_address, gpr_register, is_call, writes, Code, CALLER_SAVED};
use iced_x86::{FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};
use std::collections::VecDeque;

/// A set of full registers (bit = `Register::full_register` as an index).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Regs(u128, u128, u128);

impl Regs {
    fn all() -> Regs {
        Regs(u128::MAX, u128::MAX, u128::MAX)
    }
    fn bit(r: Register) -> Option<(usize, u128)> {
        let i = r.full_register() as usize;
        (i < 384).then(|| (i / 128, 1u128 << (i % 128)))
    }
    fn has(&self, r: Register) -> bool {
        match Regs::bit(r) {
            Some((0, b)) => self.0 & b != 0,
            Some((1, b)) => self.1 & b != 0,
            Some((_, b)) => self.2 & b != 0,
            None => false,
        }
    }
    fn remove(&mut self, r: Register) {
        match Regs::bit(r) {
            Some((0, b)) => self.0 &= !b,
            Some((1, b)) => self.1 &= !b,
            Some((_, b)) => self.2 &= !b,
            None => {}
        }
    }
    /// Adds what `other` has; whether that changed anything.
    fn absorb(&mut self, other: Regs) -> bool {
        let before = *self;
        self.0 |= other.0;
        self.1 |= other.1;
        self.2 |= other.2;
        *self != before
    }
}

/// The address of a store to `[global, global + size)` in `code` (the
/// function holding `at`), reached from `at` without reading that memory on
/// the way, whose value comes from a register that path may not have written
/// since `at`; `None` when there is none. Calls are stepped over (they see
/// memory, and change only the caller-saved registers); indirect jumps end a
/// path.
pub fn pending_store(code: &Code, at: u64, global: u64, size: u64) -> Option<u64> {
    if !code.complete {
        return None;
    }
    let first = code.at(at)?;
    let end = global + size.max(1);
    let mut info = InstructionInfoFactory::new();
    // Per instruction: the registers that may still hold what they held at `at` when it runs,
    // on some path from `at` that has not read the static.
    let mut unwritten: Vec<Option<Regs>> = vec![None; code.insns.len()];
    unwritten[first] = Some(Regs::all());
    let mut queue = VecDeque::from([first]);
    while let Some(k) = queue.pop_front() {
        let Some(mut regs) = unwritten[k] else { continue };
        let instruction = &code.insns[k];
        let used = info.info(instruction);
        let mut loaded = false;
        let mut stored = false;
        for m in used.used_memory().iter().filter(|m| fixed_address(m)) {
            let address = m.displacement();
            if address + u64::from(m.memory_size().size() as u32) <= global || address >= end {
                continue;
            }
            match m.access() {
                OpAccess::Write | OpAccess::CondWrite => stored = true,
                OpAccess::NoMemAccess => {}
                _ => loaded = true,
            }
        }
        if loaded {
            continue; // this path reads memory first: what it holds is current at `at`
        }
        if stored && stored_register(instruction).is_some_and(|r| regs.has(r)) {
            return Some(instruction.ip());
        }
        for r in used.used_registers().iter().filter(|r| writes(r.access())) {
            regs.remove(r.register());
        }
        if is_call(instruction) {
            // The caller-saved registers, vector ones included.
            for g in CALLER_SAVED {
                regs.remove(gpr_register(g));
            }
            for z in 0..16 {
                regs.remove(Register::ZMM0 + z);
            }
        }
        let mut next = |ip: u64| {
            if let Some(n) = code.at(ip) {
                let changed = match &mut unwritten[n] {
                    Some(existing) => existing.absorb(regs),
                    slot @ None => {
                        *slot = Some(regs);
                        true
                    }
                };
                if changed {
                    queue.push_back(n);
                }
            }
        };
        match instruction.flow_control() {
            FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall => next(instruction.next_ip()),
            FlowControl::ConditionalBranch => {
                next(instruction.next_ip());
                next(instruction.near_branch_target());
            }
            FlowControl::UnconditionalBranch => next(instruction.near_branch_target()),
            _ => {}
        }
    }
    None
}

/// The register a plain store (`mov` and its vector forms) writes to memory.
fn stored_register(instruction: &Instruction) -> Option<Register> {
    let plain = matches!(
        instruction.mnemonic(),
        Mnemonic::Mov
            | Mnemonic::Movd
            | Mnemonic::Movq
            | Mnemonic::Movss
            | Mnemonic::Movsd
            | Mnemonic::Movaps
            | Mnemonic::Movups
            | Mnemonic::Movapd
            | Mnemonic::Movupd
            | Mnemonic::Movdqa
            | Mnemonic::Movdqu
            | Mnemonic::Vmovd
            | Mnemonic::Vmovq
            | Mnemonic::Vmovss
            | Mnemonic::Vmovsd
            | Mnemonic::Vmovaps
            | Mnemonic::Vmovups
            | Mnemonic::Vmovdqa
            | Mnemonic::Vmovdqu
            | Mnemonic::Movnti
    );
    (plain
        && instruction.op_count() == 2
        && instruction.op0_kind() == OpKind::Memory
        && instruction.op1_kind() == OpKind::Register)
        .then(|| instruction.op1_register())
}
