//! Whether a static's memory holds its current value at a code address.
//!
//! Optimized code may keep a static in a register for a while and store it
//! later: LLVM promotes a global a loop updates to a register for the whole
//! loop and stores it once after it (clang -O2 on `total += i * i;` in a
//! loop), and a store may be scheduled after the place a region runs. The
//! DWARF describes a static only by its address, so a region reading memory
//! there would see an older value. The machine code tells: if a path from
//! the region's address reaches a store to the static without reading it
//! first, the value it stores may have been computed earlier and be held in
//! a register now. Such a path is reported (conservatively: a plain `x = 5;`
//! after the region looks the same), and the region is not given a value
//! that may be stale.

use crate::loader::Binary;
use iced_x86::{Decoder, DecoderOptions, FlowControl, InstructionInfoFactory, OpAccess};
use std::collections::{HashMap, VecDeque};

/// The address of a store to `[global, global + size)` that the code of the
/// function holding `at` reaches from `at` without reading that memory on
/// the way; `None` when every path from `at` reads it before storing it, or
/// none stores it. Calls are stepped over (they see memory, so the program
/// stores what they may read before calling them); indirect jumps end a path.
pub fn pending_store(binary: &Binary, at: u64, global: u64, size: u64) -> Option<u64> {
    let (_, start, len) = binary.symbols.functions().find(|&(_, start, len)| start <= at && at < start + len)?;
    let bytes = binary.code(start, start + len)?;
    let instructions: Vec<_> = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE).into_iter().collect();
    let by_ip: HashMap<u64, usize> = instructions.iter().enumerate().map(|(k, i)| (i.ip(), k)).collect();
    let first = *by_ip.get(&at)?;
    let end = global + size.max(1);
    let mut info = InstructionInfoFactory::new();
    let mut seen = vec![false; instructions.len()];
    let mut queue = VecDeque::from([first]);
    while let Some(k) = queue.pop_front() {
        if std::mem::replace(&mut seen[k], true) {
            continue;
        }
        let instruction = &instructions[k];
        let mut reads = false;
        let mut writes = false;
        for m in info.info(instruction).used_memory() {
            // RIP-relative (the displacement is then the absolute address) or absolute.
            let fixed = m.base() == iced_x86::Register::RIP
                || (m.base() == iced_x86::Register::None && m.index() == iced_x86::Register::None);
            if !fixed {
                continue;
            }
            let address = m.displacement();
            if address + u64::from(m.memory_size().size() as u32) <= global || address >= end {
                continue;
            }
            match m.access() {
                OpAccess::Write | OpAccess::CondWrite => writes = true,
                OpAccess::NoMemAccess => {}
                _ => reads = true,
            }
        }
        if reads {
            continue; // this path reads memory first: what it holds is current here
        }
        if writes {
            return Some(instruction.ip());
        }
        let mut next = |ip: u64| {
            if let Some(&n) = by_ip.get(&ip) {
                queue.push_back(n);
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
