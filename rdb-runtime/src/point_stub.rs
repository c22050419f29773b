//! Running to an interruption point without a stop per arrival: a conditional breakpoint in the
//! replayed process itself.
//!
//! A hardware breakpoint at the point's pc stops the thread at every arrival (a ptrace stop,
//! tens of µs), and a point inside a loop may come after millions of them. Instead, when the
//! instruction at the pc is at least 5 bytes long (the recorder prefers such a pc, see
//! [`prefer_patchable`]), the replayer writes a `jmp` over it to a stub in the unused tail of
//! the object's executable segment (the room `displace` uses), which compares the general
//! registers with the point's and traps (`int3`) only when all of them match:
//!
//! ```text
//! stub: lea rsp,[rsp-GAP]; pushfq          ; far below the red zone; flags kept
//!       cmp REG,[rip+want_REG]; jne miss   ; 15 registers, then rsp (want: rsp - GAP - 8)
//!       push rsi; push rdi; push rcx        ; the stack window, word by word
//!       lea rsi,[rsp+GAP+32-128]; lea rdi,[rip+want_stack]; mov ecx,WORDS; cld; repe cmpsq
//!       pop rcx; pop rdi; pop rsi; jne miss
//!       popfq; lea rsp,[rsp+GAP]
//!       int3                               ; all match: the tracer compares the rest
//! disp: <the instruction, re-encoded here>; jmp pc+len
//! miss: popfq; lea rsp,[rsp+GAP]; jmp disp
//! want: 16 words, then the stack window's bytes
//! ```
//!
//! The stub's 32 bytes of scratch stack are [`GAP`] bytes below the stack pointer: dead memory,
//! but a later point's stack window may cover dead bytes the program never rewrote (padding),
//! and the recording never had the stub's there. Writing far below the window of the arrival
//! itself (and of points at nearby depths) keeps them out of the windows that matter; a point
//! about `GAP` bytes deeper than an earlier arrival at its pc could still see them and would
//! then not be found (a divergence, not a wrong replay).
//!
//! At the `int3` the thread's state is the program's at the pc, but `rip`: the tracer checks
//! flags, FP registers, stack and pages (`interrupt::digest`); a match puts the instruction's
//! bytes back and `rip` to the pc; otherwise the thread goes on at `disp`. Other threads (and
//! fork children, which inherit the patch) pass through the stub with other registers.

use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Decoder, DecoderOptions, FlowControl, Instruction, InstructionBlock,
    MemoryOperand, Register,
};
use rdb_tracee::{mem, Pid};

use crate::interrupt::PointKey;

/// Room a stub takes at most (its code, the 16 words and the stack window it compares with).
pub const STUB_ROOM: u64 = 2048;
/// Length of the `jmp rel32` written over the point's instruction.
const JMP_LEN: usize = 5;
/// How far below the stack pointer the stub keeps its scratch words.
pub const GAP: i64 = 4096 + 128;

/// The registers compared, with their word in `user_regs_struct`; `rsp` is compared last.
const REGS: [(Register, usize); 15] = [
    (Register::RAX, 10),
    (Register::RBX, 5),
    (Register::RCX, 11),
    (Register::RDX, 12),
    (Register::RSI, 13),
    (Register::RDI, 14),
    (Register::RBP, 4),
    (Register::R8, 9),
    (Register::R9, 8),
    (Register::R10, 7),
    (Register::R11, 6),
    (Register::R12, 3),
    (Register::R13, 2),
    (Register::R14, 1),
    (Register::R15, 0),
];

/// A stub armed for one point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stub {
    /// The point's pc, where the `jmp` is.
    pub pc: u64,
    /// The bytes the `jmp` replaced.
    pub orig: [u8; JMP_LEN],
    /// Where the thread stands after the stub's `int3` (the displaced instruction).
    pub after_trap: u64,
    /// Where the stub is.
    pub slot: u64,
}

/// The instruction at `pc` when it can carry the `jmp` (at least 5 bytes, movable).
fn patchable(pc: u64, code: &[u8]) -> Option<Instruction> {
    let instr = Decoder::with_ip(64, code, pc, DecoderOptions::NONE).decode();
    let movable = matches!(
        instr.flow_control(),
        FlowControl::Next | FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
    ) && !matches!(instr.code(), Code::Syscall | Code::Rdtsc | Code::Rdtscp);
    (!instr.is_invalid() && instr.len() >= JMP_LEN && movable).then_some(instr)
}

/// Whether the instruction at `pc` in process `pid` can carry a stub's `jmp`.
pub fn is_patchable(pid: Pid, pc: u64) -> bool {
    let mut code = [0u8; 15];
    mem::read(pid, pc, &mut code).is_ok_and(|n| patchable(pc, &code[..n]).is_some())
}

