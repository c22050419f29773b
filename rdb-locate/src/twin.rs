//! The function-by-function proof that a DWARF twin (the same build with
//! debug information added) has the main binary's code, and the map from
//! the twin's code addresses to the main binary's.
//!
//! rustc does not always produce the same machine code with debug
//! information on: LLVM's register allocation and scheduling can change
//! in a few functions (measured with rustc 1.95 at opt-level 3: 3 to 5
//! functions of 1,200 differ, e.g. `core::slice::sort::stable::drift::sort`
//! instantiated with a closure), and a function that grows moves every
//! later one. So a twin is not required to be byte-identical as a whole.
//! Instead, [`prove_twin`] pairs the functions of both symbol tables by
//! name and proves each pair equal instruction by instruction: the same
//! bytes, or the same instruction whose relative branch target or
//! `rip`-relative operand points at *corresponding* places (the same
//! offset into paired functions, or the same address outside the code).
//! Data sections must sit at the same addresses with the same bytes
//! (the unwind and exception tables, which describe the code, excepted).
//! Only addresses inside a proven function are mapped ([`TwinMap::map`]);
//! a region located elsewhere is not served, and the caller says so.

use crate::LocateError;
use iced_x86::{Decoder, DecoderOptions, Instruction, OpKind};
use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SectionKind, SymbolKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Sections that describe the code (unwind tables, exception tables, the
/// build id): they follow the code and are not compared as data.
const DESCRIBES_CODE: &[&str] = &[".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".note.gnu.build-id"];

/// Why a twin cannot describe the main binary at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TwinLayoutError {
    #[error(transparent)]
    Read(#[from] LocateError),
    #[error(
        "{twin}: the build with debug information lays out section `{section}` differently from {main} ({detail}); \
         rdb cannot describe this build from it"
    )]
    Layout { main: PathBuf, twin: PathBuf, section: String, detail: String },
}

/// One function of the main binary and what the proof found for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenFunction {
    /// The main binary's symbol.
    pub name: String,
    pub main_address: u64,
    pub size: u64,
    /// The paired function's address in the twin.
    pub twin_address: u64,
    /// `None` when proven equal; otherwise why not.
    pub differs: Option<String>,
}

/// The result of [`prove_twin`].
#[derive(Debug, Clone)]
pub struct TwinMap {
    /// Paired functions, sorted by twin address.
    functions: Vec<ProvenFunction>,
    /// Main-binary functions with no twin of the same name.
    pub unpaired: Vec<String>,
    /// Whether the code sections are byte-identical at the same addresses
    /// (then every address maps to itself).
    pub identical: bool,
}

impl TwinMap {
    /// The main binary's address, symbol and offset for code at `twin`'s
    /// address, when the function containing it is proven equal; otherwise
    /// why the address cannot be served.
    pub fn map(&self, address: u64) -> Result<(u64, String, u64), String> {
        let i = self.functions.partition_point(|f| f.twin_address <= address);
        let Some(f) = i.checked_sub(1).map(|i| &self.functions[i]) else {
            return Err(format!("no function of the main binary contains {address:#x}"));
        };
        let offset = address - f.twin_address;
        if offset >= f.size.max(1) {
            return Err(format!("no function of the main binary contains {address:#x}"));
        }
        match &f.differs {
            None => Ok((f.main_address + offset, f.name.clone(), offset)),
            Some(why) => Err(format!(
                "the code of `{}` built with debug information differs from the recorded build ({why})",
                f.name
            )),
        }
    }

    /// Functions proven equal, and functions that differ.
    pub fn counts(&self) -> (usize, usize) {
        let differ = self.functions.iter().filter(|f| f.differs.is_some()).count();
        (self.functions.len() - differ, differ)
    }

    /// The paired functions that differ.
    pub fn differing(&self) -> impl Iterator<Item = &ProvenFunction> {
        self.functions.iter().filter(|f| f.differs.is_some())
    }
}

/// `name` without the `.llvm.NNNN` suffix LLVM gives promoted local symbols
/// (its number hashes the module, which debug information changes).
fn base_name(name: &str) -> &str {
    match name.rfind(".llvm.") {
        Some(i) if name[i + 6..].bytes().all(|b| b.is_ascii_digit()) && i + 6 < name.len() => &name[..i],
        _ => name,
    }
}

