//! Values the DWARF loses where paths join, found in the register that holds
//! them on every path.
//!
//! LLVM drops a variable's location at the start of a block whose
//! predecessors hold it in different places, until the next assignment:
//! minibc's VM loop holds `pc` as the constant 0 on its first iteration and
//! in `r12` on later ones, so from the loop's top to `pc += 1` the DWARF has
//! no location, while the machine code keeps `pc` in `r14` on both paths
//! (zeroed before the loop, copied from `r12` at the end of each iteration).
//! [`held_across_join`] serves such a register, and only when:
//! - the code location R is reached by straight-line code from the start J
//!   of its block (no jump lands in (J, R], no control flow in [J, R)), and
//!   the DWARF places the variable nowhere in [J, R] (lost at J, not inside
//!   the code);
//! - every way into J (a conditional branch falling through, direct jumps, the
//!   entries of the jump tables of the function's indirect jumps: branches,
//!   which end their block, so that no assignment follows them there) leaves
//!   an instruction where the DWARF places the variable in a register or gives
//!   it a constant, and one
//!   register Y holds that value there on every one of them (that register,
//!   a copy of it made earlier in the same straight-line code with neither
//!   written since, or the constant loaded into it), and no instruction in
//!   [J, R) writes Y (a call writes every caller-saved register);
//! - no statement before the region in the source may change the variable
//!   (`ArgumentSite::unwritten_before`: no assignment, `&mut` borrow or
//!   method call on it), its type holds no `UnsafeCell`, and it is declared
//!   before the lines of [J, R). An assignment whose value the optimizer
//!   dropped leaves nothing in the DWARF but a gap that looks like the
//!   join's; the source rules out any between J and R: the last one before
//!   R ran before J (the binding, or a statement after the region that a
//!   loop around both ran), and the predecessors' locations show its value.

use crate::code::{gpr, is_call, is_direct, written_gprs, Code, CALLER_SAVED_MASK};
use crate::index::{DieRef, Index};
use crate::{function, variable};
use iced_x86::Code as Op;
use iced_x86::Register::RIP;
use iced_x86::{FlowControl, Instruction, InstructionInfoFactory, OpKind};
use rdb_descriptors::{Location, Register};
use std::rc::Rc;

/// At most this many entries of one jump table are read.
const TABLE_LIMIT: u64 = 4096;

/// A function's instructions and where jumps land.
struct Function {
    code: Rc<Code>,
    /// (target, index of the jumping instruction), sorted.
    jumps: Vec<(u64, usize)>,
}

impl std::ops::Deref for Function {
    type Target = Code;
    fn deref(&self) -> &Code {
        &self.code
    }
}

impl Function {
    /// The jumps landing on instruction `n`.
    fn jumps_to(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        let ip = self.insns[n].ip();
        let first = self.jumps.partition_point(|(t, _)| *t < ip);
        self.jumps[first..].iter().take_while(move |(t, _)| *t == ip).map(|(_, from)| *from)
    }

    /// Whether instruction `n` goes on to `n + 1`.
    fn falls_through(&self, n: usize) -> bool {
        let i = &self.insns[n];
        matches!(
            i.flow_control(),
            FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall | FlowControl::ConditionalBranch
        ) && self.insns.get(n + 1).is_some_and(|next| next.ip() == i.next_ip())
    }

    /// Whether `n` is only entered from `n - 1` (straight-line code).
    fn straight(&self, n: usize) -> bool {
        n > 0 && self.falls_through(n - 1) && self.jumps_to(n).next().is_none()
    }
}

