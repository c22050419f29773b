//! Stepping over a breakpoint without a single-step stop.
//!
//! A breakpoint's `int3` replaces the first byte of an instruction. After the observer ran,
//! the tracee must execute that instruction and carry on. The classic way — lift the
//! breakpoint, single-step, re-plant — costs a second ptrace stop (a debug trap and two
//! context switches, about as much as the breakpoint stop itself) plus two writes to the code.
//! Instead, when the breakpoints of an image are planted, each instruction is prepared once:
//!
//! - **Displaced copy**: the instruction, re-encoded for a new address (iced-x86's block
//!   encoder fixes up RIP-relative operands and branch targets), followed by a `jmp` back to
//!   the next instruction, is written into a *slot* in the unused tail of the last page of the
//!   executable segment (the bytes between the segment's end and the page end are mapped
//!   executable but belong to no segment: the program never runs or reads them as code).
//!   At a hit the tracee resumes at the slot; the breakpoint stays planted.
//! - **Emulated call**: a `call` is not displaced, since its pushed return address would point
//!   into the slot (a visible difference for unwinders and backtraces). The tracer pushes the
//!   real return address and sets `rip` to the target itself.
//! - **Single step**: anything else (no room left in the page tail, an instruction the encoder
//!   cannot move) falls back to lift, step, re-plant.
//!
//! A fault raised *by a displaced instruction* stops at the slot's address; the replayer
//! moves `rip` back to the instruction's own address before delivering the signal (a faulting
//! instruction has no effect), so signal handlers see the program's pc.

use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Decoder, DecoderOptions, FlowControl, Instruction, InstructionBlock,
    OpKind, Register,
};

use rdb_tracee::Regs;

/// Most room a displaced instruction takes: the longest instruction (15 bytes) re-encoded
/// with a longer branch form, plus a 5-byte `jmp`, fits. Slots are cut to the encoded size.
pub const SLOT: u64 = 32;

/// The length of the instruction decoded at `ip` from `code`, if it decodes.
pub fn instruction_length(ip: u64, code: &[u8]) -> Option<usize> {
    let instr = Decoder::with_ip(64, code, ip, DecoderOptions::NONE).decode();
    (!instr.is_invalid()).then(|| instr.len())
}

/// Whether `code` at `ip` is exactly one call instruction.
pub fn is_call(ip: u64, code: &[u8]) -> bool {
    let instr = Decoder::with_ip(64, code, ip, DecoderOptions::NONE).decode();
    !instr.is_invalid() && instr.len() == code.len() && instr.flow_control() == FlowControl::Call
        || !instr.is_invalid() && instr.len() == code.len() && instr.flow_control() == FlowControl::IndirectCall
}

/// How a breakpoint's original instruction is executed after a hit.
#[derive(Debug, Clone)]
pub enum StepOver {
    /// Resume at this address: a copy of the instruction, then a jump back.
    Displaced(u64),
    /// A near `call`: emulated by the tracer.
    Call(Box<Instruction>),
    /// Lift the breakpoint, single-step, re-plant.
    Step,
}

/// A prepared step-over: how, plus the code to write at the slot (for `Displaced`).
#[derive(Debug)]
pub struct Prepared {
    pub over: StepOver,
    pub slot_code: Vec<u8>,
}

/// Prepares the instruction whose bytes (`code`, at least 15 bytes where mapped, read before
/// the breakpoint was planted) start at `addr`; `slot` is where free room starts and how many
/// bytes it has, if any.
pub fn prepare(addr: u64, code: &[u8], slot: Option<(u64, u64)>) -> Prepared {
    let step = Prepared { over: StepOver::Step, slot_code: Vec::new() };
    let mut decoder = Decoder::with_ip(64, code, addr, DecoderOptions::NONE);
    let instr = decoder.decode();
    if instr.is_invalid() {
        return step;
    }
    if matches!(instr.code(), Code::Call_rel32_64 | Code::Call_rm64) {
        return Prepared { over: StepOver::Call(Box::new(instr)), slot_code: Vec::new() };
    }
    let Some((slot, room)) = slot else { return step };
    if !displaceable(&instr) {
        return step;
    }
    let back = match Instruction::with_branch(Code::Jmp_rel32_64, instr.next_ip()) {
        Ok(j) => j,
        Err(_) => return step,
    };
    let block = [instr, back];
    match BlockEncoder::encode(64, InstructionBlock::new(&block, slot), BlockEncoderOptions::NONE) {
        Ok(encoded) if encoded.code_buffer.len() as u64 <= room.min(SLOT) => {
            Prepared { over: StepOver::Displaced(slot), slot_code: encoded.code_buffer }
        }
        _ => step,
    }
}

