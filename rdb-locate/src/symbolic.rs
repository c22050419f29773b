//! Turning a location expression into a descriptor [`Location`].
//!
//! A descriptor says *where* a value lives in terms a replayer resolves at
//! run time (`rbp - 24`, `rdi`, `COUNTER + 0`), so the expression is
//! evaluated against a symbolic [`Machine`]: register `r` reads as
//! `origin + (r + 1) << 36`. Evaluating twice with two different origins
//! tells an address that depends on one register (it moves with the origin)
//! from an absolute one (it does not), and decodes which register and what
//! offset. Anything else (memory reads, several registers combined, scaled
//! registers) is reported as not expressible.

use crate::eval::{evaluate, EvalError, Frame, Machine};
use crate::loader::SymbolTable;
use crate::reader::R;
use gimli::{Reader, Register};
use rdb_descriptors::{FrameAddress, Location, Piece as DescriptorPiece, Register as DescriptorRegister};

const STRIDE_SHIFT: u32 = 36;
const ORIGINS: [u64; 2] = [1 << 56, 2 << 56];
/// A third origin that differs from the first in its low bits too: a value
/// that masks or scales a register (`rdi & 0xffffffff`, `rdi * 10`) would
/// look constant or decode wrongly from the first two runs alone; a third
/// run must agree with what they decoded.
const CHECK_ORIGIN: u64 = (3 << 56) + 0x9_5a5a_5a58;

/// Registers take slots 1..=64; the pointer read by the `k`-th memory read
/// (`DW_OP_deref`) takes slot `65 + k`.
const DEREF_SLOT: u64 = 65;
const MAX_DEREFS: usize = 64;
/// The value register `r` had on entry to the function
/// (`DW_OP_entry_value(DW_OP_regN)`) takes slot `ENTRY_SLOT + r`.
const ENTRY_SLOT: u64 = DEREF_SLOT + MAX_DEREFS as u64;
const END_SLOT: u64 = ENTRY_SLOT + 64;

/// The register whose entry value a decoded slot (`register + 1 >= ENTRY_SLOT`) stands for.
fn entry_slot_register(register: u16) -> u16 {
    (u64::from(register) + 1 - ENTRY_SLOT) as u16
}

/// The register a `DW_OP_entry_value` operand names: one `DW_OP_regN` or
/// `DW_OP_regx N` (what compilers emit), else `None`.
fn entry_register(expression: &gimli::Expression<R>) -> Option<u16> {
    let bytes = expression.0.to_slice().ok()?;
    match bytes.as_ref() {
        [op @ 0x50..=0x6f] => Some(u16::from(op - 0x50)),
        [0x90, rest @ ..] => {
            let mut value: u64 = 0;
            for (i, b) in rest.iter().enumerate() {
                value |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    return (i + 1 == rest.len() && value < 64).then_some(value as u16);
                }
            }
            None
        }
        _ => None,
    }
}

struct Symbolic {
    origin: u64,
    /// Addresses of the 8-byte pointers read so far, as this run computed them.
    reads: Vec<u64>,
}

impl Machine for Symbolic {
    fn register(&mut self, register: Register) -> Option<u64> {
        if register.0 >= 64 {
            return None;
        }
        Some(self.origin.wrapping_add((u64::from(register.0) + 1) << STRIDE_SHIFT))
    }
    fn memory(&mut self, address: u64, size: u8) -> Option<u64> {
        if size != 8 || self.reads.len() >= MAX_DEREFS {
            return None;
        }
        let slot = DEREF_SLOT + self.reads.len() as u64;
        self.reads.push(address);
        Some(self.origin.wrapping_add(slot << STRIDE_SHIFT))
    }
    fn entry_value(&mut self, expression: gimli::Expression<R>) -> Option<u64> {
        let register = entry_register(&expression)?;
        Some(self.origin.wrapping_add((ENTRY_SLOT + u64::from(register)) << STRIDE_SHIFT))
    }
}

/// The pointers the two symbolic runs read, by read order, and where the
/// function's entry values are kept.
struct Reads<'a>(&'a [u64], &'a [u64], Result<(u64, FrameAddress), String>);