/// The register holding variable `die` at `address`, where the DWARF lost it
/// at a join (see the module's documentation). `Ok(Err(why))` says why not,
/// starting with `; `.
pub fn held_across_join(
    index: &Index<'_>,
    instance: &function::Instance,
    die: DieRef,
    address: u64,
    size: u64,
    lines: &function::LineLookup,
) -> Result<Result<Location, String>, gimli::Error> {
    if size == 0 || size > 8 {
        return Ok(Err("; it does not fit in one register".into()));
    }
    let not_held = |why: String| Ok(Err(format!("; the DWARF loses it where paths join, and {why}")));
    let code = match decode(index, instance)? {
        Ok(code) => code,
        Err(why) => return not_held(why),
    };
    let Some(region) = code.at(address) else { return not_held("the code location is no instruction".into()) };
    // J: back from R through straight-line code.
    let mut join = region;
    while code.straight(join) {
        join -= 1;
    }
    let location = |n: usize| variable::variable_location(index, die, instance.frame_owner, code.insns[n].ip(), size);
    for n in join..=region {
        if !matches!(location(n)?, Ok(Location::OptimizedOut)) {
            return not_held(format!("the code at {:#x} before the region holds it", code.insns[n].ip()));
        }
    }
    // Bound before the code of [J, R).
    let declared = index.inherited(die, gimli::DW_AT_decl_line)?.and_then(|(_, v)| v.udata_value()).unwrap_or(u64::MAX);
    if let Some(n) =
        (join..region).find(|&n| lines.line(code.insns[n].ip()).is_some_and(|l| l != 0 && u64::from(l) <= declared))
    {
        return not_held(format!("the code at {:#x} may bind it", code.insns[n].ip()));
    }
    let mut factory = InstructionInfoFactory::new();
    let mut ways: Vec<usize> = code.jumps_to(join).collect();
    if join > 0 && code.falls_through(join - 1) {
        // After an instruction that is no branch, an assignment may still end its block
        // (LLVM's location after it is the join's): only a branch ends a block for sure.
        if code.insns[join - 1].flow_control() != FlowControl::ConditionalBranch {
            return not_held(format!(
                "the code at {:#x} runs on into the join, where the DWARF does not say what it holds",
                code.insns[join - 1].ip()
            ));
        }
        ways.push(join - 1);
    }
    if ways.is_empty() {
        return not_held("no code leads to the region".into());
    }
    // Registers holding the value on every way into J.
    let mut held = u32::MAX;
    for p in ways {
        let ip = code.insns[p].ip();
        let value = match location(p)? {
            Ok(Location::Register { register }) if register.dwarf < 16 => Value::Register(register.dwarf as usize),
            Ok(Location::Implicit { bytes }) => match constant(&bytes) {
                Some(c) => Value::Constant(c),
                None => return not_held(format!("its constant at {ip:#x} is not one rdb reads")),
            },
            _ => return not_held(format!("at {ip:#x}, a way into the join, the DWARF places it in no register")),
        };
        held &= holding(&code, p, value, size, &mut factory) & !written(&code.insns[p], &mut factory);
    }
    for instruction in &code.insns[join..region] {
        held &= !written(instruction, &mut factory);
    }
    if held == 0 {
        return not_held("no register holds it on every way into the join".into());
    }
    Ok(Ok(Location::Register { register: Register::x86_64(held.trailing_zeros() as u16) }))
}

/// The instructions of the function holding `instance`'s frame, and where
/// its jumps land (jump tables included); `Err` when a jump may land
/// anywhere.
fn decode(index: &Index<'_>, instance: &function::Instance) -> Result<Result<Function, String>, gimli::Error> {
    let code = index.code(&function::frame_ranges(index, instance)?);
    if !code.complete {
        return Ok(Err("the function's code cannot be read".into()));
    }
    let mut jumps = Vec::new();
    for (n, i) in code.insns.iter().enumerate() {
        match i.flow_control() {
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch if is_direct(i) => {
                jumps.push((i.near_branch_target(), n));
            }
            // A tail call through a pointer slot.
            FlowControl::IndirectBranch if i.op0_kind() == OpKind::Memory && i.memory_base() == RIP => {}
            FlowControl::IndirectBranch | FlowControl::ConditionalBranch => match table(index, &code, n) {
                Some(targets) => jumps.extend(targets.into_iter().map(|t| (t, n))),
                None => {
                    return Ok(Err(format!(
                        "the function jumps at {:#x} through a pointer rdb cannot follow, which may lead anywhere",
                        i.ip()
                    )))
                }
            },
            _ => {}
        }
    }
    jumps.sort_unstable();
    Ok(Ok(Function { code, jumps }))
}

/// What the DWARF says the variable is at a way into the join.
#[derive(Clone, Copy)]
enum Value {
    Register(usize),
    Constant(u64),
}