/// Whether an instruction behaves the same at another address once re-encoded.
fn displaceable(instr: &Instruction) -> bool {
    match instr.flow_control() {
        // Calls are emulated; interrupts, syscalls and exceptions stop anyway and report
        // their own address.
        FlowControl::Call | FlowControl::IndirectCall | FlowControl::Interrupt | FlowControl::Exception => false,
        FlowControl::Next
        | FlowControl::UnconditionalBranch
        | FlowControl::IndirectBranch
        | FlowControl::ConditionalBranch
        | FlowControl::Return
        | FlowControl::XbeginXabortXend => !matches!(
            instr.code(),
            // Restricted transactional memory aborts to a relative address; cheaper to step.
            Code::Xbegin_rel16 | Code::Xbegin_rel32 | Code::Syscall | Code::Rdtsc | Code::Rdtscp
        ),
    }
}

/// Emulates a near call at a stop whose registers are `regs` (`rip` = the call's address):
/// returns the return address to push and the target. `None` when an operand cannot be read
/// (the caller then single-steps, which produces the program's own fault). `read_u64` reads
/// the stopped program's memory.
pub fn emulate_call(instr: &Instruction, regs: &Regs, read_u64: impl Fn(u64) -> Option<u64>) -> Option<(u64, u64)> {
    let ret = instr.next_ip();
    let target = match instr.op0_kind() {
        OpKind::NearBranch64 => instr.near_branch64(),
        OpKind::Register => register(regs, instr.op0_register(), ret)?,
        OpKind::Memory => {
            let ea = instr.virtual_address(0, 0, |reg, _, _| register(regs, reg, ret))?;
            read_u64(ea)?
        }
        _ => return None,
    };
    Some((ret, target))
}

/// A 64-bit general-purpose register's value (`rip` reads as the next instruction, as the
/// CPU sees it for RIP-relative addressing); segment bases for `fs`/`gs` overrides.
fn register(regs: &Regs, reg: Register, next_ip: u64) -> Option<u64> {
    Some(match reg {
        Register::RAX => regs.rax,
        Register::RBX => regs.rbx,
        Register::RCX => regs.rcx,
        Register::RDX => regs.rdx,
        Register::RSI => regs.rsi,
        Register::RDI => regs.rdi,
        Register::RBP => regs.rbp,
        Register::RSP => regs.rsp,
        Register::R8 => regs.r8,
        Register::R9 => regs.r9,
        Register::R10 => regs.r10,
        Register::R11 => regs.r11,
        Register::R12 => regs.r12,
        Register::R13 => regs.r13,
        Register::R14 => regs.r14,
        Register::R15 => regs.r15,
        Register::RIP => next_ip,
        Register::FS => regs.fs_base,
        Register::GS => regs.gs_base,
        Register::ES | Register::CS | Register::SS | Register::DS => 0,
        _ => return None,
    })
}

/// Room for displaced instructions: the free bytes of [`segment_tails`], handed out in order.
#[derive(Debug, Default)]
pub struct Slots {
    ranges: Vec<(u64, u64)>,
}

impl Slots {
    pub fn for_image(exe: &std::path::Path, load_bias: u64) -> Slots {
        Slots { ranges: segment_tails(exe, load_bias) }
    }

    /// Room in the ELF object `path` whose lowest mapping starts at `lowest_start` (its first
    /// loadable segment, page-aligned, is mapped there).
    pub fn for_mapped(path: &std::path::Path, lowest_start: u64) -> Slots {
        let first = first_load_vaddr(path).unwrap_or(0) & !4095;
        Slots::for_image(path, lowest_start.wrapping_sub(first))
    }

    /// Where free room starts and its size.
    pub fn free(&self) -> Option<(u64, u64)> {
        self.ranges.first().map(|&(start, end)| (start, end - start))
    }

    /// Marks `len` bytes from the start of [`Slots::free`] used (8-byte aligned).
    pub fn take(&mut self, len: u64) {
        if let Some(r) = self.ranges.first_mut() {
            r.0 = (r.0 + len + 7) & !7;
            if r.0 + 8 > r.1 {
                self.ranges.remove(0);
            }
        }
    }
}

/// The virtual address of the first loadable segment of the ELF file `path`.
fn first_load_vaddr(path: &std::path::Path) -> Option<u64> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    use object::Endianness;
    let data = std::fs::read(path).ok()?;
    let elf = ElfFile64::<Endianness>::parse(&*data).ok()?;
    let e = elf.endian();
    elf.elf_program_headers().iter().filter(|p| p.p_type(e) == object::elf::PT_LOAD).map(|p| p.p_vaddr(e)).min()
}

