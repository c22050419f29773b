//! The stack machine.

use std::sync::atomic::{AtomicU64, Ordering};

/// Instructions executed by every VM of the process.
static STEPS: AtomicU64 = AtomicU64::new(0);

pub fn steps() -> u64 {
    STEPS.load(Ordering::Relaxed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inst {
    Push(i64),
    Load(usize),
    Store(usize),
    Neg,
    Binary(&'static str),
    Print,
    Jump(usize),
    /// Pops the condition; jumps when it is 0.
    BranchIfFalse(usize),
    Halt,
}

pub struct Vm {
    pub name: String,
    code: Vec<Inst>,
    stack: Vec<i64>,
    vars: Vec<i64>,
    names: Vec<String>,
}

impl Vm {
    pub fn new(name: String, code: Vec<Inst>, names: Vec<String>) -> Vm {
        Vm { name, code, stack: Vec::new(), vars: vec![0; names.len()], names, }
    }

    fn pop(&mut self, pc: usize) -> Result<i64, String> {
        self.stack.pop().ok_or_else(|| format!("stack underflow at pc {pc} ({:?})", self.code[pc]))
    }

    pub fn run(&mut self) -> Result<(), String> {
        let mut pc = 0;
        loop {
            let inst = self.code[pc];
            STEPS.fetch_add(1, Ordering::Relaxed);
            pc += 1;
            match inst {
                Inst::Push(n) => self.stack.push(n),
                Inst::Load(slot) => self.stack.push(self.vars[slot]),
                Inst::Store(slot) => self.vars[slot] = self.pop(pc - 1)?,
                Inst::Neg => {
                    let v = self.pop(pc - 1)?;
                    self.stack.push(-v);
                }
                Inst::Binary(op) => {
                    let b = self.pop(pc - 1)?;
                    let a = self.pop(pc - 1)?;
                    self.stack.push(binary(op, a, b).ok_or_else(|| format!("{op} failed on {a} and {b} ({})", self.names.join(",")))?);
                }
                Inst::Print => {
                    let v = self.pop(pc - 1)?;
                    println!("{v}");
                }
                Inst::Jump(to) => pc = to,
                Inst::BranchIfFalse(to) => {
                    if self.pop(pc - 1)? == 0 {
                        pc = to;
                    }
                }
                Inst::Halt => return Ok(()),
            }
        }
    }
}

fn binary(op: &str, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "+" => a.checked_add(b)?,
        "-" => a.checked_sub(b)?,
        "*" => a.checked_mul(b)?,
        "/" => a.checked_div(b)?,
        "%" => a.checked_rem(b)?,
        "<" => (a < b) as i64,
        "<=" => (a <= b) as i64,
        ">" => (a > b) as i64,
        ">=" => (a >= b) as i64,
        "==" => (a == b) as i64,
        "!=" => (a != b) as i64,
        _ => return None,
    })
}
