//! Counting a region's hits without a stop: a counter in the replayed process itself.
//!
//! A region's breakpoint stops the thread at every hit (a ptrace stop, tens of µs); a search
//! that only needs to know how many hits there were (`rdb find`'s counting replay) pays that
//! at each one. Where the instruction at the region's address is at least 5 bytes long, the
//! replayer can write a `jmp` over it to a stub in the room after the breakpoint's displaced
//! copy (see `displace`), which counts the hit in a word of the process's own memory and traps
//! (`int3`) only at the hit number the search asks for:
//!
//! ```text
//! stub: mov [save_rax],rax; lahf; seto al; mov [save_fl],ax   ; flags kept, no stack used
//!       mov rax,[count]; add rax,1; mov [count],rax
//!       cmp rax,[target]; je trap
//!       mov ax,[save_fl]; add al,0x7f; sahf; mov rax,[save_rax]  ; OF from al, the rest from ah
//!       jmp displaced                                            ; the instruction's copy
//! trap: mov ax,[save_fl]; add al,0x7f; sahf; mov rax,[save_rax]
//!       int3                                                     ; the program's registers
//! ```
//!
//! The words ([`Data`]) are in the unused tail of the last page of the image's last writable
//! segment (past `_end`: no object of the program, and the heap starts on the next page), so
//! the code stays read-only and checkpoints (copies of the whole process) keep the count. All
//! the sites of one image (the copies of a region) share the words: the count is the image's
//! hits in program order, for threads are serialized (one runs user code at a time, and none is
//! interrupted inside the stub: interruption points are recorded pcs), so the plain `add` and
//! the two saved words need no atomicity. A fork child counts on in its copy.

use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Code, Decoder, DecoderOptions, Instruction, InstructionBlock, MemoryOperand,
    Register,
};

/// Length of the `jmp rel32` written over the site's instruction.
pub const JMP_LEN: usize = 5;
/// Bytes the shared words take.
pub const DATA_LEN: u64 = 32;

/// Where an image's counting words are: the count, the hit number to trap at, and two words
/// the stub saves `rax` and the flags in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data {
    pub at: u64,
}

impl Data {
    pub fn count(self) -> u64 {
        self.at
    }
    pub fn target(self) -> u64 {
        self.at + 8
    }
    fn save_rax(self) -> u64 {
        self.at + 16
    }
    fn save_flags(self) -> u64 {
        self.at + 24
    }
}

/// A counting site: the `jmp` that leads to its stub, what it replaced, where the stub's
/// `int3` leaves a thread, and the image's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub jmp: [u8; JMP_LEN],
    pub orig: [u8; JMP_LEN],
    pub trap: u64,
    pub data: Data,
    /// Memory holds the `jmp` (counting), else the breakpoint's `int3`.
    pub patched: bool,
}

/// Whether the instruction at the start of `code` can carry the `jmp` (at least 5 bytes: the
/// jump covers it alone, and no jump lands inside it).
pub fn fits(addr: u64, code: &[u8]) -> bool {
    let instr = Decoder::with_ip(64, code, addr, DecoderOptions::NONE).decode();
    !instr.is_invalid() && instr.len() >= JMP_LEN
}

/// The free tail of the last page of the last writable segment of the ELF file `exe` loaded at
/// `load_bias` (`[start, end)`, 8-byte aligned), when no other segment is mapped there.
pub fn data_room(exe: &std::path::Path, load_bias: u64) -> Option<(u64, u64)> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    use object::Endianness;
    let data = std::fs::read(exe).ok()?;
    let elf = ElfFile64::<Endianness>::parse(&*data).ok()?;
    let e = elf.endian();
    let loads: Vec<(u64, u64, bool)> = elf
        .elf_program_headers()
        .iter()
        .filter(|p| p.p_type(e) == object::elf::PT_LOAD)
        .map(|p| (p.p_vaddr(e), p.p_vaddr(e) + p.p_memsz(e), p.p_flags(e) & object::elf::PF_W != 0))
        .collect();
    let &(_, end, _) = loads.iter().filter(|l| l.2).max_by_key(|l| l.1)?;
    let page_end = (end + 4095) & !4095;
    let start = (end + 7) & !7;
    let clear = loads.iter().all(|&(s, e, _)| e <= end || s >= page_end);
    (clear && start + DATA_LEN <= page_end).then(|| (load_bias.wrapping_add(start), load_bias.wrapping_add(page_end)))
}

