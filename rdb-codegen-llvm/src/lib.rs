//! rdb-clang: C support for rdb. Outlines C debug regions from LLVM IR into a
//! debug module (inkwell, LLVM 14) and builds the main binary byte-identical
//! to a plain clang-14 build of the source without debug code.
//!
//! Where to start:
//! - [`source`]: the token-level half: regions, debug-only declarations,
//!   diagnostics, the stripped source (byte-exact line removal).
//! - the `rdb-clang` binary (`src/bin/rdb-clang.rs`) only reports errors; the
//!   work is in the library.
//!
//! The marker header is `rdb-codegen-llvm/include/rdb.h` ([`RDB_H`]).

pub mod command;
pub mod descriptors;
pub mod driver;
pub mod pass;
pub mod source;

/// The text of `rdb.h`, which rdb-clang puts on the include path of its
/// instrumented compile.
pub const RDB_H: &str = include_str!("../include/rdb.h");