struct Image<'d> {
    file: object::File<'d>,
    /// Function symbols: (base name, address, size), sorted by address.
    functions: Vec<(String, u64, u64)>,
}

impl<'d> Image<'d> {
    fn parse(path: &Path, data: &'d [u8]) -> Result<Image<'d>, LocateError> {
        let file =
            object::File::parse(data).map_err(|e| LocateError::NotElf { path: path.into(), reason: e.to_string() })?;
        let mut functions: Vec<(String, u64, u64)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && !s.is_undefined())
            .filter_map(|s| Some((base_name(s.name().ok()?).to_string(), s.address(), s.size())))
            .collect();
        functions.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        functions.dedup_by(|b, a| a.1 == b.1 && a.0 == b.0);
        Ok(Image { file, functions })
    }

    fn bytes(&self, address: u64, size: u64) -> Option<&'d [u8]> {
        self.file.sections().find_map(|s| {
            let start = s.address();
            if s.kind() == SectionKind::UninitializedData || address < start || address + size > start + s.size() {
                return None;
            }
            let data = s.data().ok()?;
            data.get((address - start) as usize..(address - start + size) as usize)
        })
    }

    /// Every address the code takes `rip`-relatively outside the code.
    fn rip_relative_targets(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for s in self.file.sections().filter(|s| s.kind() == SectionKind::Text) {
            let Ok(data) = s.data() else { continue };
            let mut decoder = Decoder::with_ip(64, data, s.address(), DecoderOptions::NONE);
            for i in &mut decoder {
                if i.is_ip_rel_memory_operand() && !self.is_code(i.ip_rel_memory_address()) {
                    out.push(i.ip_rel_memory_address());
                }
            }
        }
        out
    }

    fn is_code(&self, address: u64) -> bool {
        self.file
            .sections()
            .any(|s| s.kind() == SectionKind::Text && address >= s.address() && address < s.address() + s.size())
    }
}

fn allocated(s: &object::Section<'_, '_>) -> bool {
    match s.flags() {
        SectionFlags::Elf { sh_flags } => sh_flags & u64::from(object::elf::SHF_ALLOC) != 0,
        _ => s.address() != 0,
    }
}

