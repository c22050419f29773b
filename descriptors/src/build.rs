//! What a program's build was made of: the facts a trace records about its executable so that
//! a later build that differs from it can be explained (which compiler, which directory, which
//! debug information, which sections; for a Cargo project its locked package versions and its
//! profile). `rdb_locate::build` computes and compares them; the trace header carries them
//! (`program_build`, optional). Fields are only ever added (readers default missing ones).

use serde::{Deserialize, Serialize};

/// The build of one executable.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProgramBuild {
    /// BLAKE3 of the executable these facts describe, lowercase hex.
    pub blake3: String,
    /// The compiler and linker identifications of its `.comment` section
    /// (`rustc version 1.95.0 (59807616e 2026-04-14)`, `Debian clang version 14.0.6`).
    #[serde(default)]
    pub toolchain: Vec<String>,
    /// The directories its compilation units were compiled in (`DW_AT_comp_dir`), except the
    /// toolchain's own and those of downloaded crates; sorted.
    #[serde(default)]
    pub build_dirs: Vec<String>,
    /// How much debug information it carries.
    #[serde(default)]
    pub debug_info: DebugLevel,
    /// Its ELF sections, in file order.
    #[serde(default)]
    pub sections: Vec<SectionDigest>,
    /// The Cargo project it was built in, when it is a Rust executable found in one.
    #[serde(default)]
    pub cargo: Option<CargoBuild>,
}

impl ProgramBuild {
    /// Whether rustc built it (its `.comment` names rustc).
    pub fn is_rust(&self) -> bool {
        self.toolchain.iter().any(|t| t.starts_with("rustc version"))
    }
}

/// How much DWARF an executable carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DebugLevel {
    /// No `.debug_info`.
    #[default]
    None,
    /// Line tables and function names, no variables.
    Lines,
    /// Variables and types.
    Full,
}

impl std::fmt::Display for DebugLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DebugLevel::None => "no debug information",
            DebugLevel::Lines => "line tables only",
            DebugLevel::Full => "full debug information",
        })
    }
}

/// One ELF section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionDigest {
    pub name: String,
    /// Its address when loaded (0 for sections that are not loaded).
    pub address: u64,
    pub size: u64,
    /// BLAKE3 of its bytes in the file, lowercase hex (empty for sections without file
    /// contents, such as `.bss`).
    pub blake3: String,
}

/// The Cargo project a Rust executable was built in.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CargoBuild {
    /// The workspace root (the directory of its `Cargo.toml` and `Cargo.lock`).
    pub root: String,
    /// The profile it was built with, from its place in the target directory (`dev`,
    /// `release`, or a custom profile's name).
    pub profile: String,
    /// That profile's table of the workspace manifest, as TOML (`debug = "full"`), empty when
    /// the manifest has none.
    #[serde(default)]
    pub profile_settings: String,
    /// Every package of `Cargo.lock`, as `name version`, sorted.
    #[serde(default)]
    pub locked: Vec<String>,
}
