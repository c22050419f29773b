//! Locals of an `async` body that an optimized build no longer describes,
//! read in the state of the future.
//!
//! rustc turns an `async fn` or `async` block into a coroutine: a poll
//! function whose first parameter (`Pin<&mut {async_fn_env#N}>`) points to
//! the state object. A local held across an `.await` (and the body's
//! captured variables) is a field of that object for its whole life: every
//! use in the body reads and writes the field through the pointer, and the
//! DWARF describes the object's layout (a variant part, one variant per
//! state, `SuspendN` listing the locals saved at the `N`th `.await`, each at
//! one offset). A dev build says so for each variable (`*self + offset`); at
//! -O3 the variable's own description is dropped, but the pointer keeps its
//! location list and the layout is still there: the variable is at
//! `pointer + offset`, an `indirect` location.
//!
//! That holds only if the field is current at the code location: LLVM may
//! keep a new value in a register and store it later, as long as no one can
//! observe the difference (the object is reachable by the caller, so the
//! store happens before the function returns or calls code it cannot see).
//! [`no_pending_store`] checks the machine code after the code location:
//! on every path, the field is not written before the program reads it from
//! memory, returns or calls code LLVM cannot see (LLVM cannot keep a store
//! pending past those), and every write on the way goes to a known place
//! other than the field. Otherwise the variable is not served.

use crate::code::{fixed_address, gpr, reads, writes, written_gprs, Code, CALLER_SAVED};
use crate::index::{DieRef, Index};
use crate::types::{type_name, type_size};
use crate::{function, variable};
use rdb_descriptors::Location;
use std::collections::HashSet;

/// A saved local's place in the state object of an `async` body.
struct Field {
    offset: u64,
}

/// `Ok(Err(why))` when the variable cannot be read in the state (`why` starts
/// with `; ` for a build warning); `Ok(Err(""))` when `instance` is not the
/// body of an `async fn` or block.
pub fn saved_local(
    index: &Index<'_>,
    instance: &function::Instance,
    die: DieRef,
    name: &str,
    address: u64,
    size: u64,
) -> Result<Result<Location, String>, gimli::Error> {
    let Some(body) = instance.die else { return Ok(Err(String::new())) };
    // The state pointer: the body's first formal parameter, `Pin<&mut ENV>`.
    let Some(pin_param) = index
        .children(body)?
        .into_iter()
        .find(|&c| index.die(c).is_ok_and(|d| d.tag == gimli::DW_TAG_formal_parameter))
    else {
        return Ok(Err(String::new()));
    };
    let pin_type = match index.inherited(pin_param, gimli::DW_AT_type)? {
        Some((holder, _)) => index.reference(holder, gimli::DW_AT_type)?,
        None => None,
    };
    let Some(pin_type) = pin_type else { return Ok(Err(String::new())) };
    let pin_name = type_name(index, Some(pin_type))?;
    let is_coroutine = pin_name.starts_with("core::pin::Pin<&mut ")
        && (pin_name.contains("{async_fn_env#") || pin_name.contains("{async_block_env#"));
    if !is_coroutine {
        return Ok(Err(String::new()));
    }
    let not_kept = |why: &str| Ok(Err(format!("; it is not in the state of the `async` body: {why}")));
    // Pin's one member is the pointer; its pointee is the state object.
    let Some(pointer_member) =
        index.children(pin_type)?.into_iter().find(|&c| index.die(c).is_ok_and(|d| d.tag == gimli::DW_TAG_member))
    else {
        return not_kept("the DWARF does not describe the pointer to it");
    };
    if index.udata(pointer_member, gimli::DW_AT_data_member_location)?.unwrap_or(0) != 0 {
        return not_kept("the pointer to it is not the first bytes of the `Pin`");
    }
    let env = match index.reference(pointer_member, gimli::DW_AT_type)? {
        Some(pointer) => index.reference(pointer, gimli::DW_AT_type)?,
        None => None,
    };
    let Some(env) = env else { return not_kept("the DWARF does not describe its type") };
    let variable_type = match index.inherited(die, gimli::DW_AT_type)? {
        Some((holder, _)) => index.reference(holder, gimli::DW_AT_type)?,
        None => None,
    };
    let variable_type_name = type_name(index, variable_type)?;
    let fields = match saved_fields(index, env, name, &variable_type_name, size)? {
        Ok(fields) => fields,
        Err(why) => return not_kept(&why),
    };
    // Each binding of that name in the body needs its own field: otherwise
    // the one saved may be another binding (shadowing).
    let bindings = bindings_named(index, index.declaration(body)?, name)?;
    let most_in_one_state = fields.iter().map(|(_, n)| *n).max().unwrap_or(0);
    if bindings > most_in_one_state {
        return not_kept(&format!(
            "the body binds `{name}` {bindings} times and its state keeps {most_in_one_state} of them; rename \
             the one the region reads"
        ));
    }
    let mut offset = fields[0].0.offset;
    // Where the pointer is at the code location.
    let described = variable::variable_location(index, pin_param, instance.frame_owner, address, 8)?;
    let held = match &described {
        Ok(Location::Register { register }) => Pointer::Register(register.dwarf),
        Ok(Location::Stack { base, offset }) if base.dwarf == RSP as u16 => Pointer::Slot(*offset),
        // The future in the function's own frame (an executor's `block_on`).
        Ok(Location::Computed { register, offset }) if register.dwarf == RSP as u16 => Pointer::Frame(*offset),
        // A register plus a constant: the future is a field of an enclosing object (an `async fn`
        // inlined into the `async` block awaiting it keeps its state in that block's state).
        Ok(Location::Computed { register, offset: k }) if *k >= 0 => {
            offset += *k as u64;
            Pointer::Register(register.dwarf)
        }
        _ => return not_kept("the DWARF gives no register or `rsp`-based frame slot holding the pointer to it here"),
    };
    let pointer = match described {
        Ok(Location::Computed { register, .. }) if register.dwarf != RSP as u16 => Location::Register { register },
        Ok(pointer) => pointer,
        Err(_) => return not_kept("the pointer to it is not described here"),
    };
    if instance.frame_owner.is_none() {
        return not_kept("its function is not known");
    }
    let code = index.code(&function::frame_ranges(index, instance)?);
    if let Err(why) = no_pending_store(index.binary, &code, address, held, (offset, offset + size)) {
        return Ok(Err(format!(
            "; its field in the state of the `async` body (offset {offset}) may not hold its value yet: {why}"
        )));
    }
    Ok(Ok(match (held, pointer) {
        (Pointer::Frame(at), Location::Computed { register, .. }) => {
            Location::Stack { base: register, offset: at + offset as i64 }
        }
        (_, pointer) => Location::Indirect { pointer: Box::new(pointer), offset: offset as i64 },
    }))
}

