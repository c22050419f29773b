//! Loading a binary: ELF sections, DWARF, symbols and unwind tables.
//!
//! Kept apart from lookup (see `index`) so lookups never touch the
//! file system.

use crate::eval::CfaRule;
use crate::LocateError;
use gimli::{RunTimeEndian, UnwindSection};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub use crate::reader::R;

/// A loaded binary.
pub struct Binary {
    pub path: PathBuf,
    pub dwarf: gimli::Dwarf<R>,
    pub symbols: SymbolTable,
    unwind: Unwind,
    /// Whether the ELF file is position-independent (`ET_DYN`).
    pub position_independent: bool,
    /// Executable sections: (address, bytes).
    code: Vec<(u64, Vec<u8>)>,
    /// Read-only data sections (jump tables): (address, bytes).
    read_only: Vec<(u64, Vec<u8>)>,
    /// Pointer slots the dynamic relocations fill (the GOT): slot address and
    /// the function it will hold (a dynamic symbol's name, or the name of the
    /// binary's own symbol a relative relocation points to).
    slots: std::collections::HashMap<u64, String>,
}

impl Binary {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Binary, LocateError> {
        let data = std::fs::read(path).map_err(|source| LocateError::Io { path: path.into(), source })?;
        Self::parse(path, &data)
    }

    /// Parses the bytes of an ELF file read from `path`.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Binary, LocateError> {
        let not_elf = |reason: String| LocateError::NotElf { path: path.into(), reason };
        let file = object::File::parse(data).map_err(|e| not_elf(e.to_string()))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(not_elf(format!("it is a {:?} file, not ELF", file.format())));
        }
        if file.architecture() != object::Architecture::X86_64 {
            return Err(not_elf(format!("it is built for {:?}; rdb supports x86-64", file.architecture())));
        }
        let endian = if file.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let section = |name: &str| -> Result<R, LocateError> {
            let bytes: Cow<[u8]> = match file.section_by_name(name) {
                Some(s) => s.uncompressed_data().map_err(|e| not_elf(format!("section {name}: {e}")))?,
                None => Cow::Borrowed(&[]),
            };
            Ok(gimli::EndianRcSlice::new(Rc::from(&*bytes), endian))
        };
        let dwarf = gimli::Dwarf::load(|id: gimli::SectionId| section(id.name()))?;
        let has_debug_info = file.section_by_name(".debug_info").is_some_and(|s| s.size() > 0);
        if !has_debug_info {
            return Err(LocateError::NoDebugInfo { path: path.into(), detail: "it has no .debug_info section".into() });
        }
        let symbols = SymbolTable::new(&file);
        let unwind = Unwind::new(&file, endian, section(".eh_frame")?, section(".debug_frame")?);
        let position_independent = matches!(file.kind(), object::ObjectKind::Dynamic);
        let code = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .collect();
        let read_only = file
            .sections()
            .filter(|s| matches!(s.kind(), object::SectionKind::ReadOnlyData | object::SectionKind::ReadOnlyString))
            .filter(|s| s.address() != 0)
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .collect();
        let mut slots = std::collections::HashMap::new();
        if let Some(relocations) = file.dynamic_relocations() {
            let names: Vec<(usize, String)> =
                file.dynamic_symbols().map(|s| (s.index().0, s.name().unwrap_or("").to_string())).collect();
            for (slot, relocation) in relocations {
                let name = match relocation.target() {
                    object::RelocationTarget::Symbol(index) if index.0 != 0 => {
                        names.iter().find(|(i, _)| *i == index.0).map(|(_, n)| n.clone())
                    }
                    object::RelocationTarget::Absolute if relocation.addend() > 0 => {
                        Some(symbols.lookup(relocation.addend() as u64).0)
                    }
                    _ => None,
                };
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    slots.insert(slot, name);
                }
            }
        }
        Ok(Binary { path: path.into(), dwarf, symbols, unwind, position_independent, code, read_only, slots })
    }

    /// The code bytes from `begin` to `end` (within one executable section).
    pub fn code(&self, begin: u64, end: u64) -> Option<&[u8]> {
        self.code.iter().find_map(|(start, bytes)| {
            let from = begin.checked_sub(*start)? as usize;
            let to = end.checked_sub(*start)? as usize;
            bytes.get(from..to)
        })
    }

    /// The bytes from `begin` to `end` of a read-only data section.
    pub fn read_only(&self, begin: u64, end: u64) -> Option<&[u8]> {
        self.read_only.iter().find_map(|(start, bytes)| {
            bytes.get(begin.checked_sub(*start)? as usize..end.checked_sub(*start)? as usize)
        })
    }

    /// The function a dynamically relocated pointer slot (a GOT entry) will
    /// hold, by name.
    pub fn slot(&self, address: u64) -> Option<&str> {
        self.slots.get(&address).map(String::as_str)
    }

    /// The CFA rule in force at `address`, if the unwind tables cover it.
    pub fn cfa_rule(&self, address: u64) -> Option<CfaRule> {
        self.unwind.cfa_rule(address)
    }
}

