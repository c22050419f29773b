//! The region table of a Rust debug module (`rdb_regions`, see the
//! `rdb-region` crate): its entries, which instantiation each entry's debug
//! function belongs to, and renumbering entries so that each instantiation
//! has an id of its own.

use crate::index::{DieRef, Index};
use crate::loader::Binary;
use crate::LocateError;
use object::{Object, ObjectSection};
use rdb_descriptors::REGION_TABLE_SECTION;
use std::path::Path;

/// One entry of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// Position in the section (entry `i` is at byte `16 * i`).
    pub index: usize,
    /// The id written in the entry (the region id).
    pub id: u64,
    /// Module-relative address of the debug function (the trampoline).
    pub function: u64,
    /// The generic arguments of the instantiation the trampoline was made
    /// for (`<u8>`), from the name of its closure type, `{closure_env#N}<u8>`
    /// (rustc names a closure's type with the generic arguments of the
    /// function it is written in); empty when not generic or unknown.
    pub instantiation: String,
}

/// Reads the table of the debug module at `path` (which must carry DWARF:
/// the trampolines' closure types name their instantiation).
pub fn region_table(path: &Path) -> Result<Vec<TableEntry>, LocateError> {
    let data = std::fs::read(path).map_err(|source| LocateError::Io { path: path.into(), source })?;
    let not_elf = |reason: String| LocateError::NotElf { path: path.into(), reason };
    let file = object::File::parse(&*data).map_err(|e| not_elf(e.to_string()))?;
    let Some(section) = file.section_by_name(REGION_TABLE_SECTION) else { return Ok(Vec::new()) };
    let bytes = section.data().map_err(|e| not_elf(e.to_string()))?;
    let base = section.address();
    // The function slots are filled by R_X86_64_RELATIVE relocations (the
    // file may hold zeros there).
    let mut relocated = std::collections::HashMap::new();
    if let Some(relocations) = file.dynamic_relocations() {
        for (offset, r) in relocations {
            if offset >= base && offset < base + section.size() {
                relocated.insert(offset, r.addend() as u64);
            }
        }
    }
    let mut entries = Vec::new();
    for (index, chunk) in bytes.chunks_exact(16).enumerate() {
        let id = u64::from_le_bytes(chunk[..8].try_into().expect("8 bytes"));
        let stored = u64::from_le_bytes(chunk[8..].try_into().expect("8 bytes"));
        let function = relocated.get(&(base + 16 * index as u64 + 8)).copied().unwrap_or(stored);
        entries.push(TableEntry { index, id, function, instantiation: String::new() });
    }
    let binary = Binary::parse(path, &data)?;
    let index = Index::new(&binary).map_err(|source| LocateError::Dwarf { path: path.into(), source })?;
    let names = trampoline_closures(&index).map_err(|source| LocateError::Dwarf { path: path.into(), source })?;
    for e in &mut entries {
        if let Some(closure) = names.get(&e.function) {
            e.instantiation = crate::generic_arguments(closure);
        }
    }
    Ok(entries)
}

/// Low pc of each `trampoline` subprogram -> the name of its `F` type.
fn trampoline_closures(index: &Index<'_>) -> Result<std::collections::HashMap<u64, String>, gimli::Error> {
    let mut out = std::collections::HashMap::new();
    for unit in 0..index.units.len() {
        for (i, die) in index.dies(unit)?.iter().enumerate() {
            if die.tag != gimli::DW_TAG_subprogram {
                continue;
            }
            let r = DieRef { unit, die: i };
            let Some(gimli::AttributeValue::Addr(low)) = index.attr(r, gimli::DW_AT_low_pc)? else { continue };
            let declaration = index.declaration(r)?;
            if !index.name(declaration)?.is_some_and(|n| n.starts_with("trampoline<")) {
                continue;
            }
            for owner in [r, declaration] {
                for child in index.children(owner)? {
                    if index.die(child)?.tag == gimli::DW_TAG_template_type_parameter
                        && index.name(child)?.as_deref() == Some("F")
                    {
                        if let Some(ty) = index.reference(child, gimli::DW_AT_type)? {
                            if let Some(name) = index.name(ty)? {
                                out.insert(low, name);
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Rewrites the ids of table entries in the module file at `path`
/// (`(index, new id)` pairs).
pub fn patch_entry_ids(path: &Path, ids: &[(usize, u64)]) -> Result<(), LocateError> {
    if ids.is_empty() {
        return Ok(());
    }
    let io = |source| LocateError::Io { path: path.into(), source };
    let mut data = std::fs::read(path).map_err(io)?;
    let (offset, size) = {
        let file = object::File::parse(&*data)
            .map_err(|e| LocateError::NotElf { path: path.into(), reason: e.to_string() })?;
        let section = file.section_by_name(REGION_TABLE_SECTION).ok_or_else(|| LocateError::NotElf {
            path: path.into(),
            reason: format!("no section `{REGION_TABLE_SECTION}`"),
        })?;
        section.file_range().ok_or_else(|| LocateError::NotElf {
            path: path.into(),
            reason: format!("section `{REGION_TABLE_SECTION}` has no bytes in the file"),
        })?
    };
    for &(index, id) in ids {
        let at = offset as usize + 16 * index;
        if (16 * index as u64 + 8) > size {
            return Err(LocateError::NotElf { path: path.into(), reason: format!("no table entry {index}") });
        }
        data[at..at + 8].copy_from_slice(&id.to_le_bytes());
    }
    std::fs::write(path, data).map_err(io)
}
