//! minibc: a tiny bc-like language compiled to bytecode and run on a stack VM.
//!
//! Usage: `minibc PROGRAM.bc`. The language has integer variables,
//! `x = expr;`, `print expr;`, `if (c) { ... } else { ... }`,
//! `for (init; cond; step) { ... }` and `break;`.
//!
//! It carries the bug of the rdB paper's case study: the translator forgets
//! to push `true` when a `for` loop has no condition, so the loop's
//! conditional branch pops whatever is on the stack.

mod compiler;
mod lexer;
mod parser;
mod vm;

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use rdb_macros::{rdb_begin, rdb_end};

/// Programs this process ran (one, unless a test drives `main` repeatedly).
static PROGRAMS_RUN: AtomicUsize = AtomicUsize::new(0);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: minibc PROGRAM.bc");
        return ExitCode::from(2);
    };
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("minibc: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    PROGRAMS_RUN.fetch_add(1, Ordering::Relaxed);
    rdb_begin!();
    println!("rdb: {path}: {} lines, programs run: {}", source.lines().count(), PROGRAMS_RUN.load(Ordering::Relaxed));
    rdb_end!();
    let tokens = match lexer::lex(&source) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("minibc: {path}: {e}");
            return ExitCode::from(1);
        }
    };
    let program = match parser::parse(&tokens) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("minibc: {path}: {e}");
            return ExitCode::from(1);
        }
    };
    let code = compiler::compile(&program);
    let mut machine = vm::Vm::new(path.clone(), code.instructions, code.variables);
    match machine.run() {
        Ok(()) => {
            println!("steps: {}", vm::steps());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("minibc: {}: runtime error: {e}", machine.name);
            ExitCode::from(1)
        }
    }
}