/// The fields named `name` of type `type_name` in the `SuspendN` variants of
/// the state type `env`, each with how many members of that name its
/// variant has. `Err` when there is none, or they disagree on the offset or
/// the type.
fn saved_fields(
    index: &Index<'_>,
    env: DieRef,
    name: &str,
    wanted_type: &str,
    size: u64,
) -> Result<Result<Vec<(Field, usize)>, String>, gimli::Error> {
    let Some(part) =
        index.children(env)?.into_iter().find(|&c| index.die(c).is_ok_and(|d| d.tag == gimli::DW_TAG_variant_part))
    else {
        return Ok(Err("its type has no variants".into()));
    };
    let mut out: Vec<(Field, usize)> = Vec::new();
    for variant in index.children(part)? {
        if index.die(variant)?.tag != gimli::DW_TAG_variant {
            continue;
        }
        for member in index.children(variant)? {
            let Some(state) = index.reference(member, gimli::DW_AT_type)? else { continue };
            if !index.string(state, gimli::DW_AT_name)?.is_some_and(|n| n.starts_with("Suspend")) {
                continue;
            }
            let base = index.udata(member, gimli::DW_AT_data_member_location)?.unwrap_or(0);
            let mut count = 0;
            for field in index.children(state)? {
                if index.die(field)?.tag != gimli::DW_TAG_member
                    || index.string(field, gimli::DW_AT_name)?.as_deref() != Some(name)
                {
                    continue;
                }
                let ty = index.reference(field, gimli::DW_AT_type)?;
                if type_name(index, ty)? != wanted_type || type_size(index, ty)? != Some(size) {
                    return Ok(Err(format!("a field `{name}` of another type is saved there")));
                }
                let Some(at) = index.udata(field, gimli::DW_AT_data_member_location)? else {
                    return Ok(Err(format!("the offset of its field `{name}` is not known")));
                };
                if out.iter().any(|(f, _)| f.offset != base + at) {
                    return Ok(Err(format!("fields named `{name}` are at several offsets")));
                }
                if count == 0 {
                    out.push((Field { offset: base + at }, 0));
                }
                count += 1;
                if let Some(last) = out.last_mut() {
                    last.1 = count;
                }
            }
        }
    }
    if out.is_empty() {
        return Ok(Err(format!("`{name}` is not held across an `.await` (the DWARF lists no such field)")));
    }
    Ok(Ok(out))
}