impl Reads<'_> {
    /// The location of the value register `register` had on entry.
    fn entry_value(&self, register: u16) -> Result<Location, String> {
        let (entry, frame) = self.2.clone()?;
        Ok(Location::EntryValue {
            entry,
            value: Box::new(Location::Register { register: DescriptorRegister::x86_64(register) }),
            frame,
        })
    }

    /// The descriptor location of the memory at a decoded address.
    fn place(&self, symbol: Symbol, symbols: &dyn Symbolizer) -> Result<Location, String> {
        match symbol {
            Symbol::Absolute(address) => {
                let (symbol, offset) = symbols.symbolize(address);
                Ok(Location::Symbol { symbol, offset, address })
            }
            Symbol::Relative { register, offset } if u64::from(register) + 1 < DEREF_SLOT => {
                Ok(Location::Stack { base: DescriptorRegister::x86_64(register), offset })
            }
            Symbol::Relative { register, offset } if u64::from(register) + 1 >= ENTRY_SLOT => {
                Ok(Location::Indirect { pointer: Box::new(self.entry_value(entry_slot_register(register))?), offset })
            }
            Symbol::Relative { register, offset } => {
                let k = (u64::from(register) + 1 - DEREF_SLOT) as usize;
                let (a, b) = (self.0.get(k), self.1.get(k));
                let (Some(&a), Some(&b)) = (a, b) else {
                    return Err("its location reads memory inconsistently".into());
                };
                let at =
                    decode(a, b).ok_or("its location reads a pointer at an address a descriptor cannot express")?;
                Ok(Location::Indirect { pointer: Box::new(self.place(at, symbols)?), offset })
            }
        }
    }
}

/// An address or value as the symbolic evaluation found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Symbol {
    Absolute(u64),
    Relative { register: u16, offset: i64 },
}

fn decode(first: u64, second: u64) -> Option<Symbol> {
    if first == second {
        return Some(Symbol::Absolute(first));
    }
    if second.wrapping_sub(first) != ORIGINS[1].wrapping_sub(ORIGINS[0]) {
        return None;
    }
    let relative = first.wrapping_sub(ORIGINS[0]) as i64;
    let half = 1i64 << (STRIDE_SHIFT - 1);
    let slot = relative.checked_add(half)? >> STRIDE_SHIFT;
    if !(1..END_SLOT as i64).contains(&slot) {
        return None;
    }
    let offset = relative - (slot << STRIDE_SHIFT);
    Some(Symbol::Relative { register: (slot - 1) as u16, offset })
}

/// Whether the check run's results are those the first two runs predict.
fn agrees(first: &[gimli::Piece<R>], second: &[gimli::Piece<R>], check: &[gimli::Piece<R>]) -> bool {
    use gimli::Location as G;
    let predicted = |a: u64, b: u64, c: u64| match decode(a, b) {
        Some(Symbol::Absolute(v)) => c == v,
        Some(Symbol::Relative { .. }) => c.wrapping_sub(a) == CHECK_ORIGIN.wrapping_sub(ORIGINS[0]),
        None => true,
    };
    if first.len() != check.len() || second.len() != check.len() {
        return false;
    }
    first.iter().zip(second).zip(check).all(|((a, b), c)| match (&a.location, &b.location, &c.location) {
        (G::Address { address: a }, G::Address { address: b }, G::Address { address: c }) => predicted(*a, *b, *c),
        (G::Value { value: a }, G::Value { value: b }, G::Value { value: c }) => {
            match (a.to_u64(!0), b.to_u64(!0), c.to_u64(!0)) {
                (Ok(a), Ok(b), Ok(c)) => predicted(a, b, c),
                _ => false,
            }
        }
        _ => true,
    })
}

/// What the caller must supply to finish a location: static addresses become
/// `symbol + offset` through the ELF symbol table.
pub trait Symbolizer {
    /// The symbol covering module-relative `address`, with the offset into it.
    fn symbolize(&self, address: u64) -> (String, i64);
}

impl Symbolizer for SymbolTable {
    fn symbolize(&self, address: u64) -> (String, i64) {
        self.lookup(address)
    }
}