/// Proves, function by function, which code of `twin` (the build with
/// debug information) is the code of `main`. Fails when the data layout
/// differs (then no address of the twin can be trusted).
pub fn prove_twin(main: &Path, twin: &Path) -> Result<TwinMap, TwinLayoutError> {
    let read = |p: &Path| std::fs::read(p).map_err(|source| LocateError::Io { path: p.into(), source });
    let (da, db) = (read(main)?, read(twin)?);
    let (a, b) = (Image::parse(main, &da)?, Image::parse(twin, &db)?);
    let layout = |section: &str, detail: String| TwinLayoutError::Layout {
        main: main.into(),
        twin: twin.into(),
        section: section.into(),
        detail,
    };
    // Data: same place, same size, same bytes.
    let mut identical = true;
    let mut relocations: Vec<(&[u8], &[u8], String)> = Vec::new();
    let mut tables: Vec<(u64, &[u8], &[u8], String)> = Vec::new();
    for s in a.file.sections().filter(allocated) {
        let name = s.name().unwrap_or("").to_string();
        let Some(t) = b.file.section_by_name(&name).filter(allocated) else {
            return Err(layout(&name, "missing from the twin".into()));
        };
        if t.address() != s.address() || t.size() != s.size() {
            return Err(layout(
                &name,
                format!(
                    "at {:#x} with {:#x} bytes in the twin, {:#x} with {:#x} bytes in the main binary",
                    t.address(),
                    t.size(),
                    s.address(),
                    s.size()
                ),
            ));
        }
        if s.kind() == SectionKind::UninitializedData || s.kind() == SectionKind::UninitializedTls {
            continue;
        }
        let same = s.data().ok() == t.data().ok();
        if s.kind() == SectionKind::Text {
            identical &= same;
        } else if !same && (name == ".rela.dyn" || name == ".rela.plt") {
            // Relocations are checked once functions are paired: a pointer
            // to a function that moved has another addend.
            relocations.push((s.data().unwrap_or(&[]), t.data().unwrap_or(&[]), name.clone()));
        } else if !same && !DESCRIBES_CODE.contains(&name.as_str()) {
            // Checked once functions are paired: jump tables hold offsets
            // from the table to code that may have moved.
            tables.push((s.address(), s.data().unwrap_or(&[]), t.data().unwrap_or(&[]), name.clone()));
        }
    }
    for t in b.file.sections().filter(allocated) {
        let name = t.name().unwrap_or("");
        if a.file.section_by_name(name).filter(allocated).is_none() {
            return Err(layout(name, "allocated in the twin only".into()));
        }
    }
    // Pair functions by name; several of one name pair in address order.
    let mut twins: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
    for (name, address, size) in &b.functions {
        twins.entry(name.as_str()).or_default().push((*address, *size));
    }
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut pairs = Vec::new();
    let mut unpaired = Vec::new();
    for (name, address, size) in &a.functions {
        let k = taken.entry(name.as_str()).or_default();
        match twins.get(name.as_str()).and_then(|v| v.get(*k)) {
            Some(&(twin_address, twin_size)) => {
                *k += 1;
                pairs.push((name.clone(), *address, *size, twin_address, twin_size));
            }
            None => unpaired.push(name.clone()),
        }
    }
    // twin address -> main address, for function starts.
    let mut starts: Vec<(u64, u64, u64)> = pairs.iter().map(|p| (p.3, p.4, p.1)).collect();
    starts.sort();
    let corresponding = |twin_target: u64| -> u64 {
        let i = starts.partition_point(|s| s.0 <= twin_target);
        if let Some(&(t, size, m)) = i.checked_sub(1).map(|i| &starts[i]) {
            if twin_target < t + size.max(1) {
                return m + (twin_target - t);
            }
        }
        twin_target
    };
    // Dynamic relocations: the same places and kinds; an addend (the value
    // written at load time) is the same, or a code address of the twin
    // whose corresponding address is the main binary's.
    for (x, y, name) in &relocations {
        for (i, (p, q)) in x.chunks(24).zip(y.chunks(24)).enumerate() {
            if p == q {
                continue;
            }
            let addend = |e: &[u8]| i64::from_le_bytes(e[16..24].try_into().unwrap_or([0; 8])) as u64;
            if p.len() != 24 || q.len() != 24 || p[..16] != q[..16] {
                return Err(layout(name, format!("relocation {i} has another place or kind")));
            }
            let (m, t) = (addend(p), addend(q));
            if !(b.is_code(t) && corresponding(t) == m) {
                return Err(layout(
                    name,
                    format!("relocation {i} writes {t:#x}, which does not correspond to the main binary's {m:#x}"),
                ));
            }
        }
    }
    // Other data that differs: only jump tables, 4-byte offsets from a
    // table's start (an address the twin's code takes with `lea`) to code
    // whose corresponding address is the main binary's table entry's.
    if !tables.is_empty() {
        let mut bases = b.rip_relative_targets();
        bases.sort_unstable();
        for (start, x, y, name) in &tables {
            let mut k = 0;
            while k < x.len().min(y.len()) {
                let word = k & !3;
                let end = (word + 4).min(x.len());
                k = end;
                if x[word..end] == y[word..end] {
                    continue;
                }
                let at = start + word as u64;
                let read = |d: &[u8]| d.get(word..word + 4).map(|w| i32::from_le_bytes(w.try_into().unwrap_or([0; 4])));
                let base = bases.partition_point(|&b| b <= at).checked_sub(1).map(|i| bases[i]);
                let ok = match (base, read(x), read(y)) {
                    (Some(base), Some(m), Some(t)) => {
                        let (m, t) = (base.wrapping_add(m as i64 as u64), base.wrapping_add(t as i64 as u64));
                        b.is_code(t) && corresponding(t) == m
                    }
                    _ => false,
                };
                if !ok {
                    return Err(layout(name, format!("its bytes differ at address {at:#x}, not as a jump table's")));
                }
            }
        }
    }
    let mut functions = Vec::with_capacity(pairs.len());
    for (name, main_address, size, twin_address, twin_size) in pairs {
        let differs = if identical && main_address == twin_address && size == twin_size {
            None
        } else if size != twin_size {
            Some(format!("{size} bytes, {twin_size} with debug information"))
        } else {
            match (a.bytes(main_address, size), b.bytes(twin_address, size)) {
                (Some(x), Some(y)) => same_instructions(x, main_address, y, twin_address, &corresponding, &b),
                _ => Some("its bytes are not in a section".into()),
            }
        };
        functions.push(ProvenFunction { name, main_address, size, twin_address, differs });
    }
    functions.sort_by_key(|f| f.twin_address);
    Ok(TwinMap { functions, unpaired, identical })
}

