//! Tokens -> syntax tree.

use crate::lexer::Token;

#[derive(Debug, Clone)]
pub enum Expr {
    Num(i64),
    Var(String),
    Neg(Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Assign(String, Expr),
    Print(Expr),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    /// `for (init; cond; step) { body }`; each header part may be empty.
    For(Option<Box<Stmt>>, Option<Expr>, Option<Box<Stmt>>, Vec<Stmt>),
    Break,
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
}

pub fn parse(tokens: &[Token]) -> Result<Vec<Stmt>, String> {
    let mut p = Parser { tokens, pos: 0 };
    let mut out = Vec::new();
    while p.pos < tokens.len() {
        out.push(p.stmt()?);
    }
    Ok(out)
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Token::Sym(t)) if *t == s)
    }

    fn expect(&mut self, s: &str) -> Result<(), String> {
        if self.is_sym(s) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{s}`, found {:?}", self.peek()))
        }
    }

    fn block(&mut self) -> Result<Vec<Stmt>, String> {
        self.expect("{")?;
        let mut body = Vec::new();
        while !self.is_sym("}") {
            if self.peek().is_none() {
                return Err("unterminated block".into());
            }
            body.push(self.stmt()?);
        }
        self.expect("}")?;
        Ok(body)
    }

    fn simple(&mut self) -> Result<Stmt, String> {
        match self.peek().cloned() {
            Some(Token::Print) => {
                self.pos += 1;
                Ok(Stmt::Print(self.expr()?))
            }
            Some(Token::Ident(name)) => {
                self.pos += 1;
                self.expect("=")?;
                Ok(Stmt::Assign(name, self.expr()?))
            }
            other => Err(format!("expected a statement, found {other:?}")),
        }
    }

    fn stmt(&mut self) -> Result<Stmt, String> {
        match self.peek() {
            Some(Token::If) => {
                self.pos += 1;
                self.expect("(")?;
                let cond = self.expr()?;
                self.expect(")")?;
                let then = self.block()?;
                let els = if self.peek() == Some(&Token::Else) {
                    self.pos += 1;
                    self.block()?
                } else {
                    Vec::new()
                };
                Ok(Stmt::If(cond, then, els))
            }
            Some(Token::For) => {
                self.pos += 1;
                self.expect("(")?;
                let init = if self.is_sym(";") { None } else { Some(Box::new(self.simple()?)) };
                self.expect(";")?;
                let cond = if self.is_sym(";") { None } else { Some(self.expr()?) };
                self.expect(";")?;
                let step = if self.is_sym(")") { None } else { Some(Box::new(self.simple()?)) };
                self.expect(")")?;
                let body = self.block()?;
                Ok(Stmt::For(init, cond, step, body))
            }
            Some(Token::Break) => {
                self.pos += 1;
                self.expect(";")?;
                Ok(Stmt::Break)
            }
            _ => {
                let s = self.simple()?;
                self.expect(";")?;
                Ok(s)
            }
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        const LEVELS: [&[&str]; 3] = [&["<", "<=", ">", ">=", "==", "!="], &["+", "-"], &["*", "/", "%"]];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(Token::Sym(op)) = self.peek() {
            if !LEVELS[level].contains(op) {
                break;
            }
            let op = *op;
            self.pos += 1;
            let right = self.binary(level + 1)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek().cloned() {
            Some(Token::Sym("-")) => {
                self.pos += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some(Token::Sym("(")) => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Token::Num(n)) => {
                self.pos += 1;
                Ok(Expr::Num(n))
            }
            Some(Token::Ident(v)) => {
                self.pos += 1;
                Ok(Expr::Var(v))
            }
            other => Err(format!("expected an expression, found {other:?}")),
        }
    }
}
