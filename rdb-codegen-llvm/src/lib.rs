//! rdb-clang: C support for rdb. Builds the main binary byte-identical to a
//! plain clang-14 build of the source without debug code, and outlines the
//! C debug regions from LLVM IR (inkwell, LLVM 14) into a debug module with
//! its descriptors. User documentation: `rdb-codegen-llvm/README.md`.
//!
//! Where to start, stage by stage:
//! - [`source`]: the token-level pass over one `.c` file: regions,
//!   debug-only declarations, diagnostics, the stripped source (byte-exact
//!   line removal, [`source::analyse`]).
//! - [`command`]: the clang command line (inputs, output, mode, the flags an
//!   extra compile keeps).
//! - [`pass`]: the IR pass: single-exit check on the CFG, outlining into
//!   `__rdb_func_<id>` / `__rdb_entry_<id>`, keep/drop sweep
//!   ([`pass::outline_file`]).
//! - [`driver`]: runs the user's command on stripped sources (VFS overlay),
//!   the DWARF twin, the sidecars, the debug module ([`driver::run`]).
//! - [`callbacks`]: event callbacks of debug sources (`RDB_ON_SYSCALL`, ...):
//!   their entries and records in the debug module.
//! - [`descriptors`]: hands the regions to `rdb-locate` and writes the two
//!   descriptor files.
//! - the `rdb-clang` binary (`src/bin/rdb-clang.rs`) only reports errors.
//!
//! The marker header is `rdb-codegen-llvm/include/rdb.h` ([`RDB_H`]).

pub mod callbacks;
pub mod command;
pub mod descriptors;
pub mod driver;
pub mod pass;
pub mod source;

/// The text of `rdb.h`, which rdb-clang puts on the include path of its
/// instrumented compile.
pub const RDB_H: &str = include_str!("../include/rdb.h");

/// The C side of the debug-side API (`rdb_watch`, `rdb_backtrace`, ...), compiled into every
/// debug module.
pub const RDB_API_C: &str = include_str!("../include/rdb_api.c");
