//! Lazy per-unit indexes of the DWARF: the DIE tree (flattened, with
//! parents) and the line table, each parsed on first use.

use crate::code::Code;
use crate::loader::Binary;
use crate::reader::R;
use gimli::{AttributeValue, DwTag, Reader, UnitOffset};
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A DIE identified by its unit (index into [`Index::units`]) and its
/// position in that unit's flattened tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DieRef {
    pub unit: usize,
    pub die: usize,
}

pub struct UnitData {
    pub unit: gimli::Unit<R>,
    pub language: Option<gimli::DwLang>,
    dies: OnceCell<Result<Vec<Die>, gimli::Error>>,
    files: OnceCell<Result<Vec<PathBuf>, gimli::Error>>,
    lines: OnceCell<Result<Lines, gimli::Error>>,
}

#[derive(Debug, Clone, Copy)]
pub struct Die {
    pub offset: UnitOffset,
    pub tag: DwTag,
    pub depth: u32,
    pub parent: Option<usize>,
}

/// The rows of one unit's line table, with the unit's file names resolved.
pub struct Lines {
    pub files: Vec<PathBuf>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub address: u64,
    pub file: usize,
    pub line: u32,
    pub column: u32,
    pub is_stmt: bool,
    /// The row is where a function's prologue ends (its arguments are in place).
    pub prologue_end: bool,
}

pub struct Index<'b> {
    pub binary: &'b Binary,
    pub units: Vec<UnitData>,
    /// Functions' machine code, decoded on first use (see [`Index::code`]).
    code: RefCell<HashMap<Vec<gimli::Range>, Rc<Code>>>,
}