/// The first instruction from `pc` on, along straight-line code (at most 8 instructions), that
/// can carry the stub's `jmp`: every arrival at `pc` goes on to it, so watching it instead is
/// as good a place for a point, and replay can run to it without stopping. `pc` itself when
/// there is none.
pub fn prefer_patchable(pid: Pid, pc: u64) -> u64 {
    let mut code = [0u8; 8 * 15];
    let n = mem::read(pid, pc, &mut code).unwrap_or(0);
    let mut decoder = Decoder::with_ip(64, &code[..n], pc, DecoderOptions::NONE);
    for _ in 0..8 {
        if !decoder.can_decode() {
            break;
        }
        let at = decoder.ip();
        let instr = decoder.decode();
        if instr.is_invalid() || n < (at - pc) as usize + 15 {
            break;
        }
        if patchable(at, &code[(at - pc) as usize..n]).is_some() {
            return at;
        }
        if instr.flow_control() != FlowControl::Next {
            break;
        }
    }
    pc
}

/// The stub's code for `key`, to be written at `slot`, for the instruction `instr` at the
/// point's pc; with the offset of the word after its `int3`.
fn assemble(key: &PointKey, instr: &Instruction, slot: u64) -> Option<(Vec<u8>, u64)> {
    // Labels are addresses no code has: the block encoder resolves branches to them.
    const MISS: u64 = 0x10;
    const DISP: u64 = 0x20;
    let encode = |want: u64| -> Option<(Vec<u8>, u64)> {
        let red = |d: i64| MemoryOperand::with_base_displ(Register::RSP, d);
        let mut block =
            vec![Instruction::with2(Code::Lea_r64_m, Register::RSP, red(-GAP)).ok()?, Instruction::with(Code::Pushfq)];
        let mut regs: Vec<(Register, u64)> = REGS.iter().map(|&(r, w)| (r, key.regs[w])).collect();
        regs.push((Register::RSP, key.sp().wrapping_sub(GAP as u64 + 8)));
        for (i, (r, _)) in regs.iter().enumerate() {
            let at = MemoryOperand::with_base_displ(Register::RIP, (want + 8 * i as u64) as i64);
            block.push(Instruction::with2(Code::Cmp_r64_rm64, *r, at).ok()?);
            block.push(Instruction::with_branch(Code::Jne_rel32_64, MISS).ok()?);
        }
        let words = key.stack.len() / 8;
        if words > 0 {
            let stack_at = MemoryOperand::with_base_displ(Register::RIP, (want + 16 * 8) as i64);
            block.push(Instruction::with1(Code::Push_r64, Register::RSI).ok()?);
            block.push(Instruction::with1(Code::Push_r64, Register::RDI).ok()?);
            block.push(Instruction::with1(Code::Push_r64, Register::RCX).ok()?);
            block.push(Instruction::with2(Code::Lea_r64_m, Register::RSI, red(GAP + 32 - 128)).ok()?);
            block.push(Instruction::with2(Code::Lea_r64_m, Register::RDI, stack_at).ok()?);
            block.push(Instruction::with2(Code::Mov_r32_imm32, Register::ECX, words as u32).ok()?);
            block.push(Instruction::with(Code::Cld));
            block.push(Instruction::with_repe_cmpsq(64).ok()?);
            block.push(Instruction::with1(Code::Pop_r64, Register::RCX).ok()?);
            block.push(Instruction::with1(Code::Pop_r64, Register::RDI).ok()?);
            block.push(Instruction::with1(Code::Pop_r64, Register::RSI).ok()?);
            block.push(Instruction::with_branch(Code::Jne_rel32_64, MISS).ok()?);
        }
        block.push(Instruction::with(Code::Popfq));
        block.push(Instruction::with2(Code::Lea_r64_m, Register::RSP, red(GAP)).ok()?);
        block.push(Instruction::with(Code::Int3));
        let trap_index = block.len();
        let mut moved = *instr;
        moved.set_ip(DISP);
        block.push(moved);
        block.push(Instruction::with_branch(Code::Jmp_rel32_64, instr.next_ip()).ok()?);
        let mut miss = Instruction::with(Code::Popfq);
        miss.set_ip(MISS);
        block.push(miss);
        block.push(Instruction::with2(Code::Lea_r64_m, Register::RSP, red(GAP)).ok()?);
        block.push(Instruction::with_branch(Code::Jmp_rel32_64, DISP).ok()?);
        let options = BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS;
        let encoded = BlockEncoder::encode(64, InstructionBlock::new(&block, slot), options).ok()?;
        let after_trap = encoded.new_instruction_offsets.get(trap_index).copied()? as u64;
        let mut code = encoded.code_buffer;
        code.resize(((code.len() + 7) & !7).max((want - slot) as usize), 0);
        for (_, v) in &regs {
            code.extend_from_slice(&v.to_le_bytes());
        }
        code.extend_from_slice(&key.stack[..words * 8]);
        Some((code, after_trap))
    };
    // Once to learn the code's length, once with the words right after it (the encoder keeps
    // the forms of a block whose targets all stay in reach, so the length does not change).
    let data = 16 * 8 + (key.stack.len() as u64 / 8) * 8;
    let (first, _) = encode(slot + STUB_ROOM - data)?;
    let code_len = first.len() as u64 - data;
    let (code, after_trap) = encode(slot + ((code_len.min(STUB_ROOM - data) + 7) & !7))?;
    (code.len() as u64 <= STUB_ROOM).then_some((code, slot + after_trap))
}

