//! Evaluating DWARF location expressions against a machine state.
//!
//! The evaluator does no I/O: it drives gimli's [`gimli::Evaluation`] and
//! answers its questions (a register, a word of memory, the frame base, the
//! CFA) through the small [`Machine`] trait. A live tracee, a saved snapshot,
//! or the symbolic machine of `symbolic` (which turns an expression
//! into a descriptor [`Location`](rdb_descriptors::Location)) all plug in here.

use crate::reader::R;
use gimli::{EvaluationResult, Expression, Piece, Register, Value};

/// The state of the machine at the program counter of interest.
pub trait Machine {
    /// The value of a register (DWARF numbering), or `None` if unknown.
    fn register(&mut self, register: Register) -> Option<u64>;
    /// `size` bytes of memory at `address` as a little-endian integer, or
    /// `None` if unknown.
    fn memory(&mut self, address: u64, size: u8) -> Option<u64>;
    /// The value of `DW_OP_entry_value(expression)`: what the expression
    /// (a register) gave on entry to the function, or `None` if unknown.
    fn entry_value(&mut self, _expression: Expression<R>) -> Option<u64> {
        None
    }
}

/// How to compute the canonical frame address at the pc of interest: the
/// value of `register` plus `offset` (the only CFA rule compilers emit for
/// x86-64 code outside signal trampolines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfaRule {
    pub register: Register,
    pub offset: i64,
}

/// Everything static an expression may refer to besides the machine.
pub struct Frame<'a> {
    /// Address size, DWARF version and format of the expression's unit.
    pub encoding: gimli::Encoding,
    /// The unit, for `.debug_addr` indices and base types (`None` when the
    /// expression uses neither).
    pub unit: Option<(&'a gimli::Dwarf<R>, &'a gimli::Unit<R>)>,
    /// `DW_AT_frame_base` of the enclosing concrete subprogram.
    pub frame_base: Option<Expression<R>>,
    /// The CFA rule at the pc, from the unwind tables.
    pub cfa: Option<CfaRule>,
    /// The first instruction of the concrete function holding the pc
    /// (where `DW_OP_entry_value` reads its registers), when known.
    pub entry: Option<u64>,
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The expression needs something the machine or the frame cannot give
    /// (memory, an entry value, TLS, ...). The text names it.
    Unavailable(String),
    /// The expression is malformed.
    Malformed(String),
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Unavailable(what) => write!(f, "needs {what}"),
            EvalError::Malformed(what) => write!(f, "malformed location expression: {what}"),
        }
    }
}

fn malformed(e: gimli::Error) -> EvalError {
    EvalError::Malformed(e.to_string())
}

/// Upper bound on evaluation steps: a looping expression is an error, not a hang.
const MAX_STEPS: usize = 256;

/// Evaluates `expression` at the machine state `machine` describes.
pub fn evaluate<M: Machine>(
    expression: Expression<R>,
    frame: &Frame<'_>,
    machine: &mut M,
) -> Result<Vec<Piece<R>>, EvalError> {
    evaluate_inner(expression, frame, machine, true)
}