impl<'b> Index<'b> {
    pub fn new(binary: &'b Binary) -> Result<Index<'b>, gimli::Error> {
        let mut units = Vec::new();
        let mut headers = binary.dwarf.units();
        while let Some(header) = headers.next()? {
            let unit = binary.dwarf.unit(header)?;
            let language = {
                let mut entries = unit.entries();
                match entries.next_dfs()? {
                    Some((_, root)) => match root.attr_value(gimli::DW_AT_language)? {
                        Some(AttributeValue::Language(l)) => Some(l),
                        _ => None,
                    },
                    None => None,
                }
            };
            units.push(UnitData {
                unit,
                language,
                dies: OnceCell::new(),
                files: OnceCell::new(),
                lines: OnceCell::new(),
            });
        }
        Ok(Index { binary, units, code: RefCell::default() })
    }

    /// The machine code of `ranges` (a function's), decoded once for all the
    /// checks of all the regions that read it.
    pub fn code(&self, ranges: &[gimli::Range]) -> Rc<Code> {
        let mut cache = self.code.borrow_mut();
        cache.entry(ranges.to_vec()).or_insert_with(|| Rc::new(Code::new(self.binary, ranges.to_vec()))).clone()
    }

    pub fn dwarf(&self) -> &gimli::Dwarf<R> {
        &self.binary.dwarf
    }

    pub fn dies(&self, unit: usize) -> Result<&[Die], gimli::Error> {
        let data = &self.units[unit];
        data.dies.get_or_init(|| flatten(&data.unit)).as_deref().map_err(|e| *e)
    }

    /// The unit's line-table file names (without reading its rows).
    pub fn files(&self, unit: usize) -> Result<&[PathBuf], gimli::Error> {
        let data = &self.units[unit];
        data.files.get_or_init(|| read_files(&self.binary.dwarf, &data.unit)).as_deref().map_err(|e| *e)
    }

    pub fn lines(&self, unit: usize) -> Result<&Lines, gimli::Error> {
        let data = &self.units[unit];
        let files = self.files(unit)?.to_vec();
        data.lines.get_or_init(|| read_lines(&data.unit, files)).as_ref().map_err(|e| *e)
    }

    pub fn die(&self, r: DieRef) -> Result<Die, gimli::Error> {
        Ok(self.dies(r.unit)?[r.die])
    }

    pub fn entry(&self, r: DieRef) -> Result<gimli::DebuggingInformationEntry<'_, '_, R>, gimli::Error> {
        let die = self.die(r)?;
        self.units[r.unit].unit.entry(die.offset)
    }

    pub fn attr(&self, r: DieRef, name: gimli::DwAt) -> Result<Option<AttributeValue<R>>, gimli::Error> {
        self.entry(r)?.attr_value(name)
    }

    pub fn string(&self, r: DieRef, name: gimli::DwAt) -> Result<Option<String>, gimli::Error> {
        match self.attr(r, name)? {
            Some(value) => {
                let s = self.binary.dwarf.attr_string(&self.units[r.unit].unit, value)?;
                Ok(Some(s.to_string_lossy()?.into_owned()))
            }
            None => Ok(None),
        }
    }

    pub fn udata(&self, r: DieRef, name: gimli::DwAt) -> Result<Option<u64>, gimli::Error> {
        Ok(self.attr(r, name)?.and_then(|v| v.udata_value()))
    }

    /// The DIE a reference attribute (`DW_AT_type`, `DW_AT_abstract_origin`,
    /// ...) points to, in this unit or another one.
    pub fn reference(&self, r: DieRef, name: gimli::DwAt) -> Result<Option<DieRef>, gimli::Error> {
        let (unit, offset) = match self.attr(r, name)? {
            Some(AttributeValue::UnitRef(offset)) => (r.unit, offset),
            Some(AttributeValue::DebugInfoRef(offset)) => {
                let Some(unit) = self.units.iter().position(|u| offset.to_unit_offset(&u.unit.header).is_some()) else {
                    return Ok(None);
                };
                (unit, offset.to_unit_offset(&self.units[unit].unit.header).unwrap_or(UnitOffset(0)))
            }
            _ => return Ok(None),
        };
        let dies = self.dies(unit)?;
        Ok(dies.binary_search_by_key(&offset, |d| d.offset).ok().map(|die| DieRef { unit, die }))
    }

    /// Follows `DW_AT_abstract_origin` and `DW_AT_specification` to the DIE
    /// that carries the declaration (name, decl_line, type, parents).
    pub fn declaration(&self, r: DieRef) -> Result<DieRef, gimli::Error> {
        let mut current = r;
        for _ in 0..8 {
            let next = match self.reference(current, gimli::DW_AT_abstract_origin)? {
                Some(n) => n,
                None => match self.reference(current, gimli::DW_AT_specification)? {
                    Some(n) => n,
                    None => return Ok(current),
                },
            };
            current = next;
        }
        Ok(current)
    }

    /// An attribute of the DIE or, when absent, of its origin/specification.
    pub fn inherited(&self, r: DieRef, name: gimli::DwAt) -> Result<Option<(DieRef, AttributeValue<R>)>, gimli::Error> {
        let mut current = r;
        for _ in 0..8 {
            if let Some(v) = self.attr(current, name)? {
                return Ok(Some((current, v)));
            }
            current = match self.reference(current, gimli::DW_AT_abstract_origin)? {
                Some(n) => n,
                None => match self.reference(current, gimli::DW_AT_specification)? {
                    Some(n) => n,
                    None => return Ok(None),
                },
            };
        }
        Ok(None)
    }

    pub fn name(&self, r: DieRef) -> Result<Option<String>, gimli::Error> {
        match self.inherited(r, gimli::DW_AT_name)? {
            Some((owner, _)) => self.string(owner, gimli::DW_AT_name),
            None => Ok(None),
        }
    }

    /// Names of the scopes enclosing a declaration (namespaces, types,
    /// functions), outermost first.
    pub fn scope_path(&self, r: DieRef) -> Result<Vec<String>, gimli::Error> {
        let dies = self.dies(r.unit)?;
        let mut path = Vec::new();
        let mut parent = dies[r.die].parent;
        while let Some(p) = parent {
            let d = dies[p];
            if matches!(
                d.tag,
                gimli::DW_TAG_namespace
                    | gimli::DW_TAG_structure_type
                    | gimli::DW_TAG_union_type
                    | gimli::DW_TAG_enumeration_type
                    | gimli::DW_TAG_class_type
                    | gimli::DW_TAG_subprogram
            ) {
                if let Some(name) = self.name(DieRef { unit: r.unit, die: p })? {
                    path.push(name);
                }
            }
            parent = d.parent;
        }
        path.reverse();
        Ok(path)
    }

    /// Direct children of a DIE.
    pub fn children(&self, r: DieRef) -> Result<Vec<DieRef>, gimli::Error> {
        let dies = self.dies(r.unit)?;
        let depth = dies[r.die].depth;
        let mut out = Vec::new();
        for (i, d) in dies.iter().enumerate().skip(r.die + 1) {
            if d.depth <= depth {
                break;
            }
            if d.depth == depth + 1 {
                out.push(DieRef { unit: r.unit, die: i });
            }
        }
        Ok(out)
    }

    /// Address ranges of a DIE (empty for DIEs without code).
    pub fn ranges(&self, r: DieRef) -> Result<Vec<gimli::Range>, gimli::Error> {
        let entry = self.entry(r)?;
        let mut iter = self.binary.dwarf.die_ranges(&self.units[r.unit].unit, &entry)?;
        let mut out = Vec::new();
        while let Some(range) = iter.next()? {
            if range.begin < range.end && range.begin != 0 {
                out.push(range);
            }
        }
        Ok(out)
    }
}

fn flatten(unit: &gimli::Unit<R>) -> Result<Vec<Die>, gimli::Error> {
    let mut dies = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut depth: isize = 0;
    let mut entries = unit.entries();
    while let Some((delta, entry)) = entries.next_dfs()? {
        depth += delta;
        if depth < 0 {
            return Err(gimli::Error::UnexpectedNull);
        }
        stack.truncate(depth as usize);
        let parent = stack.last().copied();
        dies.push(Die { offset: entry.offset(), tag: entry.tag(), depth: depth as u32, parent });
        stack.push(dies.len() - 1);
    }
    Ok(dies)
}

/// Line-table file indices start at 0 from DWARF 5 on, at 1 before.
fn first_file_index(header: &gimli::LineProgramHeader<R>) -> u64 {
    if header.version() >= 5 {
        0
    } else {
        1
    }
}

fn read_files(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>) -> Result<Vec<PathBuf>, gimli::Error> {
    let Some(program) = &unit.line_program else { return Ok(Vec::new()) };
    let comp_dir = match &unit.comp_dir {
        Some(d) => PathBuf::from(d.to_string_lossy()?.into_owned()),
        None => PathBuf::new(),
    };
    let header = program.header();
    // File paths by index, as the line program numbers them.
    let mut files = Vec::new();
    let first = first_file_index(header);
    let count = header.file_names().len() as u64;
    for index in first..first + count {
        let path = match header.file(index) {
            Some(file) => {
                let mut path = comp_dir.clone();
                if let Some(dir) = file.directory(header) {
                    path.push(dwarf.attr_string(unit, dir)?.to_string_lossy()?.as_ref());
                }
                path.push(dwarf.attr_string(unit, file.path_name())?.to_string_lossy()?.as_ref());
                path
            }
            None => PathBuf::new(),
        };
        files.push(path);
    }
    Ok(files)
}

fn read_lines(unit: &gimli::Unit<R>, files: Vec<PathBuf>) -> Result<Lines, gimli::Error> {
    let Some(program) = unit.line_program.clone() else {
        return Ok(Lines { files, rows: Vec::new() });
    };
    let first = first_file_index(program.header());
    let mut rows = Vec::new();
    let mut program_rows = program.rows();
    while let Some((_, row)) = program_rows.next_row()? {
        if row.end_sequence() {
            continue;
        }
        // Line 0 (code of no source line) is kept: it continues the code before.
        let line = row.line().map_or(0, |l| l.get());
        let column = match row.column() {
            gimli::ColumnType::LeftEdge => 0,
            gimli::ColumnType::Column(c) => c.get() as u32,
        };
        rows.push(Row {
            address: row.address(),
            file: row.file_index().wrapping_sub(first) as usize,
            line: line as u32,
            column,
            is_stmt: row.is_stmt(),
            prologue_end: row.prologue_end(),
        });
    }
    Ok(Lines { files, rows })
}

/// Whether a path from the DWARF names the user's `wanted` file: the same
/// path, or (for a relative `wanted`, e.g. `src/main.rs`) one ending with it.
pub fn same_file(dwarf_path: &Path, wanted: &Path) -> bool {
    if dwarf_path == wanted {
        return true;
    }
    let normal =
        |p: &Path| -> PathBuf { p.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect() };
    let (d, w) = (normal(dwarf_path), normal(wanted));
    if w.is_absolute() {
        d == w
    } else {
        d.ends_with(&w)
    }
}
