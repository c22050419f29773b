//! Syntax tree -> bytecode.

use crate::parser::{Expr, Stmt};
use crate::vm::Inst;
use std::collections::HashMap;

pub struct Code {
    pub instructions: Vec<Inst>,
    pub variables: Vec<String>,
}

struct Compiler {
    code: Vec<Inst>,
    slots: HashMap<String, usize>,
    names: Vec<String>,
    /// Jumps to patch with the end of each enclosing loop.
    breaks: Vec<Vec<usize>>,
}

pub fn compile(program: &[Stmt]) -> Code {
    let mut c = Compiler { code: Vec::new(), slots: HashMap::new(), names: Vec::new(), breaks: Vec::new() };
    for s in program {
        c.stmt(s);
    }
    c.code.push(Inst::Halt);
    Code { instructions: c.code, variables: c.names }
}

impl Compiler {
    fn slot(&mut self, name: &str) -> usize {
        if let Some(&s) = self.slots.get(name) {
            return s;
        }
        self.names.push(name.to_string());
        self.slots.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign(name, e) => {
                self.expr(e);
                let slot = self.slot(name);
                self.code.push(Inst::Store(slot));
            }
            Stmt::Print(e) => {
                self.expr(e);
                self.code.push(Inst::Print);
            }
            Stmt::If(cond, then, els) => {
                self.expr(cond);
                let branch = self.code.len();
                self.code.push(Inst::BranchIfFalse(0));
                for s in then {
                    self.stmt(s);
                }
                let jump = self.code.len();
                self.code.push(Inst::Jump(0));
                self.code[branch] = Inst::BranchIfFalse(self.code.len());
                for s in els {
                    self.stmt(s);
                }
                self.code[jump] = Inst::Jump(self.code.len());
            }
            Stmt::For(init, cond, step, body) => self.for_loop(init.as_deref(), cond.as_ref(), step.as_deref(), body),
            Stmt::Break => {
                let at = self.code.len();
                self.code.push(Inst::Jump(0));
                if let Some(b) = self.breaks.last_mut() {
                    b.push(at);
                }
            }
        }
    }

    fn for_loop(&mut self, init: Option<&Stmt>, cond: Option<&Expr>, step: Option<&Stmt>, body: &[Stmt]) {
        if let Some(init) = init {
            self.stmt(init);
        }
        let top = self.code.len();
        if let Some(cond) = cond {
            self.expr(cond);
        }
        // BUG (the rdB paper's case study): an empty condition should
        // push `true` (1) here; without it the branch below pops garbage.
        let branch = self.code.len();
        self.code.push(Inst::BranchIfFalse(0));
        self.breaks.push(Vec::new());
        for s in body {
            self.stmt(s);
        }
        if let Some(step) = step {
            self.stmt(step);
        }
        self.code.push(Inst::Jump(top));
        let end = self.code.len();
        self.code[branch] = Inst::BranchIfFalse(end);
        for at in self.breaks.pop().unwrap_or_default() {
            self.code[at] = Inst::Jump(end);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Num(n) => self.code.push(Inst::Push(*n)),
            Expr::Var(v) => {
                let slot = self.slot(v);
                self.code.push(Inst::Load(slot));
            }
            Expr::Neg(e) => {
                self.expr(e);
                self.code.push(Inst::Neg);
            }
            Expr::Binary(op, a, b) => {
                self.expr(a);
                self.expr(b);
                self.code.push(Inst::Binary(op));
            }
        }
    }
}