/// The unused tail of the last page of each executable segment of the ELF file `exe` loaded
/// at `load_bias`: `[start, end)` run-time address ranges, 8-byte aligned, where no segment
/// is mapped.
pub fn segment_tails(exe: &std::path::Path, load_bias: u64) -> Vec<(u64, u64)> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    use object::Endianness;
    let Ok(data) = std::fs::read(exe) else { return Vec::new() };
    let Ok(elf) = ElfFile64::<Endianness>::parse(&*data) else { return Vec::new() };
    let e = elf.endian();
    let loads: Vec<(u64, u64, bool)> = elf
        .elf_program_headers()
        .iter()
        .filter(|p| p.p_type(e) == object::elf::PT_LOAD)
        .map(|p| (p.p_vaddr(e), p.p_vaddr(e) + p.p_memsz(e), p.p_flags(e) & object::elf::PF_X != 0))
        .collect();
    let mut tails = Vec::new();
    for &(_, end, exec) in &loads {
        let page_end = (end + 4095) & !4095;
        let start = (end + 7) & !7;
        let clear = loads.iter().all(|&(s, e, _)| e <= end || s >= page_end);
        if exec && start + 16 <= page_end && clear {
            tails.push((load_bias.wrapping_add(start), load_bias.wrapping_add(page_end)));
        }
    }
    tails
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regs() -> Regs {
        rdb_tracee::ptrace::zeroed_regs()
    }

    fn mem(at: u64, value: u64) -> impl Fn(u64) -> Option<u64> {
        move |addr| (addr == at).then_some(value)
    }

    #[test]
    fn rip_relative_load_keeps_its_target_when_moved() {
        // mov rax, [rip+0x100] at 0x1000 reads 0x1107.
        let code = [0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
        let p = prepare(0x1000, &code, Some((0x9000, 64)));
        let StepOver::Displaced(slot) = p.over else { panic!("{:?}", p.over) };
        assert_eq!(slot, 0x9000);
        let mut d = Decoder::with_ip(64, &p.slot_code, 0x9000, DecoderOptions::NONE);
        let moved = d.decode();
        assert_eq!(moved.code(), Code::Mov_r64_rm64);
        assert_eq!(moved.ip_rel_memory_address(), 0x1107);
        let back = d.decode();
        assert_eq!(back.flow_control(), FlowControl::UnconditionalBranch);
        assert_eq!(back.near_branch_target(), 0x1007);
    }

    #[test]
    fn short_conditional_branch_keeps_both_targets() {
        // jne +0x10 at 0x2000: taken to 0x2012, else 0x2002.
        let mut code = [0u8; 15];
        code[..2].copy_from_slice(&[0x75, 0x10]);
        let p = prepare(0x2000, &code, Some((0x4000_0000, 64)));
        let StepOver::Displaced(_) = p.over else { panic!("{:?}", p.over) };
        let mut d = Decoder::with_ip(64, &p.slot_code, 0x4000_0000, DecoderOptions::NONE);
        let jcc = d.decode();
        assert_eq!(jcc.near_branch_target(), 0x2012);
        assert_eq!(d.decode().near_branch_target(), 0x2002);
        assert!(p.slot_code.len() as u64 <= SLOT);
    }

    #[test]
    fn calls_are_emulated_with_the_real_return_address() {
        // call rel32 +0x20 at 0x3000 (5 bytes): target 0x3025, returns to 0x3005.
        let mut code = [0u8; 15];
        code[..5].copy_from_slice(&[0xe8, 0x20, 0, 0, 0]);
        let p = prepare(0x3000, &code, Some((0x9000, 64)));
        let StepOver::Call(i) = p.over else { panic!("{:?}", p.over) };
        assert_eq!(emulate_call(&i, &regs(), mem(0, 0)), Some((0x3005, 0x3025)));
        // call [rip+0x10] at 0x3000 (6 bytes): reads the target at 0x3016.
        code[..6].copy_from_slice(&[0xff, 0x15, 0x10, 0, 0, 0]);
        let StepOver::Call(i) = prepare(0x3000, &code, None).over else { panic!() };
        assert_eq!(emulate_call(&i, &regs(), mem(0x3016, 0xdead)), Some((0x3006, 0xdead)));
        // call rax.
        code[..2].copy_from_slice(&[0xff, 0xd0]);
        let StepOver::Call(i) = prepare(0x3000, &code, None).over else { panic!() };
        let mut r = regs();
        r.rax = 0x7777;
        assert_eq!(emulate_call(&i, &r, mem(0, 0)), Some((0x3002, 0x7777)));
        // call [rbx+8], unreadable: None (the caller single-steps).
        code[..3].copy_from_slice(&[0xff, 0x53, 0x08]);
        let StepOver::Call(i) = prepare(0x3000, &code, None).over else { panic!() };
        assert_eq!(emulate_call(&i, &r, mem(0, 0)), None);
    }

    #[test]
    fn without_a_slot_or_for_a_syscall_it_single_steps() {
        let mut code = [0u8; 15];
        code[..3].copy_from_slice(&[0x48, 0x89, 0xc3]); // mov rbx, rax
        assert!(matches!(prepare(0x1000, &code, None).over, StepOver::Step));
        code[..2].copy_from_slice(&[0x0f, 0x05]); // syscall
        assert!(matches!(prepare(0x1000, &code, Some((0x9000, 64))).over, StepOver::Step));
        assert!(matches!(prepare(0x1000, &[0xff; 15], Some((0x9000, 64))).over, StepOver::Step));
    }
}