/// How many variables named `name` the body `subprogram` declares (in its
/// own scopes, not in functions inlined into it).
fn bindings_named(index: &Index<'_>, subprogram: DieRef, name: &str) -> Result<usize, gimli::Error> {
    let mut count = 0;
    let mut stack = vec![subprogram];
    while let Some(scope) = stack.pop() {
        for child in index.children(scope)? {
            let tag = index.die(child)?.tag;
            if tag == gimli::DW_TAG_lexical_block {
                stack.push(child);
            } else if matches!(tag, gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter)
                && index.name(child)?.as_deref() == Some(name)
            {
                count += 1;
            }
        }
    }
    Ok(count)
}

/// At most this many instructions are followed after the code location.
const SCAN_LIMIT: usize = 4000;

/// Where the state pointer is at the code location.
#[derive(Debug, Clone, Copy)]
pub enum Pointer {
    /// In this register (DWARF number).
    Register(u16),
    /// In the 8 bytes at `rsp` plus this offset.
    Slot(i64),
    /// The state object itself is at `rsp` plus this offset.
    Frame(i64),
}

/// Functions whose effects on memory LLVM knows (it may move a store past a
/// call to them when their arguments cannot point at the stored bytes).
fn known_to_the_compiler(name: &str) -> bool {
    let name = name.split('@').next().unwrap_or(name);
    [
        "mem",
        "bcmp",
        "str",
        "malloc",
        "free",
        "realloc",
        "calloc",
        "aligned_alloc",
        "posix_memalign",
        "__rust_",
        "__rdl_",
        "__rg_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// `rsp` in the DWARF numbering.
const RSP: usize = 7;

/// What a register holds on a path: the state pointer plus a constant.
type Registers = [Option<i64>; 16];

/// Checks that, on every path from `start` in the function's `code`, the
/// bytes `field` (offsets from the state pointer, held at `start` where
/// `pointer` says) are not written before the path reads all of them from
/// memory (LLVM would not load a value whose store it still holds back),
/// returns, calls code LLVM cannot see (through a register, through a GOT
/// slot to a function it does not know, or a direct call to a function
/// making such a call: it may read the object), or leaves the function (a
/// tail call); every other write on the way must go to a known place: the
/// state object elsewhere than `field` (through a register holding the
/// pointer plus a known constant), the function's own frame, or a static.
/// `Err` says which instruction prevents it.
pub fn no_pending_store(
    binary: &crate::loader::Binary,
    code: &Code,
    start: u64,
    pointer: Pointer,
    field: (u64, u64),
) -> Result<(), String> {
    use iced_x86::{Code as Op, Decoder, DecoderOptions, FlowControl, InstructionInfoFactory, OpKind, Register as R};
    let Some(cfa) = binary.cfa_rule(start) else { return Err("the unwind tables do not cover the code".into()) };
    // The frame's own bytes: below the return address, from `rsp` at `start`.
    let frame_top = if cfa.register.0 == 7 { Some(cfa.offset - 8) } else { None };
    let mut registers: Registers = [None; 16];
    let mut slot = None;
    match pointer {
        Pointer::Register(r) if r < 16 => registers[r as usize] = Some(0),
        Pointer::Register(_) => return Err("the pointer is not in a general register".into()),
        Pointer::Slot(offset) => slot = Some(offset),
        Pointer::Frame(_) => {}
    }
    // The state pointer relative to `rsp` at `start`, when the object is in the frame.
    let in_frame = match pointer {
        Pointer::Frame(at) => Some(at),
        _ => None,
    };
    // What a base register holds, as an offset from the state pointer.
    let from_state = |regs: &Registers, rsp: Option<i64>, base: R| -> Option<i64> {
        if base == R::RSP {
            return Some(rsp? - in_frame?);
        }
        gpr(base).and_then(|g| regs[g])
    };
    // (address, registers, rsp minus its value at `start`, the pointer's frame slot)
    // (.., and the bytes of the field read from memory since `start`, one bit each)
    type State = (u64, Registers, Option<i64>, Option<i64>, u128);
    let mut work: Vec<State> = vec![(start, registers, Some(0), slot, 0)];
    let all = bytes_of(field, field.0 as i64, field.1 as i64);
    let mut seen: HashSet<State> = HashSet::new();
    let mut factory = InstructionInfoFactory::new();
    let slot_loaded = known_slot_registers(binary, &code.insns);
    let mut steps = 0;
    while let Some((mut ip, mut regs, mut rsp, mut slot, mut read)) = work.pop() {
        loop {
            if !code.inside(ip) {
                // Fell out of the function: after a call that does not return.
                break;
            }
            if !seen.insert((ip, regs, rsp, slot, read)) {
                break;
            }
            steps += 1;
            if steps > SCAN_LIMIT {
                return Err(format!("the code after it is too long to check (over {SCAN_LIMIT} instructions)"));
            }
            let instruction = match code.at(ip) {
                Some(k) => code.insns[k],
                // Where decoding the function from its start found no instruction.
                None => {
                    let end = code.ranges.iter().find(|r| r.begin <= ip && ip < r.end).map_or(ip, |r| r.end);
                    let Some(bytes) = binary.code(ip, end.min(ip + 16)) else {
                        return Err(format!("the code at {ip:#x} cannot be read"));
                    };
                    Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE).decode()
                }
            };
            if instruction.is_invalid() {
                return Err(format!("the instruction at {ip:#x} cannot be decoded"));
            }
            // `rep stos`/`rep movs` write `rcx` elements: more than one operand says.
            if instruction.op0_kind() == OpKind::MemoryESRDI
                && (instruction.has_rep_prefix() || instruction.has_repne_prefix())
            {
                return Err(format!("the instruction at {ip:#x} writes a run of memory that may hold it"));
            }
            let info = factory.info(&instruction);
            // Bytes of the field the program reads from memory here: no store
            // of them is pending (LLVM would use the value it holds instead).
            for memory in info.used_memory() {
                if !reads(memory.access()) || memory.index() != R::None {
                    continue;
                }
                if let Some(k) = from_state(&regs, rsp, memory.base()) {
                    let b = k + memory.displacement() as i64;
                    read |= bytes_of(field, b, b + memory.memory_size().size() as i64);
                }
            }
            if all != 0 && read & all == all {
                break;
            }
            for memory in info.used_memory().iter().filter(|m| writes(m.access())) {
                let width = memory.memory_size().size() as i64;
                let displacement = memory.displacement() as i64;
                let base = memory.base();
                if fixed_address(memory) {
                    continue; // a static
                }
                if let (Some(k), R::None) = (from_state(&regs, rsp, base), memory.index()) {
                    let (b, e) = (k + displacement, k + displacement + width);
                    let overlaps = b < field.1 as i64 && (field.0 as i64) < e;
                    if overlaps && (all == 0 || bytes_of(field, b, e) & !read != 0) {
                        return Err(format!("the instruction at {ip:#x} writes it"));
                    }
                }
                if base == R::RSP && memory.index() == R::None {
                    match (rsp, frame_top) {
                        (Some(d), Some(top)) if d + displacement + width <= top => {
                            if slot.is_some_and(|s| d + displacement < s + 8 && s < d + displacement + width) {
                                slot = None;
                            }
                            continue;
                        }
                        _ => return Err(format!("the instruction at {ip:#x} writes the stack outside its frame")),
                    }
                }
                match (from_state(&regs, rsp, base), memory.index()) {
                    // Checked above (writing bytes the path read first is a
                    // later statement's write).
                    (Some(_), R::None) => {}
                    _ => {
                        return Err(format!(
                            "the instruction at {ip:#x} writes memory through a pointer that may point at it"
                        ))
                    }
                }
            }
            match instruction.flow_control() {
                FlowControl::Return => break,
                FlowControl::IndirectCall => {
                    if instruction.op0_kind() == OpKind::Memory && instruction.memory_base() == R::RIP {
                        match binary.slot(instruction.memory_displacement64()) {
                            Some(name) if !known_to_the_compiler(name) => break,
                            Some(name) => return Err(format!("the code calls `{name}` at {ip:#x} first")),
                            None => return Err(format!("the code calls through an unnamed pointer at {ip:#x}")),
                        }
                    }
                    if instruction.op0_kind() == OpKind::Register
                        && gpr(instruction.op0_register()).is_some_and(|g| slot_loaded & 1 << g != 0)
                    {
                        return Err(format!(
                            "the code calls at {ip:#x} through a register the function loads from a pointer slot \
                             of a function the compiler knows"
                        ));
                    }
                    break;
                }
                FlowControl::Exception | FlowControl::Interrupt => break,
                FlowControl::IndirectBranch => {
                    // `jmp *GOT(%rip)`: a tail call to another object's function.
                    if instruction.op0_kind() == OpKind::Memory && instruction.memory_base() == R::RIP {
                        match binary.slot(instruction.memory_displacement64()) {
                            Some(name) if !known_to_the_compiler(name) => break,
                            _ => return Err(format!("the code jumps to a function LLVM may see through at {ip:#x}")),
                        }
                    }
                    return Err(format!("the code jumps through a table at {ip:#x}"));
                }
                FlowControl::UnconditionalBranch => {
                    let target = instruction.near_branch_target();
                    if !code.inside(target) {
                        break; // a tail call
                    }
                    ip = target;
                    continue;
                }
                FlowControl::ConditionalBranch => {
                    let target = instruction.near_branch_target();
                    if code.inside(target) {
                        work.push((target, regs, rsp, slot, read));
                    } else {
                        return Err(format!("the code at {ip:#x} branches out of the function"));
                    }
                }
                FlowControl::Call => {
                    // A direct call: a barrier when the callee calls code LLVM
                    // cannot see (it may then read the object); otherwise its
                    // code may not touch the object at all and LLVM may move a
                    // store past it: go on, the callee keeping the callee-saved
                    // registers.
                    if opaque_callee(binary, instruction.near_branch_target(), CALLEE_DEPTH) {
                        break;
                    }
                    for g in CALLER_SAVED {
                        regs[g] = None;
                    }
                    ip = instruction.next_ip();
                    continue;
                }
                FlowControl::Next => {}
                _ => return Err(format!("the instruction at {ip:#x} is not followed")),
            }
            // Registers after the instruction.
            let op0 = if instruction.op_count() > 0 && instruction.op0_kind() == OpKind::Register {
                gpr(instruction.op0_register())
            } else {
                None
            };
            let written = written_gprs(info);
            let value = match instruction.code() {
                Op::Mov_r64_rm64
                    if instruction.op1_kind() == OpKind::Memory
                        && instruction.memory_base() == R::RSP
                        && instruction.memory_index() == R::None =>
                {
                    match (rsp, slot) {
                        (Some(d), Some(s)) if d + instruction.memory_displacement64() as i64 == s => Some(0),
                        _ => None,
                    }
                }
                Op::Mov_r64_rm64 | Op::Mov_rm64_r64
                    if instruction.op0_kind() == OpKind::Register && instruction.op1_kind() == OpKind::Register =>
                {
                    gpr(instruction.op1_register()).and_then(|g| regs[g])
                }
                Op::Lea_r64_m if instruction.memory_index() == R::None => {
                    from_state(&regs, rsp, instruction.memory_base())
                        .map(|k| k + instruction.memory_displacement64() as i64)
                }
                Op::Add_rm64_imm8 | Op::Add_rm64_imm32 if instruction.op0_kind() == OpKind::Register => {
                    op0.and_then(|g| regs[g]).map(|k| k + instruction.immediate(1) as i64)
                }
                Op::Sub_rm64_imm8 | Op::Sub_rm64_imm32 if instruction.op0_kind() == OpKind::Register => {
                    op0.and_then(|g| regs[g]).map(|k| k - instruction.immediate(1) as i64)
                }
                _ => None,
            };
            // The stack pointer: pushes, pops and constant adjustments.
            rsp = match instruction.code() {
                _ if written & 1 << RSP == 0 => rsp,
                Op::Push_r64 | Op::Pushq_imm8 | Op::Pushq_imm32 | Op::Push_rm64 => rsp.map(|d| d - 8),
                Op::Pop_r64 | Op::Pop_rm64 => rsp.map(|d| d + 8),
                Op::Add_rm64_imm8 | Op::Add_rm64_imm32 if op0 == Some(RSP) => {
                    rsp.map(|d| d + instruction.immediate(1) as i64)
                }
                Op::Sub_rm64_imm8 | Op::Sub_rm64_imm32 if op0 == Some(RSP) => {
                    rsp.map(|d| d - instruction.immediate(1) as i64)
                }
                _ => None,
            };
            for g in (0..16).filter(|&g| g != RSP && written & 1 << g != 0) {
                regs[g] = None;
            }
            if let Some(g) = op0.filter(|&g| g != RSP) {
                regs[g] = value;
            }
            ip = instruction.next_ip();
        }
    }
    Ok(())
}

/// The bytes of `field` (offsets from the state pointer) in `[begin, end)`, one
/// bit per byte from the field's first; none for a field over 128 bytes.
fn bytes_of(field: (u64, u64), begin: i64, end: i64) -> u128 {
    let (f0, f1) = (field.0 as i64, field.1 as i64);
    if f1 - f0 > 128 {
        return 0;
    }
    let (b, e) = (begin.max(f0), end.min(f1));
    (b..e).fold(0, |mask, byte| mask | 1u128 << (byte - f0))
}

/// How deep [`opaque_callee`] follows direct calls.
const CALLEE_DEPTH: u32 = 3;

/// Whether the function at `target` (a direct call's target) calls code that
/// LLVM cannot see when it compiles the caller: a call through a register, a
/// call or jump through a pointer slot to a function not known to the
/// compiler, a system call; or (following direct calls `depth` deep) a
/// function that does. A function without a symbol of its own (a PLT
/// stub) is its jump.
fn opaque_callee(binary: &crate::loader::Binary, target: u64, depth: u32) -> bool {
    use iced_x86::{FlowControl, Mnemonic, OpKind, Register as R};
    let (begin, end) = match binary.symbols.functions().find(|(_, a, s)| *a <= target && target < a + s) {
        Some((_, address, size)) => (address, address + size),
        None => (target, target + 16),
    };
    let code = Code::new(binary, vec![gimli::Range { begin, end }]);
    let slot_loaded = known_slot_registers(binary, &code.insns);
    let through_slot = |i: &iced_x86::Instruction| {
        i.op0_kind() == OpKind::Memory && i.memory_base() == R::RIP && i.memory_index() == R::None
    };
    for instruction in &code.insns {
        if instruction.mnemonic() == Mnemonic::Syscall {
            return true;
        }
        let opaque = match instruction.flow_control() {
            FlowControl::IndirectCall | FlowControl::IndirectBranch if through_slot(instruction) => {
                binary.slot(instruction.memory_displacement64()).is_some_and(|n| !known_to_the_compiler(n))
            }
            FlowControl::IndirectCall if instruction.op0_kind() == OpKind::Register => {
                gpr(instruction.op0_register()).is_none_or(|g| slot_loaded & 1 << g == 0)
            }
            FlowControl::IndirectCall => true,
            FlowControl::Call if depth > 0 => opaque_callee(binary, instruction.near_branch_target(), depth - 1),
            _ => false,
        };
        if opaque {
            return true;
        }
    }
    false
}

/// The general registers (a bit per DWARF number) that the instructions
/// `insns` load from a pointer slot holding a function the compiler
/// knows the effects of, or one rdb cannot name: a call through them may be
/// a call LLVM can move a store past (it hoists such loads out of loops).
fn known_slot_registers(binary: &crate::loader::Binary, insns: &[iced_x86::Instruction]) -> u32 {
    use iced_x86::{Code as Op, OpKind, Register as R};
    let mut mask = 0;
    for instruction in insns {
        if instruction.code() == Op::Mov_r64_rm64
            && instruction.op1_kind() == OpKind::Memory
            && instruction.memory_base() == R::RIP
            && binary.slot(instruction.memory_displacement64()).is_none_or(known_to_the_compiler)
        {
            if let Some(g) = gpr(instruction.op0_register()) {
                mask |= 1 << g;
            }
        }
    }
    mask
}