/// Arms a stub for `key` in process `pid`: writes it at `slot` (at least [`STUB_ROOM`] bytes
/// of room) and the `jmp` over the point's instruction. `None` (nothing written) when the
/// instruction cannot carry the `jmp` or the stub does not assemble.
pub fn arm(pid: Pid, key: &PointKey, slot: u64) -> Option<Stub> {
    let pc = key.pc();
    let mut code = [0u8; 15];
    let n = mem::read(pid, pc, &mut code).ok()?;
    let instr = patchable(pc, &code[..n])?;
    let (stub, after_trap) = assemble(key, &instr, slot)?;
    let rel = slot.wrapping_sub(pc + JMP_LEN as u64) as i64;
    let rel = i32::try_from(rel).ok()?;
    mem::write(pid, slot, &stub).ok()?;
    let mut jmp = [0xe9, 0, 0, 0, 0];
    jmp[1..].copy_from_slice(&rel.to_le_bytes());
    let orig: [u8; JMP_LEN] = code[..JMP_LEN].try_into().ok()?;
    mem::write(pid, pc, &jmp).ok()?;
    Some(Stub { pc, orig, after_trap, slot })
}

/// Puts the point's instruction back.
pub fn disarm(pid: Pid, stub: &Stub) -> std::io::Result<()> {
    mem::write(pid, stub.pc, &stub.orig)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PointKey {
        let mut regs = [0u64; crate::interrupt::REG_WORDS];
        regs[16] = 0x40_1000; // rip
        regs[19] = 0x7fff_0000; // rsp
        regs[10] = 0x1234; // rax
        PointKey { regs, stack: (0..64).collect(), pages: Vec::new(), digest: [0; 32] }
    }

    #[test]
    fn a_stub_compares_every_register_and_traps_then_runs_the_instruction_and_jumps_back() {
        // mov rax, [rip+0x100] (7 bytes) at the point.
        let code = [0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00];
        let instr = patchable(0x40_1000, &code).expect("7 bytes, movable");
        let slot = 0x40_8000;
        let (stub, after_trap) = assemble(&key(), &instr, slot).expect("assembles");
        assert!(stub.len() as u64 <= STUB_ROOM);
        let mut d = Decoder::with_ip(64, &stub, slot, DecoderOptions::NONE);
        let listing: Vec<Instruction> = std::iter::from_fn(|| d.can_decode().then(|| d.decode())).collect();
        let cmps = listing.iter().filter(|i| i.code() == Code::Cmp_r64_rm64).count();
        assert_eq!(cmps, 16);
        let trap = listing.iter().position(|i| i.code() == Code::Int3).expect("an int3");
        assert_eq!(listing[trap].next_ip(), after_trap);
        // After the trap: the instruction, reading the same absolute address, then back.
        let moved = listing[trap + 1];
        assert_eq!(moved.code(), instr.code());
        assert_eq!(moved.memory_displacement64(), 0x40_1000 + 7 + 0x100);
        assert_eq!(listing[trap + 2].near_branch64(), 0x40_1007);
        // The words compared: rax's is the first, rsp's (less the stub's 136 bytes) the last.
        let data = stub.len() - 128 - 64;
        let words: Vec<u64> =
            stub[data..data + 128].chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
        assert_eq!((words[0], words[15]), (0x1234, 0x7fff_0000 - GAP as u64 - 8));
        assert_eq!(&stub[data + 128..], &(0..64).collect::<Vec<u8>>()[..]);
        let first_cmp = listing.iter().find(|i| i.code() == Code::Cmp_r64_rm64).unwrap();
        assert_eq!(first_cmp.memory_displacement64(), slot + data as u64);
        assert!(listing.iter().any(|i| i.code() == Code::Cmpsq_m64_m64 && i.has_repe_prefix()));
    }

    #[test]
    fn short_instructions_and_calls_cannot_carry_the_jump() {
        assert!(patchable(0x1000, &[0x48, 0x89, 0xc3]).is_none()); // mov rbx, rax
        assert!(patchable(0x1000, &[0xe8, 0, 0, 0, 0]).is_none()); // call rel32
        assert!(patchable(0x1000, &[0x48, 0x05, 1, 0, 0, 0]).is_some()); // add rax, 1 (imm32)
    }
}
