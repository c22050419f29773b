//! The DWARF twin of a build without debug information (cargo's default
//! release profile): the same sources and flags, plus debug information,
//! built so that its code is the recorded build's.
//!
//! What rustc changes when it emits debug information, and what the twin
//! does about each (measured with rustc 1.95):
//!
//! - It adds an allocated `.debug_gdb_scripts` section to executables and
//!   a load of it in `main` (the attribute that turned this off was removed
//!   in 1.91). The section shifts every later section by its size; the twin
//!   is linked with a script that makes it non-allocated (`INFO`), so the
//!   layout stays the recorded build's and only `main`'s body differs.
//! - MIR inlining keeps the callee's variables when debug information is on,
//!   which changes what is inlined at opt-level 3 (the `bank` sample's
//!   `.text`: 0x698a8 bytes plain, 0x694f8 with debug information):
//!   `-Zinline-mir-preserve-debug=no` inlines as the plain build does
//!   (variables of MIR-inlined callees are then missing from the DWARF).
//! - `-Z` flags need `RUSTC_BOOTSTRAP=1`, which makes a stable rustc
//!   behave as a nightly one, whose default symbol mangling is `v0`:
//!   `-Csymbol-mangling-version=legacy` keeps the stable default. Only the
//!   twin is built this way; the recorded binary is the user's plain build.
//! - LLVM still allocates registers differently in a few functions (3 to 5
//!   of 1,200 in `bank`, e.g. the standard library's sort instantiated with
//!   the program's closure). `rdb_locate::prove_twin` proves the others
//!   equal instruction by instruction; regions in those are not served and
//!   the build says which.

use crate::term;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Environment of the twin's cargo.
pub const ENV: [(&str, &str); 1] = [("RUSTC_BOOTSTRAP", "1")];

const LINK_SCRIPT: &str =
    "SECTIONS { .debug_gdb_scripts (INFO) : { KEEP(*(.debug_gdb_scripts)) } } INSERT AFTER .comment;\n";

/// Writes the linker script that keeps `.debug_gdb_scripts` out of the
/// loaded image; returns its path.
pub fn write_link_script(rdb_dir: &Path) -> Result<PathBuf> {
    let path = rdb_dir.join("twin-gdb-scripts.ld");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(LINK_SCRIPT) {
        crate::shadow::write_atomic(&path, LINK_SCRIPT.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(path)
}

/// The twin's rustflags (after the user's), for the rustc `toolchain`
/// (`rustc -vV`'s first line).
pub fn rustflags(script: &Path, toolchain: &str) -> Vec<String> {
    let mut flags = vec![
        "-Cdebuginfo=2".to_string(),
        "-Cstrip=none".into(),
        "-Zinline-mir-preserve-debug=no".into(),
        format!("-Clink-arg=-Wl,-T,{}", script.display()),
    ];
    // A nightly toolchain mangles with v0 by default in the recorded build too.
    if !toolchain.contains("nightly") && !toolchain.contains("-dev") {
        flags.extend(["-Zunstable-options".into(), "-Csymbol-mangling-version=legacy".into()]);
    }
    flags
}

/// Says how much of the binary the twin describes.
pub fn report(bin: &str, map: &rdb_locate::TwinMap, verbose: bool) {
    let (same, differ) = map.counts();
    if map.identical {
        term::status("Proved", format!("`{bin}`: the twin's code is identical"));
        return;
    }
    term::status(
        "Proved",
        format!(
            "`{bin}`: {same} of {} functions of the twin identical to the recorded build's; regions in the {differ} \
             others are not served",
            same + differ
        ),
    );
    if verbose {
        for f in map.differing() {
            term::status(
                "Differs",
                format!("{} at {:#x}: {}", f.name, f.main_address, f.differs.as_deref().unwrap_or("")),
            );
        }
    }
}
