//! Binary identity: which file a set of descriptors describes, how much
//! debug information it carries, and the proof that a DWARF twin (the same
//! build with debug information added) has the same code as the main binary.

use crate::LocateError;
use object::{Object, ObjectSection, SectionKind};
use rdb_descriptors::BinaryIdentity;
use std::path::{Path, PathBuf};

/// The identity (path, size, BLAKE3) of a file, as the descriptors record it.
pub fn binary_identity(path: &Path) -> Result<BinaryIdentity, LocateError> {
    BinaryIdentity::of(path).map_err(|source| LocateError::Io { path: path.into(), source })
}

/// How much DWARF a binary carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DebugInfo {
    /// No `.debug_info` (e.g. cargo's default release profile, which strips it).
    None,
    /// Line tables and function names, but no variables (`debug = "line-tables-only"`
    /// or `"limited"`): enough to place regions, not to find their arguments.
    LinesOnly,
    /// Variables and types.
    Full,
}

/// The debug information `path` carries: [`DebugInfo::Full`] when some unit
/// declares a variable or parameter.
pub fn debug_info(path: &Path) -> Result<DebugInfo, LocateError> {
    let data = std::fs::read(path).map_err(|source| LocateError::Io { path: path.into(), source })?;
    let file =
        object::File::parse(&*data).map_err(|e| LocateError::NotElf { path: path.into(), reason: e.to_string() })?;
    debug_info_in(path, &file)
}

/// [`debug_info`] of an ELF file already read from `path`.
pub(crate) fn debug_info_in(path: &Path, file: &object::File<'_>) -> Result<DebugInfo, LocateError> {
    let not_elf = |reason: String| LocateError::NotElf { path: path.into(), reason };
    let Some(info) = file.section_by_name(".debug_info").filter(|s| s.size() > 0) else { return Ok(DebugInfo::None) };
    let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    let load = |section: Option<object::Section<'_, '_>>| -> Result<Vec<u8>, LocateError> {
        match section {
            Some(s) => Ok(s.uncompressed_data().map_err(|e| not_elf(e.to_string()))?.into_owned()),
            None => Ok(Vec::new()),
        }
    };
    let info_data = load(Some(info))?;
    let abbrev_data = load(file.section_by_name(".debug_abbrev"))?;
    let debug_info = gimli::DebugInfo::new(&info_data, endian);
    let debug_abbrev = gimli::DebugAbbrev::new(&abbrev_data, endian);
    let dwarf_error = |source| LocateError::Dwarf { path: path.into(), source };
    let mut units = debug_info.units();
    while let Some(header) = units.next().map_err(dwarf_error)? {
        let abbreviations = header.abbreviations(&debug_abbrev).map_err(dwarf_error)?;
        let mut entries = header.entries(&abbreviations);
        while let Some((_, entry)) = entries.next_dfs().map_err(dwarf_error)? {
            if matches!(entry.tag(), gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter)
                && entry.attr(gimli::DW_AT_location).map_err(dwarf_error)?.is_some()
            {
                return Ok(DebugInfo::Full);
            }
        }
    }
    Ok(DebugInfo::LinesOnly)
}

fn parse_elf<'d>(path: &Path, data: &'d [u8]) -> Result<object::File<'d>, LocateError> {
    object::File::parse(data).map_err(|e| LocateError::NotElf { path: path.into(), reason: e.to_string() })
}

/// Why a DWARF twin cannot stand in for the main binary.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TwinError {
    #[error(transparent)]
    Read(#[from] LocateError),
    #[error(
        "{twin}: the code built with debug information differs from {main} (section `{section}`: {detail}); \
         rdb cannot describe this build from the twin"
    )]
    Mismatch { main: PathBuf, twin: PathBuf, section: String, detail: String },
}

/// Checks that `twin` (the same build with debug information added) has the
/// same code as `main`: every allocated section sits at the same address with
/// the same size, and code sections have the same bytes (and, in object
/// files, the same relocations). Debug information lives in non-allocated
/// sections, so descriptors computed from the twin's DWARF describe `main`.
pub fn check_same_code(main: &Path, twin: &Path) -> Result<(), TwinError> {
    let read = |p: &Path| std::fs::read(p).map_err(|source| LocateError::Io { path: p.into(), source });
    let (a, b) = (read(main)?, read(twin)?);
    let (fa, fb) = (parse_elf(main, &a)?, parse_elf(twin, &b)?);
    let mismatch = |section: &str, detail: String| TwinError::Mismatch {
        main: main.into(),
        twin: twin.into(),
        section: section.into(),
        detail,
    };
    for s in fa.sections() {
        let name = s.name().unwrap_or("").to_string();
        if s.address() != 0 {
            match fb.section_by_name(&name) {
                Some(t) if t.address() == s.address() && t.size() == s.size() => {}
                Some(t) => {
                    return Err(mismatch(
                        &name,
                        format!(
                            "at {:#x} with {} bytes in the twin, {:#x} with {} bytes in the main binary",
                            t.address(),
                            t.size(),
                            s.address(),
                            s.size()
                        ),
                    ))
                }
                None => return Err(mismatch(&name, "missing from the twin".into())),
            }
        }
        let code = s.kind() == SectionKind::Text || name.starts_with(".text");
        if !code {
            continue;
        }
        let Some(t) = fb.section_by_name(&name) else { return Err(mismatch(&name, "missing from the twin".into())) };
        let (da, db) = (s.data().unwrap_or(&[]), t.data().unwrap_or(&[]));
        if s.address() != t.address() || da != db {
            let first = da.iter().zip(db).position(|(x, y)| x != y).unwrap_or(da.len().min(db.len()));
            return Err(mismatch(
                &name,
                format!("bytes differ from offset {first:#x} (address {:#x})", s.address() + first as u64),
            ));
        }
        let relocations = |s: &object::Section<'_, '_>| -> Vec<_> {
            s.relocations().map(|(o, r)| (o, r.kind(), r.addend(), r.size())).collect()
        };
        if relocations(&s) != relocations(&t) {
            return Err(mismatch(&name, "relocations differ".into()));
        }
    }
    Ok(())
}
