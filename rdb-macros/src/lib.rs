//! Markers for rdb debug regions.
//!
//! In a plain `cargo build` the markers expand to nothing and `#[debug_only]`
//! items are kept as they are (with dead-code lints silenced), so the
//! instrumented source keeps compiling and editors keep working: region code
//! refers to debug-only helpers, so those must exist for it to type-check.
//! `cargo rdb build` never lets these macros run:
//! it reads the markers from the source text (see `rdb-extract`), strips them
//! for the main binary and rewrites them for the debug module.
//!
//! ```ignore
//! use rdb_macros::{rdb_begin, rdb_end, debug_only};
//! #[debug_only] fn render(s: &[i64]) -> String { format!("{s:?}") }
//! fn step(stack: &mut Vec<i64>) {
//!     rdb_begin!();
//!     println!("stack = {}", render(stack));
//!     rdb_end!();
//!     stack.pop();
//! }
//! ```
//!
//! # Rules (checked by `cargo rdb build`, reported rustc-style)
//!
//! - A region is `rdb_begin!();` ... `rdb_end!();` as two statements of the
//!   same block inside a function or method body (`rdb_macros::rdb_begin!()`
//!   works too). Regions do not nest.
//! - Control enters at `rdb_begin!()` and leaves at `rdb_end!()`: no `return`,
//!   `?`, `.await`, or `break`/`continue` to a loop outside the region.
//! - Debug code reads the program, never writes it: assigning to, mutably
//!   borrowing or calling a mutating method on a program variable is an error
//!   (the debug module receives every program variable as `&T`, so rustc
//!   rejects the cases the syntax check cannot see). Debug-only locals,
//!   `#[debug_only]` statics and helpers are free to change.
//! - Regions may sit in generic functions and impls, trait methods, closures,
//!   `async fn` bodies, `async` blocks and nested functions. In a closure, a
//!   variable of the enclosing function must be used by the closure's own
//!   code (so the program captures it).
//! - Program statics a region reads are taken from the running program; in
//!   format strings, name them as explicit arguments (`"{}", COUNTER`), not as
//!   inline captures (`"{COUNTER}"`). A static of another crate of the
//!   workspace must be written with its path (`util::CALLS`).
//! - `use rdb_macros::...;` items and `#[debug_only]` items are removed from
//!   the main build with the lines they occupy; put imports of `rdb_macros`
//!   in a `use` of their own.
//!
//! - `rdb_check!(cond, "fmt", args…)` inside a region is a check for `rdb find` (see
//!   [`rdb_check!`]).
//!
//! # Event callbacks
//!
//! A `#[debug_only]` function with one of the attributes below is called by the replay when
//! something happens in the program, with the same guarantees as regions (the program's replay
//! is never affected, output interleaves in program order, debug-only state persists):
//!
//! ```ignore
//! #[debug_only]
//! #[rdb_macros::on_syscall(write, after)]     // before | after (default after); several names allowed
//! fn who_writes(call: &rdb::Syscall) { ... }  // or `fn who_writes()`
//!
//! #[debug_only]
//! #[rdb_macros::on_call(crate::vm::Vm::push)] // a function of the program, by path
//! fn pushed(vm: &Vm, v: i64) { ... }          // its arguments: same type if Copy, or `&T`
//!
//! #[debug_only]
//! #[rdb_macros::on_return(crate::vm::Vm::pop)]
//! fn popped(v: Option<i64>) { ... }           // the returned value (or no parameter)
//!
//! #[debug_only]
//! #[rdb_macros::on_call("malloc")]            // a symbol of the executable or a shared library
//! fn allocating(size: usize) { ... }          // integer / pointer parameters, from the registers
//!
//! #[debug_only]
//! #[rdb_macros::on_write(crate::bank::AUDITED)] // or on_read: a static of the program
//! fn audited(old: u64, new: u64) { ... }      // or (old, new, access: &rdb::Access), or ()
//! ```
//!
//! A watched value is no callback of an event: `rdb find --watch queue_len` evaluates it where
//! it searches, for the statement after which its value (its `Debug` text) first changes:
//!
//! ```ignore
//! #[debug_only]
//! #[rdb_macros::watched(crate::jobs::QUEUE)]  // a static of the program, given by reference
//! fn queue_len(q: &Queue) -> usize { q.jobs.len() }
//! ```
//!
//! The callback's signature is checked against the function's by rustc when `cargo rdb build`
//! compiles the debug module.
//!
//! The debug-side API (`rdb::Syscall`, `rdb::backtrace()`, ...) is the `rdb-api` crate (library
//! name `rdb`); like `rdb-macros`, `cargo rdb build` removes it from the main build.
//! In a plain build the attributes change nothing (the function stays, unused).
//!
//! A function-like macro cannot remove the statements that follow it, so in a
//! plain build a region's statements compile and run as ordinary code (like
//! printf debugging). Only `cargo rdb build` separates them from the program.