/// A constant of at most 8 bytes, from a location's hex bytes (little-endian).
fn constant(hex: &str) -> Option<u64> {
    if hex.len() > 16 || !hex.len().is_multiple_of(2) {
        return None;
    }
    let mut value = 0u64;
    for (n, pair) in hex.as_bytes().chunks(2).enumerate() {
        value |= u64::from(u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?) << (8 * n);
    }
    Some(value)
}

/// The registers (one bit per DWARF number) holding `value` (its low `size`
/// bytes) when instruction `p` starts: its own register, and those the
/// straight-line code before `p` copied it into (or loaded the constant
/// into), neither written since.
fn holding(code: &Function, p: usize, value: Value, size: u64, factory: &mut InstructionInfoFactory) -> u32 {
    let mask = if size >= 8 { u64::MAX } else { (1u64 << (8 * size)) - 1 };
    let mut held = match value {
        Value::Register(r) => 1 << r,
        Value::Constant(_) => 0,
    };
    let mut killed = 0u32;
    let mut n = p;
    while code.straight(n) {
        n -= 1;
        let i = &code.insns[n];
        let number = |r: iced_x86::Register| gpr(r.full_register());
        let copied = match (value, i.code()) {
            (Value::Register(x), Op::Mov_r64_rm64 | Op::Mov_rm64_r64)
                if i.op0_kind() == OpKind::Register && i.op1_kind() == OpKind::Register =>
            {
                number(i.op1_register()).filter(|&from| from == x && killed & 1 << x == 0).and(number(i.op0_register()))
            }
            (Value::Constant(c), Op::Xor_r32_rm32 | Op::Xor_rm32_r32 | Op::Xor_r64_rm64 | Op::Xor_rm64_r64)
                if c & mask == 0
                    && i.op0_kind() == OpKind::Register
                    && i.op1_kind() == OpKind::Register
                    && i.op0_register() == i.op1_register() =>
            {
                number(i.op0_register())
            }
            (Value::Constant(c), Op::Mov_r32_imm32) if u64::from(i.immediate32()) & mask == c & mask => {
                number(i.op0_register())
            }
            (Value::Constant(c), Op::Mov_r64_imm64 | Op::Mov_rm64_imm32)
                if i.op0_kind() == OpKind::Register && i.immediate64() & mask == c & mask =>
            {
                number(i.op0_register())
            }
            _ => None,
        };
        if let Some(to) = copied.filter(|&to| killed & 1 << to == 0) {
            held |= 1 << to;
        }
        killed |= written(i, factory);
        if let Value::Register(x) = value {
            if killed & 1 << x != 0 {
                break;
            }
        }
    }
    held
}

/// The registers an instruction writes (DWARF numbers; a call writes the
/// caller-saved ones).
fn written(instruction: &Instruction, factory: &mut InstructionInfoFactory) -> u32 {
    written_gprs(factory.info(instruction)) | if is_call(instruction) { CALLER_SAVED_MASK } else { 0 }
}