/// The descriptor location of a variable whose location expression is
/// `expression`, or why it cannot be expressed. `size` is the variable's
/// size, used to cut constant values.
pub fn describe(
    expression: gimli::Expression<R>,
    frame: &Frame<'_>,
    size: u64,
    symbols: &dyn Symbolizer,
) -> Result<Location, String> {
    let mut runs = Vec::with_capacity(2);
    let mut reads = Vec::with_capacity(2);
    for origin in ORIGINS {
        let mut machine = Symbolic { origin, reads: Vec::new() };
        let pieces = evaluate(expression.clone(), frame, &mut machine).map_err(|e| match e {
            EvalError::Unavailable(what) => format!("its location needs {what}, which a descriptor cannot express"),
            other => other.to_string(),
        })?;
        runs.push(pieces);
        reads.push(machine.reads);
    }
    let mut check_machine = Symbolic { origin: CHECK_ORIGIN, reads: Vec::new() };
    let check = evaluate(expression.clone(), frame, &mut check_machine).map_err(|e| e.to_string())?;
    if !agrees(&runs[0], &runs[1], &check) {
        if let Some(unmasked) = without_value_masks(&expression, frame.encoding, size) {
            return describe(unmasked, frame, size, symbols);
        }
        return Err("its value is computed from registers in a way a descriptor cannot express".into());
    }
    let entry = match (frame.entry, frame.cfa) {
        (Some(entry), Some(cfa)) => {
            Ok((entry, FrameAddress { register: DescriptorRegister::x86_64(cfa.register.0), offset: cfa.offset }))
        }
        (None, _) => Err("its value is the one a register had on entry to the function (DW_OP_entry_value), and \
                          the function's entry is not known"
            .to_string()),
        (_, None) => Err("its value is the one a register had on entry to the function (DW_OP_entry_value), and \
                          the unwind tables give no frame address here to tell calls apart"
            .to_string()),
    };
    let reads = Reads(&reads[0], &reads[1], entry);
    let (first, second) = (&runs[0], &runs[1]);
    if first.len() != second.len() || first.is_empty() {
        return Err("its location expression does not evaluate consistently".into());
    }
    if first.len() == 1 && first[0].size_in_bits.is_none() {
        return piece_location(&first[0], &second[0], size, symbols, &reads);
    }
    let mut pieces = Vec::new();
    for (a, b) in first.iter().zip(second) {
        let bits = a.size_in_bits.ok_or("a piece of a split value has no size")?;
        if bits % 8 != 0 || a.bit_offset.is_some() {
            return Err("it is split into bit pieces, which a descriptor cannot express".into());
        }
        let piece_size = bits / 8;
        pieces.push(DescriptorPiece { size: piece_size, location: piece_location(a, b, piece_size, symbols, &reads)? });
    }
    Ok(Location::Pieces { pieces })
}

/// `expression` without its masks of a value to its low bytes (`DW_OP_constu 0xffffffff,
/// DW_OP_and`, clang's widening of an `int`: `depth` as `(rbp & 0xffffffff) - 1`), when the
/// variable is no wider than the mask and the value is a stack value computed only with
/// operations whose low bytes depend only on their operands' low bytes (additions,
/// subtractions, multiplications): the variable's `size` low bytes are then the same without
/// the mask. `None` when there is no such mask or another operation follows.
fn without_value_masks(
    expression: &gimli::Expression<R>,
    encoding: gimli::Encoding,
    size: u64,
) -> Option<gimli::Expression<R>> {
    use gimli::Operation as Op;
    let bytes = expression.0.to_slice().ok()?;
    let mut reader = expression.0.clone();
    let mut ops: Vec<(usize, usize, Op<R>)> = Vec::new();
    while !reader.is_empty() {
        let start = bytes.len() - reader.len();
        let op = Op::parse(&mut reader, encoding).ok()?;
        ops.push((start, bytes.len() - reader.len(), op));
    }
    let covers =
        |mask: u64| mask.checked_add(1).is_some_and(u64::is_power_of_two) && mask.count_ones() as u64 >= 8 * size;
    let mut cut: Vec<(usize, usize)> = Vec::new();
    let mut stack_value = false;
    let mut k = 0;
    while k < ops.len() {
        match (&ops[k].2, ops.get(k + 1).map(|o| &o.2)) {
            (Op::UnsignedConstant { value }, Some(Op::And)) if covers(*value) => {
                cut.push((ops[k].0, ops[k + 1].1));
                k += 2;
                continue;
            }
            (Op::RegisterOffset { .. } | Op::UnsignedConstant { .. } | Op::SignedConstant { .. }, _)
            | (Op::Plus | Op::PlusConstant { .. } | Op::Minus | Op::Mul | Op::Neg, _) => {}
            (Op::StackValue, None) => stack_value = true,
            _ => return None,
        }
        k += 1;
    }
    if cut.is_empty() || !stack_value {
        return None;
    }
    let mut kept = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (from, to) in cut {
        kept.extend_from_slice(&bytes[at..from]);
        at = to;
    }
    kept.extend_from_slice(&bytes[at..]);
    Some(gimli::Expression(R::new(std::rc::Rc::from(kept), expression.0.endian())))
}