fn evaluate_inner<M: Machine>(
    expression: Expression<R>,
    frame: &Frame<'_>,
    machine: &mut M,
    allow_frame_base: bool,
) -> Result<Vec<Piece<R>>, EvalError> {
    let mut evaluation = expression.evaluation(frame.encoding);
    let mut result = evaluation.evaluate().map_err(malformed)?;
    for _ in 0..MAX_STEPS {
        result = match result {
            EvaluationResult::Complete => return Ok(evaluation.result()),
            EvaluationResult::RequiresRegister { register, .. } => {
                let value = machine
                    .register(register)
                    .ok_or_else(|| EvalError::Unavailable(format!("register {}", register.0)))?;
                evaluation.resume_with_register(Value::Generic(value)).map_err(malformed)?
            }
            EvaluationResult::RequiresMemory { address, size, .. } => {
                let value = machine
                    .memory(address, size)
                    .ok_or_else(|| EvalError::Unavailable(format!("{size} bytes of memory at {address:#x}")))?;
                evaluation.resume_with_memory(Value::Generic(value)).map_err(malformed)?
            }
            EvaluationResult::RequiresFrameBase => {
                let base = match (&frame.frame_base, allow_frame_base) {
                    (Some(expr), true) => frame_base(expr.clone(), frame, machine)?,
                    _ => return Err(EvalError::Unavailable("a frame base (DW_AT_frame_base missing)".into())),
                };
                evaluation.resume_with_frame_base(base).map_err(malformed)?
            }
            EvaluationResult::RequiresCallFrameCfa => {
                let rule = frame
                    .cfa
                    .ok_or_else(|| EvalError::Unavailable("the CFA (no unwind information for this pc)".into()))?;
                let base = machine
                    .register(rule.register)
                    .ok_or_else(|| EvalError::Unavailable(format!("register {}", rule.register.0)))?;
                evaluation.resume_with_call_frame_cfa(base.wrapping_add(rule.offset as u64)).map_err(malformed)?
            }
            EvaluationResult::RequiresRelocatedAddress(address) => {
                // Module-relative addresses are what we want: no relocation.
                evaluation.resume_with_relocated_address(address).map_err(malformed)?
            }
            EvaluationResult::RequiresIndexedAddress { index, .. } => {
                let (dwarf, unit) =
                    frame.unit.ok_or_else(|| EvalError::Unavailable("the unit's .debug_addr".into()))?;
                let address = dwarf.address(unit, index).map_err(malformed)?;
                evaluation.resume_with_indexed_address(address).map_err(malformed)?
            }
            EvaluationResult::RequiresBaseType(offset) => {
                let (_, unit) = frame.unit.ok_or_else(|| EvalError::Unavailable("the unit's base types".into()))?;
                let value_type = base_type(unit, offset)?;
                evaluation.resume_with_base_type(value_type).map_err(malformed)?
            }
            EvaluationResult::RequiresTls(_) => {
                return Err(EvalError::Unavailable("thread-local storage".into()));
            }
            EvaluationResult::RequiresEntryValue(expression) => {
                let value = machine.entry_value(expression).ok_or_else(|| {
                    EvalError::Unavailable(
                        "the value a register had on entry to the function (DW_OP_entry_value)".into(),
                    )
                })?;
                evaluation.resume_with_entry_value(Value::Generic(value)).map_err(malformed)?
            }
            EvaluationResult::RequiresParameterRef(_) => {
                return Err(EvalError::Unavailable("a caller's parameter (DW_OP_GNU_parameter_ref)".into()));
            }
            EvaluationResult::RequiresAtLocation(_) => {
                return Err(EvalError::Unavailable("another DIE's location (DW_OP_call*)".into()));
            }
        };
    }
    Err(EvalError::Malformed(format!("more than {MAX_STEPS} evaluation steps")))
}

/// The frame base is the *value* the frame-base expression designates: the
/// register's contents for `DW_OP_reg*`, the computed address otherwise.
fn frame_base<M: Machine>(expression: Expression<R>, frame: &Frame<'_>, machine: &mut M) -> Result<u64, EvalError> {
    let pieces = evaluate_inner(expression, frame, machine, false)?;
    match pieces.as_slice() {
        [piece] => match piece.location {
            gimli::Location::Register { register } => {
                machine.register(register).ok_or_else(|| EvalError::Unavailable(format!("register {}", register.0)))
            }
            gimli::Location::Address { address } => Ok(address),
            gimli::Location::Value { value } => value.to_u64(!0).map_err(malformed),
            _ => Err(EvalError::Unavailable("a frame base of an unsupported kind".into())),
        },
        _ => Err(EvalError::Malformed("frame base made of several pieces".into())),
    }
}