use proc_macro::TokenStream;

/// Opens a debug region. Expands to nothing.
#[proc_macro]
pub fn rdb_begin(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}

/// Closes a debug region. Expands to nothing.
#[proc_macro]
pub fn rdb_end(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}

/// A check inside a region: `rdb_check!(cond)` or `rdb_check!(cond, "fmt", args…)` (the
/// syntax of `assert!`). `rdb find` searches a region's hits, by binary search over the replay,
/// for the first one where `cond` is false (or the last where it holds, or where it changes),
/// and prints that hit with the message and the program's backtrace. The region may do other
/// things besides.
///
/// In a plain build the check is type-checked and never evaluated (it expands to an uncalled
/// closure): it is for `rdb find`, not for the program.
#[proc_macro]
pub fn rdb_check(input: TokenStream) -> TokenStream {
    let mut out: TokenStream = "let _ = || ::std::assert!".parse().expect("static tokens parse");
    out.extend([proc_macro::TokenTree::Group(proc_macro::Group::new(proc_macro::Delimiter::Parenthesis, input))]);
    out.extend("; ".parse::<TokenStream>().expect("static tokens parse"));
    let mut block = TokenStream::new();
    block.extend([proc_macro::TokenTree::Group(proc_macro::Group::new(proc_macro::Delimiter::Brace, out))]);
    block
}

/// Marks an item (fn, static, const, struct, enum, impl, mod, use) as existing
/// only in the debug module. `cargo rdb build` removes it from the main
/// binary; a plain build keeps it, unchanged but for silenced unused lints.
#[proc_macro_attribute]
pub fn debug_only(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out: TokenStream = "#[allow(dead_code, unused)]".parse().expect("static attribute parses");
    out.extend(item);
    out
}

/// `#[on_syscall(name, ..., before | after)]`: calls the function at each of these system calls
/// of the replayed program (see the crate docs). Keeps the item unchanged in a plain build.
#[proc_macro_attribute]
pub fn on_syscall(_attr: TokenStream, item: TokenStream) -> TokenStream {
    allow_unused(item)
}

fn allow_unused(item: TokenStream) -> TokenStream {
    let mut out: TokenStream = "#[allow(dead_code, unused)]".parse().expect("static attribute parses");
    out.extend(item);
    out
}

/// `#[on_call(path::to::function)]` or `#[on_call("symbol")]`: calls the function at each call
/// of that function of the replayed program, with its arguments (see the crate docs). Keeps the
/// item unchanged in a plain build.
#[proc_macro_attribute]
pub fn on_call(_attr: TokenStream, item: TokenStream) -> TokenStream {
    allow_unused(item)
}

/// `#[on_return(path::to::function)]` or `#[on_return("symbol")]`: calls the function at each
/// return of that function, with the returned value (see the crate docs). Keeps the item
/// unchanged in a plain build.
#[proc_macro_attribute]
pub fn on_return(_attr: TokenStream, item: TokenStream) -> TokenStream {
    allow_unused(item)
}

/// `#[on_write(path::to::STATIC)]`: calls the function at each write to that static of the
/// replayed program, with the old and new values (see the crate docs). Keeps the item
/// unchanged in a plain build.
#[proc_macro_attribute]
pub fn on_write(_attr: TokenStream, item: TokenStream) -> TokenStream {
    allow_unused(item)
}

/// `#[watched(path::to::STATIC)]` on `fn(&T) -> R` (`R: Debug`): a watched value for
/// `rdb find --watch NAME`, given the program's static (see the crate docs). Keeps the item
/// unchanged in a plain build.
#[proc_macro_attribute]
pub fn watched(_attr: TokenStream, item: TokenStream) -> TokenStream {
    allow_unused(item)
}

/// `#[on_read(path::to::STATIC)]`: like `on_write`, for reads and writes. Keeps the item
/// unchanged in a plain build.
#[proc_macro_attribute]
pub fn on_read(_attr: TokenStream, item: TokenStream) -> TokenStream {
    allow_unused(item)
}