fn piece_location(
    first: &gimli::Piece<R>,
    second: &gimli::Piece<R>,
    size: u64,
    symbols: &dyn Symbolizer,
    reads: &Reads<'_>,
) -> Result<Location, String> {
    use gimli::Location as G;
    match (&first.location, &second.location) {
        (G::Empty, _) => Ok(Location::OptimizedOut),
        (G::Register { register }, _) => Ok(Location::Register { register: DescriptorRegister::x86_64(register.0) }),
        (G::Address { address: a }, G::Address { address: b }) => match decode(*a, *b) {
            Some(at) => reads.place(at, symbols),
            None => Err("its address is computed in a way a descriptor cannot express".into()),
        },
        (G::Value { value: a }, G::Value { value: b }) => {
            let a = a.to_u64(!0).map_err(|e| e.to_string())?;
            let b = b.to_u64(!0).map_err(|e| e.to_string())?;
            match decode(a, b) {
                Some(Symbol::Absolute(value)) => Ok(Location::Implicit { bytes: hex(&value.to_le_bytes(), size) }),
                Some(Symbol::Relative { register, offset: 0 }) if u64::from(register) + 1 < DEREF_SLOT => {
                    Ok(Location::Register { register: DescriptorRegister::x86_64(register) })
                }
                Some(Symbol::Relative { register, offset: 0 }) if u64::from(register) + 1 >= ENTRY_SLOT => {
                    reads.entry_value(entry_slot_register(register))
                }
                Some(Symbol::Relative { register, offset: 0 }) => {
                    // The value is a pointer read from memory: the variable is
                    // those 8 bytes.
                    let k = (u64::from(register) + 1 - DEREF_SLOT) as usize;
                    match (reads.0.get(k), reads.1.get(k)) {
                        (Some(&a), Some(&b)) if size <= 8 => match decode(a, b) {
                            Some(at) => reads.place(at, symbols),
                            None => Err("its value is read at an address a descriptor cannot express".into()),
                        },
                        _ => Err("its value is computed in a way a descriptor cannot express".into()),
                    }
                }
                Some(Symbol::Relative { register, offset }) if u64::from(register) + 1 >= ENTRY_SLOT => Err(format!(
                    "its value is computed from an entry value ({} on entry {:+}), which a descriptor cannot express",
                    DescriptorRegister::x86_64(entry_slot_register(register)).name,
                    offset
                )),
                Some(Symbol::Relative { register, offset }) if u64::from(register) + 1 < DEREF_SLOT && size <= 8 => {
                    Ok(Location::Computed { register: DescriptorRegister::x86_64(register), offset })
                }
                Some(Symbol::Relative { register, offset }) => Err(format!(
                    "its value is computed ({} {:+}), which a descriptor cannot express",
                    DescriptorRegister::x86_64(register).name,
                    offset
                )),
                None => Err("its value is computed in a way a descriptor cannot express".into()),
            }
        }
        (G::Bytes { value }, _) => {
            let bytes = value.to_slice().map_err(|e| e.to_string())?;
            Ok(Location::Implicit { bytes: hex(&bytes, size) })
        }
        (G::ImplicitPointer { .. }, _) => {
            Err("it is an implicit pointer (DW_OP_implicit_pointer), which a descriptor cannot express".into())
        }
        _ => Err("its location expression does not evaluate consistently".into()),
    }
}