fn base_type(unit: &gimli::Unit<R>, offset: gimli::UnitOffset) -> Result<gimli::ValueType, EvalError> {
    let entry = unit.entry(offset).map_err(malformed)?;
    let encoding = match entry.attr_value(gimli::DW_AT_encoding).map_err(malformed)? {
        Some(gimli::AttributeValue::Encoding(e)) => e,
        _ => return Err(EvalError::Malformed("base type without DW_AT_encoding".into())),
    };
    let size = entry.attr_value(gimli::DW_AT_byte_size).map_err(malformed)?.and_then(|v| v.udata_value()).unwrap_or(0);
    gimli::ValueType::from_encoding(encoding, size)
        .ok_or_else(|| EvalError::Unavailable(format!("a base type of encoding {encoding} and size {size}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    pub fn expr(bytes: &[u8]) -> Expression<R> {
        Expression(gimli::EndianRcSlice::new(std::rc::Rc::from(bytes), gimli::RunTimeEndian::Little))
    }

    pub fn encoding() -> gimli::Encoding {
        gimli::Encoding { format: gimli::Format::Dwarf32, version: 5, address_size: 8 }
    }

    /// A saved machine state: some registers and some memory words.
    pub struct Snapshot {
        pub registers: HashMap<u16, u64>,
        pub memory: HashMap<u64, u64>,
    }

    impl Machine for Snapshot {
        fn register(&mut self, register: Register) -> Option<u64> {
            self.registers.get(&register.0).copied()
        }
        fn memory(&mut self, address: u64, _size: u8) -> Option<u64> {
            self.memory.get(&address).copied()
        }
    }

    fn address_of(pieces: &[Piece<R>]) -> Option<u64> {
        match pieces {
            [Piece { location: gimli::Location::Address { address }, .. }] => Some(*address),
            _ => None,
        }
    }

    #[test]
    fn fbreg_over_the_cfa() {
        // DW_OP_fbreg -20 with frame base DW_OP_call_frame_cfa, CFA = rbp + 16.
        let frame = Frame {
            encoding: encoding(),
            unit: None,
            frame_base: Some(expr(&[0x9c])),
            cfa: Some(CfaRule { register: Register(6), offset: 16 }),
            entry: None,
        };
        let mut machine = Snapshot { registers: HashMap::from([(6, 0x7ffe_1000)]), memory: HashMap::new() };
        let pieces = evaluate(expr(&[0x91, 0x6c]), &frame, &mut machine).unwrap();
        assert_eq!(address_of(&pieces), Some(0x7ffe_1000 + 16 - 20));
    }

    #[test]
    fn frame_base_in_a_register_and_memory_reads() {
        // Frame base DW_OP_reg7 (rsp): fbreg 8 is rsp + 8.
        let frame = Frame { encoding: encoding(), unit: None, frame_base: Some(expr(&[0x57])), cfa: None, entry: None };
        let mut machine =
            Snapshot { registers: HashMap::from([(7, 0x1000)]), memory: HashMap::from([(0x1008, 0xabcd)]) };
        assert_eq!(address_of(&evaluate(expr(&[0x91, 0x08]), &frame, &mut machine).unwrap()), Some(0x1008));
        // DW_OP_breg7 8; DW_OP_deref: the word at rsp + 8.
        assert_eq!(address_of(&evaluate(expr(&[0x77, 0x08, 0x06]), &frame, &mut machine).unwrap()), Some(0xabcd));
        // An unknown register is reported, not guessed.
        let err = evaluate(expr(&[0x73, 0x00]), &frame, &mut machine).unwrap_err();
        assert_eq!(err, EvalError::Unavailable("register 3".into()));
    }

    #[test]
    fn malformed_expressions_are_errors() {
        let frame = Frame { encoding: encoding(), unit: None, frame_base: None, cfa: None, entry: None };
        let mut machine = Snapshot { registers: HashMap::new(), memory: HashMap::new() };
        // Truncated DW_OP_addr, unknown opcode, fbreg without a frame base.
        for bytes in [&[0x03, 0x01][..], &[0xe5], &[0x91, 0x08]] {
            assert!(evaluate(expr(bytes), &frame, &mut machine).is_err(), "{bytes:x?}");
        }
    }
}