/// The targets of the jump table an indirect jump `insns[n]` takes, as LLVM
/// lays them out in position-independent code: `lea T(%rip), B;
/// movslq (B, I, 4), R; add B, R; jmp *R`, each entry a 32-bit offset from
/// `T`. Entries are read while they lead into the function (reading past the
/// table's end only adds targets). `None` for any other indirect jump.
fn table(index: &Index<'_>, code: &Code, n: usize) -> Option<Vec<u64>> {
    let jump = &code.insns[n];
    if jump.flow_control() != FlowControl::IndirectBranch || jump.op0_kind() != OpKind::Register {
        return None;
    }
    let target = jump.op0_register();
    let window = &code.insns[n.saturating_sub(8)..n];
    let add = window.iter().rposition(|i| {
        matches!(i.code(), Op::Add_r64_rm64 | Op::Add_rm64_r64)
            && i.op0_kind() == OpKind::Register
            && i.op1_kind() == OpKind::Register
            && i.op0_register() == target
    })?;
    let base = window[add].op1_register();
    let load = window[..add].iter().rposition(|i| {
        i.code() == Op::Movsxd_r64_rm32
            && i.op0_register() == target
            && i.op1_kind() == OpKind::Memory
            && i.memory_base() == base
            && i.memory_index_scale() == 4
            && i.memory_displacement64() == 0
    })?;
    let lea = window[..load].iter().rposition(|i| i.code() == Op::Lea_r64_m && i.op0_register() == base)?;
    if window[lea].memory_base() != RIP
        || window[lea + 1..]
            .iter()
            .take(add - lea - 1)
            .any(|i| i.op0_kind() == OpKind::Register && i.op0_register() == base)
    {
        return None;
    }
    let table = window[lea].memory_displacement64();
    let mut targets = Vec::new();
    for entry in 0..TABLE_LIMIT {
        let Some(bytes) = index.binary.read_only(table + 4 * entry, table + 4 * entry + 4) else { break };
        let to = table.wrapping_add(i32::from_le_bytes(bytes.try_into().ok()?) as i64 as u64);
        if !code.inside(to) {
            break;
        }
        targets.push(to);
    }
    (!targets.is_empty()).then_some(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(bytes: &[u8]) -> Function {
        let insns = iced_x86::Decoder::with_ip(64, bytes, 0x1000, iced_x86::DecoderOptions::NONE).into_iter().collect();
        Function { code: Rc::new(Code { ranges: Vec::new(), insns, complete: true }), jumps: Vec::new() }
    }

    const R12: u32 = 1 << 12;
    const R14: u32 = 1 << 14;

    #[test]
    fn a_copy_holds_the_value_until_either_register_is_written() {
        let mut factory = InstructionInfoFactory::new();
        // mov %r12,%r14; cmp %rsi,%r12; jae (the way into the join: index 2)
        let code = function(&[0x4d, 0x89, 0xe6, 0x49, 0x39, 0xf4, 0x73, 0x00]);
        assert_eq!(holding(&code, 2, Value::Register(12), 8, &mut factory), R12 | R14);
        // inc %r14 after the copy: only r12 holds it.
        let code = function(&[0x4d, 0x89, 0xe6, 0x49, 0xff, 0xc6, 0x73, 0x00]);
        assert_eq!(holding(&code, 2, Value::Register(12), 8, &mut factory), R12);
        // r12 written after the copy (lea 1(%r14),%r12): r14 holds the value DWARF gives r12 for
        // no longer, and r12 is what DWARF describes at the jump: only r12.
        let code = function(&[0x4d, 0x89, 0xe6, 0x4d, 0x8d, 0x66, 0x01, 0x73, 0x00]);
        assert_eq!(holding(&code, 2, Value::Register(12), 8, &mut factory), R12);
        // A call between the copy and the jump writes the caller-saved registers: only the
        // register the DWARF names at the jump holds it there.
        let code = function(&[0x49, 0x89, 0xf8, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x73, 0x00]); // mov %rdi,%r8; call
        assert_eq!(holding(&code, 2, Value::Register(5), 8, &mut factory), 1 << 5);
    }

    #[test]
    fn a_constant_is_held_where_it_was_loaded() {
        let mut factory = InstructionInfoFactory::new();
        // xor %r14d,%r14d; jmp
        let code = function(&[0x45, 0x31, 0xf6, 0xeb, 0x00]);
        assert_eq!(holding(&code, 1, Value::Constant(0), 8, &mut factory), R14);
        assert_eq!(holding(&code, 1, Value::Constant(1), 8, &mut factory), 0);
        // mov $7,%r12d; jmp
        let code = function(&[0x41, 0xbc, 0x07, 0x00, 0x00, 0x00, 0xeb, 0x00]);
        assert_eq!(holding(&code, 1, Value::Constant(7), 8, &mut factory), R12);
        assert_eq!(constant("0700000000000000"), Some(7));
        assert_eq!(constant("070"), None);
    }

    #[test]
    fn a_jump_into_the_code_ends_the_straight_line() {
        let mut factory = InstructionInfoFactory::new();
        let mut code = function(&[0x4d, 0x89, 0xe6, 0x49, 0x39, 0xf4, 0x73, 0x00]);
        // Something jumps to the `cmp`: the copy before it is not on that path.
        code.jumps.push((code.insns[1].ip(), 2));
        assert_eq!(holding(&code, 2, Value::Register(12), 8, &mut factory), R12);
    }
}