/// Lowercase hex of the first `size` bytes (all of them if `size` is 0 or larger).
pub fn hex(bytes: &[u8], size: u64) -> String {
    let n = if size == 0 { bytes.len() } else { bytes.len().min(size as usize) };
    bytes[..n].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_register_plus_offset() {
        let reg = |r: u64, off: i64, origin: u64| origin.wrapping_add((r + 1) << STRIDE_SHIFT).wrapping_add(off as u64);
        for (r, off) in [(6u64, -24i64), (7, 144), (0, 0), (15, -(1 << 20))] {
            assert_eq!(
                decode(reg(r, off, ORIGINS[0]), reg(r, off, ORIGINS[1])),
                Some(Symbol::Relative { register: r as u16, offset: off })
            );
        }
        assert_eq!(decode(0x5a318, 0x5a318), Some(Symbol::Absolute(0x5a318)));
        // Twice the register (scaled): not affine with coefficient one.
        assert_eq!(decode(reg(6, 0, ORIGINS[0]) * 2, reg(6, 0, ORIGINS[1]) * 2), None);
    }

    use crate::eval::tests::{encoding, expr};
    use crate::eval::CfaRule;
    use rdb_descriptors::Register as Reg;

    struct Names;
    impl Symbolizer for Names {
        fn symbolize(&self, address: u64) -> (String, i64) {
            ("COUNTER".into(), address as i64 - 0x4000)
        }
    }

    fn describe_bytes(bytes: &[u8], frame_base: &[u8], size: u64) -> Result<Location, String> {
        let frame = Frame {
            encoding: encoding(),
            unit: None,
            frame_base: Some(expr(frame_base)),
            cfa: Some(CfaRule { register: Register(6), offset: 16 }),
            entry: Some(0x1000),
        };
        describe(expr(bytes), &frame, size, &Names)
    }

    #[test]
    fn descriptor_locations() {
        let stack = |r: u16, offset: i64| Location::Stack { base: Reg::x86_64(r), offset };
        // fbreg over a register frame base, over the CFA; breg.
        assert_eq!(describe_bytes(&[0x91, 0x68], &[0x57], 8), Ok(stack(7, -24)));
        assert_eq!(describe_bytes(&[0x91, 0x6c], &[0x9c], 8), Ok(stack(6, -4)));
        assert_eq!(describe_bytes(&[0x76, 0x10], &[0x57], 8), Ok(stack(6, 16)));
        // A register; a register's value (breg 0, stack_value).
        assert_eq!(describe_bytes(&[0x55], &[0x57], 8), Ok(Location::Register { register: Reg::x86_64(5) }));
        assert_eq!(
            describe_bytes(&[0x73, 0x00, 0x9f], &[0x57], 8),
            Ok(Location::Register { register: Reg::x86_64(3) })
        );
        // DW_OP_addr 0x4010: symbol + offset.
        let addr = [0x03, 0x10, 0x40, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            describe_bytes(&addr, &[0x57], 8),
            Ok(Location::Symbol { symbol: "COUNTER".into(), offset: 0x10, address: 0x4010 })
        );
        // Constants: lit5 stack_value, implicit_value.
        assert_eq!(describe_bytes(&[0x35, 0x9f], &[0x57], 4), Ok(Location::Implicit { bytes: "05000000".into() }));
        assert_eq!(
            describe_bytes(&[0x9e, 0x02, 0x34, 0x12], &[0x57], 2),
            Ok(Location::Implicit { bytes: "3412".into() })
        );
        // Pieces: rax (8 bytes) then rbp - 8 (8 bytes); an empty piece.
        assert_eq!(
            describe_bytes(&[0x50, 0x93, 0x08, 0x76, 0x78, 0x93, 0x08, 0x93, 0x04], &[0x57], 20),
            Ok(Location::Pieces {
                pieces: vec![
                    DescriptorPiece { size: 8, location: Location::Register { register: Reg::x86_64(0) } },
                    DescriptorPiece { size: 8, location: stack(6, -8) },
                    DescriptorPiece { size: 4, location: Location::OptimizedOut },
                ]
            })
        );
    }

    #[test]
    fn pointers_read_from_memory_are_indirect() {
        let stack = |r: u16, offset: i64| Location::Stack { base: Reg::x86_64(r), offset };
        // breg6 8; deref: the value is at the pointer stored at rbp + 8.
        assert_eq!(
            describe_bytes(&[0x76, 0x08, 0x06], &[0x57], 8),
            Ok(Location::Indirect { pointer: Box::new(stack(6, 8)), offset: 0 })
        );
        // A by-reference capture of a closure: fbreg 32; deref; plus_uconst 8; deref.
        assert_eq!(
            describe_bytes(&[0x91, 0x20, 0x06, 0x23, 0x08, 0x06], &[0x57], 24),
            Ok(Location::Indirect {
                pointer: Box::new(Location::Indirect { pointer: Box::new(stack(7, 32)), offset: 8 }),
                offset: 0
            })
        );
        // A 4-byte read cannot be a pointer.
        assert!(describe_bytes(&[0x76, 0x08, 0x94, 0x04], &[0x57], 8).is_err());
    }

    #[test]
    fn a_masked_or_scaled_register_is_not_a_constant() {
        // breg5 0; constu 0xffffffff; and; lit10; mul; stack_value (rustc, `let base = w * 10`).
        let e = describe_bytes(&[0x75, 0x00, 0x10, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x1a, 0x3a, 0x1e, 0x9f], &[0x57], 4);
        assert!(e.unwrap_err().contains("cannot express"));
    }

    #[test]
    fn an_int_masked_from_a_register_then_offset_is_computed() {
        // breg6 0; constu 0xffffffff; and; lit1; minus; stack_value (clang -O2, an `int`
        // parameter of a recursion turned into a loop: `depth` as `(rbp & 0xffffffff) - 1`).
        let masked = [0x76, 0x00, 0x10, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x1a, 0x31, 0x1c, 0x9f];
        assert_eq!(
            describe_bytes(&masked, &[0x57], 4),
            Ok(Location::Computed { register: Reg::x86_64(6), offset: -1 })
        );
        // The mask cuts bits an 8-byte variable has: no.
        assert!(describe_bytes(&masked, &[0x57], 8).unwrap_err().contains("cannot express"));
    }

    #[test]
    fn a_register_plus_a_constant_is_computed() {
        // rbx + 8 as a value.
        assert_eq!(
            describe_bytes(&[0x73, 0x08, 0x9f], &[0x57], 8),
            Ok(Location::Computed { register: Reg::x86_64(3), offset: 8 })
        );
        // Too large for a register's sum.
        assert!(describe_bytes(&[0x73, 0x08, 0x9f], &[0x57], 16).unwrap_err().contains("rbx +8"));
    }

    #[test]
    fn what_a_descriptor_cannot_express() {
        // twice rbx, rbx + rsi.
        assert!(describe_bytes(&[0x73, 0x00, 0x32, 0x1e, 0x9f], &[0x57], 8).is_err());
        assert!(describe_bytes(&[0x73, 0x00, 0x74, 0x00, 0x22], &[0x57], 8).is_err());
        // DW_OP_entry_value(DW_OP_reg5) plus 1, stack_value.
        assert!(describe_bytes(&[0xa3, 0x01, 0x55, 0x23, 0x01, 0x9f], &[0x57], 8).unwrap_err().contains("entry"));
    }

    #[test]
    fn entry_values() {
        let entry = |r: u16| Location::EntryValue {
            entry: 0x1000,
            value: Box::new(Location::Register { register: Reg::x86_64(r) }),
            frame: FrameAddress { register: Reg::x86_64(6), offset: 16 },
        };
        // DW_OP_entry_value(DW_OP_reg5), stack_value: rdi on entry (clang -O2).
        assert_eq!(describe_bytes(&[0xa3, 0x01, 0x55, 0x9f], &[0x57], 8), Ok(entry(5)));
        // The same with DW_OP_regx 4.
        assert_eq!(describe_bytes(&[0xa3, 0x02, 0x90, 0x04, 0x9f], &[0x57], 8), Ok(entry(4)));
        // Memory at rsi on entry + 8 (a parameter passed by reference whose pointer was clobbered).
        assert_eq!(
            describe_bytes(&[0xa3, 0x01, 0x54, 0x23, 0x08], &[0x57], 16),
            Ok(Location::Indirect { pointer: Box::new(entry(4)), offset: 8 })
        );
        // A fat pointer: both halves entry values.
        assert_eq!(
            describe_bytes(&[0xa3, 0x01, 0x54, 0x9f, 0x93, 0x08, 0xa3, 0x01, 0x51, 0x9f, 0x93, 0x08], &[0x57], 16),
            Ok(Location::Pieces {
                pieces: vec![
                    DescriptorPiece { size: 8, location: entry(4) },
                    DescriptorPiece { size: 8, location: entry(1) }
                ]
            })
        );
        // An operand that is not a register is not expressible.
        assert!(describe_bytes(&[0xa3, 0x02, 0x75, 0x00, 0x9f], &[0x57], 8).is_err());
    }

    #[test]
    fn hex_cuts_to_size() {
        assert_eq!(hex(&0x1234u64.to_le_bytes(), 2), "3412");
        assert_eq!(hex(&[1, 2], 0), "0102");
    }
}