/// `None` when the two bodies are the same instructions (relative targets
/// corresponding); otherwise the first difference.
fn same_instructions(
    main: &[u8],
    main_ip: u64,
    twin: &[u8],
    twin_ip: u64,
    corresponding: &dyn Fn(u64) -> u64,
    twin_image: &Image<'_>,
) -> Option<String> {
    if main == twin && main_ip == twin_ip {
        return None;
    }
    let mut da = Decoder::with_ip(64, main, main_ip, DecoderOptions::NONE);
    let mut db = Decoder::with_ip(64, twin, twin_ip, DecoderOptions::NONE);
    let (mut x, mut y) = (Instruction::default(), Instruction::default());
    while da.can_decode() {
        if !db.can_decode() {
            return Some("the twin's body ends early".into());
        }
        da.decode_out(&mut x);
        db.decode_out(&mut y);
        let offset = x.ip() - main_ip;
        let (bx, by) = (&main[offset as usize..][..x.len()], &twin[(y.ip() - twin_ip) as usize..][..y.len()]);
        if x.len() != y.len() || x.code() != y.code() {
            return Some(format!("other instruction at offset {offset:#x}"));
        }
        if bx == by && main_ip == twin_ip {
            continue;
        }
        // Same instruction but for a relative target.
        let targets = |i: &Instruction| -> Vec<u64> {
            let mut t = Vec::new();
            for op in 0..i.op_count() {
                match i.op_kind(op) {
                    OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
                        t.push(i.near_branch_target())
                    }
                    OpKind::Memory if i.is_ip_rel_memory_operand() => t.push(i.ip_rel_memory_address()),
                    _ => {}
                }
            }
            t
        };
        let (tx, ty) = (targets(&x), targets(&y));
        if tx.is_empty() || tx.len() != ty.len() {
            if bx == by {
                continue;
            }
            return Some(format!("other bytes at offset {offset:#x}"));
        }
        for (m, t) in tx.iter().zip(&ty) {
            let mapped = if twin_image.is_code(*t) { corresponding(*t) } else { *t };
            if mapped != *m {
                return Some(format!("a target that does not correspond at offset {offset:#x}"));
            }
        }
        // Everything but the displacement bytes must agree: compare the
        // instructions with their targets set equal.
        let (mut xx, mut yy) = (x, y);
        xx.set_ip(0);
        yy.set_ip(0);
        if !same_but_targets(&xx, &yy) {
            return Some(format!("other operands at offset {offset:#x}"));
        }
    }
    if db.can_decode() {
        return Some("the twin's body is longer".into());
    }
    None
}

/// The instructions' operands other than relative targets are equal.
fn same_but_targets(x: &Instruction, y: &Instruction) -> bool {
    if x.op_count() != y.op_count() || x.code() != y.code() {
        return false;
    }
    for op in 0..x.op_count() {
        let kind = x.op_kind(op);
        if kind != y.op_kind(op) {
            return false;
        }
        match kind {
            OpKind::Register if x.op_register(op) != y.op_register(op) => return false,
            OpKind::Memory
                if x.memory_base() != y.memory_base()
                    || x.memory_index() != y.memory_index()
                    || x.memory_index_scale() != y.memory_index_scale()
                    || x.memory_size() != y.memory_size()
                    || x.segment_prefix() != y.segment_prefix()
                    || (!x.is_ip_rel_memory_operand() && x.memory_displacement64() != y.memory_displacement64()) =>
            {
                return false
            }
            OpKind::Immediate8
            | OpKind::Immediate8_2nd
            | OpKind::Immediate16
            | OpKind::Immediate32
            | OpKind::Immediate64
            | OpKind::Immediate8to16
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate32to64
                if x.immediate(op) != y.immediate(op) =>
            {
                return false
            }
            _ => {}
        }
    }
    true
}