/// The stub for a site whose instruction's displaced copy is at `displaced`, to be written at
/// `slot`; with the address its `int3` leaves a thread at.
pub fn assemble(data: Data, displaced: u64, slot: u64) -> Option<(Vec<u8>, u64)> {
    const TRAP: u64 = 0x10;
    let at = |a: u64| MemoryOperand::with_base_displ(Register::RIP, a as i64);
    let restore = |block: &mut Vec<Instruction>, first_ip: Option<u64>| -> Option<()> {
        let mut first = Instruction::with2(Code::Mov_r16_rm16, Register::AX, at(data.save_flags())).ok()?;
        if let Some(ip) = first_ip {
            first.set_ip(ip);
        }
        block.push(first);
        block.push(Instruction::with2(Code::Add_rm8_imm8, Register::AL, 0x7f).ok()?);
        block.push(Instruction::with(Code::Sahf));
        block.push(Instruction::with2(Code::Mov_r64_rm64, Register::RAX, at(data.save_rax())).ok()?);
        Some(())
    };
    let mut block = vec![
        Instruction::with2(Code::Mov_rm64_r64, at(data.save_rax()), Register::RAX).ok()?,
        Instruction::with(Code::Lahf),
        Instruction::with1(Code::Seto_rm8, Register::AL).ok()?,
        Instruction::with2(Code::Mov_rm16_r16, at(data.save_flags()), Register::AX).ok()?,
        Instruction::with2(Code::Mov_r64_rm64, Register::RAX, at(data.count())).ok()?,
        Instruction::with2(Code::Add_rm64_imm8, Register::RAX, 1).ok()?,
        Instruction::with2(Code::Mov_rm64_r64, at(data.count()), Register::RAX).ok()?,
        Instruction::with2(Code::Cmp_r64_rm64, Register::RAX, at(data.target())).ok()?,
        Instruction::with_branch(Code::Je_rel32_64, TRAP).ok()?,
    ];
    restore(&mut block, None)?;
    block.push(Instruction::with_branch(Code::Jmp_rel32_64, displaced).ok()?);
    restore(&mut block, Some(TRAP))?;
    block.push(Instruction::with(Code::Int3));
    let trap_index = block.len() - 1;
    let options = BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS;
    let encoded = BlockEncoder::encode(64, InstructionBlock::new(&block, slot), options).ok()?;
    let trap = slot + encoded.new_instruction_offsets.get(trap_index).copied()? as u64 + 1;
    Some((encoded.code_buffer, trap))
}

/// The `jmp` at `addr` to a stub at `slot`.
pub fn jmp(addr: u64, slot: u64) -> Option<[u8; JMP_LEN]> {
    let rel = i32::try_from(slot.wrapping_sub(addr + JMP_LEN as u64) as i64).ok()?;
    let mut jmp = [0xe9, 0, 0, 0, 0];
    jmp[1..].copy_from_slice(&rel.to_le_bytes());
    Some(jmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::Mnemonic;

    #[test]
    fn the_stub_counts_compares_and_traps_or_jumps_to_the_displaced_copy() {
        let data = Data { at: 0x60_1000 };
        let (code, trap) = assemble(data, 0x40_8000, 0x40_8040).expect("assembles");
        let mut d = Decoder::with_ip(64, &code, 0x40_8040, DecoderOptions::NONE);
        let listing: Vec<Instruction> = std::iter::from_fn(|| d.can_decode().then(|| d.decode())).collect();
        let last = listing.last().unwrap();
        assert_eq!(last.code(), Code::Int3);
        assert_eq!(last.next_ip(), trap);
        let jmp = listing.iter().find(|i| i.mnemonic() == Mnemonic::Jmp).expect("a jump back");
        assert_eq!(jmp.near_branch64(), 0x40_8000);
        let je = listing.iter().find(|i| i.mnemonic() == Mnemonic::Je).expect("the target's test");
        // The trap path restores rax and the flags before its int3.
        let trap_path: Vec<Code> =
            listing.iter().skip_while(|i| i.ip() != je.near_branch64()).map(|i| i.code()).collect();
        assert_eq!(trap_path, [Code::Mov_r16_rm16, Code::Add_rm8_imm8, Code::Sahf, Code::Mov_r64_rm64, Code::Int3]);
        let cmp = listing.iter().find(|i| i.code() == Code::Cmp_r64_rm64).unwrap();
        assert_eq!(cmp.memory_displacement64(), data.target());
        let stores: Vec<u64> =
            listing.iter().filter(|i| i.code() == Code::Mov_rm64_r64).map(|i| i.memory_displacement64()).collect();
        assert_eq!(stores, [data.at + 16, data.count()]);
    }

    #[test]
    fn only_instructions_of_five_bytes_or_more_carry_the_jump() {
        assert!(!fits(0x1000, &[0x48, 0x89, 0xc3, 0x90, 0x90, 0x90])); // mov rbx, rax
        assert!(fits(0x1000, &[0x48, 0x05, 1, 0, 0, 0])); // add rax, 1 (imm32)
        assert!(fits(0x1000, &[0xe8, 0, 0, 0, 0])); // call rel32 (its copy is displace's)
        assert_eq!(jmp(0x1000, 0x2000), Some([0xe9, 0xfb, 0x0f, 0, 0]));
    }
}