/// Function and object symbols of the ELF symbol table, sorted by address.
pub struct SymbolTable {
    symbols: Vec<Symbol>,
    sections: Vec<(u64, u64, String)>,
}

#[derive(Debug, Clone)]
struct Symbol {
    address: u64,
    size: u64,
    name: String,
    global: bool,
    code: bool,
}

impl SymbolTable {
    fn new(file: &object::File<'_>) -> SymbolTable {
        let mut symbols: Vec<Symbol> = Vec::new();
        let add = |symbols: &mut Vec<Symbol>, iter: object::SymbolIterator<'_, '_>| {
            for s in iter {
                if s.is_undefined() || s.address() == 0 || !matches!(s.kind(), SymbolKind::Text | SymbolKind::Data) {
                    continue;
                }
                let Ok(name) = s.name() else { continue };
                if name.is_empty() {
                    continue;
                }
                symbols.push(Symbol {
                    address: s.address(),
                    size: s.size(),
                    name: name.to_string(),
                    global: s.is_global(),
                    code: s.kind() == SymbolKind::Text,
                });
            }
        };
        add(&mut symbols, file.symbols());
        if symbols.is_empty() {
            add(&mut symbols, file.dynamic_symbols());
        }
        // Prefer, at one address, the sized global symbol.
        symbols.sort_by(|a, b| {
            a.address.cmp(&b.address).then(b.global.cmp(&a.global)).then(b.size.cmp(&a.size)).then(a.name.cmp(&b.name))
        });
        symbols.dedup_by(|later, first| later.address == first.address);
        let sections = file
            .sections()
            .filter(|s| s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        SymbolTable { symbols, sections }
    }

    /// The symbol containing `address` and the offset into it; the section
    /// name and offset when no symbol covers it.
    pub fn lookup(&self, address: u64) -> (String, i64) {
        let index = self.symbols.partition_point(|s| s.address <= address);
        if index > 0 {
            let s = &self.symbols[index - 1];
            if address < s.address.saturating_add(s.size.max(1)) {
                return (s.name.clone(), (address - s.address) as i64);
            }
        }
        for (start, size, name) in &self.sections {
            if address >= *start && address < start.saturating_add(*size) {
                return (name.clone(), (address - start) as i64);
            }
        }
        (String::new(), address as i64)
    }

    /// Function symbols as (name, address, size).
    pub fn functions(&self) -> impl Iterator<Item = (&str, u64, u64)> {
        self.symbols.iter().filter(|s| s.code && s.size > 0).map(|s| (s.name.as_str(), s.address, s.size))
    }

    /// Address of a function symbol by name.
    pub fn function_address(&self, name: &str) -> Option<u64> {
        self.symbols.iter().find(|s| s.code && s.name == name).map(|s| s.address)
    }

    /// Address of a symbol by name.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.symbols.iter().find(|s| s.name == name).map(|s| s.address)
    }
}

struct Unwind {
    eh_frame: gimli::EhFrame<R>,
    debug_frame: gimli::DebugFrame<R>,
    bases: gimli::BaseAddresses,
}

impl Unwind {
    fn new(file: &object::File<'_>, endian: RunTimeEndian, eh_frame: R, debug_frame: R) -> Unwind {
        let address = |name: &str| file.section_by_name(name).map(|s| s.address());
        let mut bases = gimli::BaseAddresses::default();
        if let Some(a) = address(".eh_frame") {
            bases = bases.set_eh_frame(a);
        }
        if let Some(a) = address(".eh_frame_hdr") {
            bases = bases.set_eh_frame_hdr(a);
        }
        if let Some(a) = address(".text") {
            bases = bases.set_text(a);
        }
        if let Some(a) = address(".got") {
            bases = bases.set_got(a);
        }
        let _ = endian;
        let mut eh_frame = gimli::EhFrame::from(eh_frame);
        eh_frame.set_address_size(8);
        let mut debug_frame = gimli::DebugFrame::from(debug_frame);
        debug_frame.set_address_size(8);
        Unwind { eh_frame, debug_frame, bases }
    }

    fn cfa_rule(&self, address: u64) -> Option<CfaRule> {
        let mut ctx = Box::new(gimli::UnwindContext::new());
        let rule = match self.eh_frame.unwind_info_for_address(
            &self.bases,
            &mut ctx,
            address,
            gimli::EhFrame::cie_from_offset,
        ) {
            Ok(row) => row.cfa().clone(),
            Err(_) => self
                .debug_frame
                .unwind_info_for_address(&self.bases, &mut ctx, address, gimli::DebugFrame::cie_from_offset)
                .ok()?
                .cfa()
                .clone(),
        };
        match rule {
            gimli::CfaRule::RegisterAndOffset { register, offset } => Some(CfaRule { register, offset }),
            gimli::CfaRule::Expression(_) => None,
        }
    }
}
