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

/// Marks an item (fn, static, const, struct, enum, impl, mod, use) as existing
/// only in the debug module. `cargo rdb build` removes it from the main
/// binary; a plain build keeps it, unchanged but for silenced unused lints.
#[proc_macro_attribute]
pub fn debug_only(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out: TokenStream = "#[allow(dead_code, unused)]"
        .parse()
        .expect("static attribute parses");
    out.extend(item);
    out
}
