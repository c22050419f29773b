//! Finding a variable's DIE (locals by lexical scope, statics by path) and
//! describing where it lives at a code address.

use crate::eval::Frame;
use crate::function::Instance;
use crate::index::{DieRef, Index};
use crate::symbolic::{describe, hex};
use crate::types::{type_name, type_size};
use gimli::{AttributeValue, Reader};
use rdb_descriptors::Location;

fn is_variable(tag: gimli::DwTag) -> bool {
    matches!(tag, gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter)
}

/// Whether a DIE is a scope of the instance's own code (not another
/// function inlined into it, nor a nested function).
fn is_own_scope(tag: gimli::DwTag) -> bool {
    tag == gimli::DW_TAG_lexical_block
}

fn in_ranges(ranges: &[gimli::Range], address: u64) -> bool {
    ranges.iter().any(|r| r.begin <= address && address < r.end)
}

/// How a local was found.
pub struct FoundLocal {
    pub die: DieRef,
    /// Set when no in-scope declaration matched and one elsewhere in the
    /// function was taken.
    pub outside_scope: bool,
    /// Set when only the abstract origin of an inlined or optimised copy
    /// declares it: the copy kept no location, the variable is optimised out.
    pub only_in_origin: bool,
}

/// The local `name` visible at `address` in `instance`: the innermost
/// lexical block containing the address that declares it (walking outward),
/// the latest declaration at or before `line` when a scope declares several.
pub fn find_local(
    index: &Index<'_>,
    instance: &Instance,
    address: u64,
    name: &str,
    line: u32,
) -> Result<Option<FoundLocal>, gimli::Error> {
    let Some(top) = instance.die else { return Ok(None) };
    // The chain of scopes containing the address, outermost first.
    let mut chain = vec![top];
    loop {
        let current = *chain.last().unwrap_or(&top);
        let mut next = None;
        for child in index.children(current)? {
            if is_own_scope(index.die(child)?.tag) && in_ranges(&index.ranges(child)?, address) {
                next = Some(child);
                break;
            }
        }
        match next {
            Some(n) => chain.push(n),
            None => break,
        }
    }
    for scope in chain.iter().rev() {
        if let Some(die) = best_declaration(index, index.children(*scope)?, name, line)? {
            return Ok(Some(FoundLocal { die, outside_scope: false, only_in_origin: false }));
        }
    }
    // Optimised code sometimes gives blocks ranges that miss the address:
    // fall back to any declaration of that name in the function's own scopes.
    let mut all = Vec::new();
    collect_own(index, top, &mut all)?;
    if let Some(die) = best_declaration(index, all, name, line)? {
        return Ok(Some(FoundLocal { die, outside_scope: true, only_in_origin: false }));
    }
    // Copies drop the variables they keep no location for; the abstract
    // origin still declares them (with their type). The scopes around the
    // address name their origins: search those first, innermost out, so that
    // a binding of that name in a sibling block (`if let Some(x) = x { .. }`
    // before the region) does not stand for the one in scope.
    let only_in_origin = |die| Some(FoundLocal { die, outside_scope: false, only_in_origin: true });
    for scope in chain.iter().rev() {
        if let Some(origin) = index.reference(*scope, gimli::DW_AT_abstract_origin)? {
            if let Some(die) = best_declaration(index, index.children(origin)?, name, line)? {
                return Ok(only_in_origin(die));
            }
        }
    }
    let Some(origin) = index.reference(top, gimli::DW_AT_abstract_origin)? else { return Ok(None) };
    let mut all = Vec::new();
    collect_own(index, origin, &mut all)?;
    Ok(best_declaration(index, all, name, line)?.and_then(only_in_origin))
}

fn collect_own(index: &Index<'_>, scope: DieRef, out: &mut Vec<DieRef>) -> Result<(), gimli::Error> {
    for child in index.children(scope)? {
        let tag = index.die(child)?.tag;
        if is_variable(tag) {
            out.push(child);
        } else if is_own_scope(tag) {
            collect_own(index, child, out)?;
        }
    }
    Ok(())
}

fn best_declaration(
    index: &Index<'_>,
    candidates: Vec<DieRef>,
    name: &str,
    line: u32,
) -> Result<Option<DieRef>, gimli::Error> {
    let mut best: Option<(DieRef, u64)> = None;
    for c in candidates {
        if !is_variable(index.die(c)?.tag) || index.name(c)?.as_deref() != Some(name) {
            continue;
        }
        let decl_line = match index.inherited(c, gimli::DW_AT_decl_line)? {
            Some((_, v)) => v.udata_value().unwrap_or(0),
            None => 0,
        };
        if decl_line > u64::from(line) {
            continue;
        }
        if best.is_none_or(|(_, l)| decl_line >= l) {
            best = Some((c, decl_line));
        }
    }
    Ok(best.map(|(d, _)| d))
}

/// A variable's type name and size.
pub fn variable_type(index: &Index<'_>, die: DieRef) -> Result<(String, u64), gimli::Error> {
    let ty = match index.inherited(die, gimli::DW_AT_type)? {
        Some((owner, _)) => index.reference(owner, gimli::DW_AT_type)?,
        None => None,
    };
    Ok((type_name(index, ty)?, type_size(index, ty)?.unwrap_or(0)))
}

/// Where variable `die` lives at `address`, or why that cannot be said.
pub fn variable_location(
    index: &Index<'_>,
    die: DieRef,
    frame_owner: Option<DieRef>,
    address: u64,
    size: u64,
) -> Result<Result<Location, String>, gimli::Error> {
    let dwarf = index.dwarf();
    let unit = &index.units[die.unit].unit;
    let frame_base = match frame_owner {
        Some(owner) => match index.attr(owner, gimli::DW_AT_frame_base)? {
            Some(AttributeValue::Exprloc(e)) => Some(e),
            _ => None,
        },
        None => None,
    };
    let entry = match frame_owner {
        Some(owner) => entry_address(index, owner)?,
        None => None,
    };
    let frame = Frame {
        encoding: unit.encoding(),
        unit: Some((dwarf, unit)),
        frame_base,
        cfa: index.binary.cfa_rule(address),
        entry,
    };
    let expression = match index.attr(die, gimli::DW_AT_location)? {
        Some(AttributeValue::Exprloc(e)) => e,
        Some(
            value @ (AttributeValue::LocationListsRef(_)
            | AttributeValue::DebugLocListsIndex(_)
            | AttributeValue::SecOffset(_)),
        ) => {
            let Some(mut list) = dwarf.attr_locations(unit, value)? else {
                return Ok(Err("its location list is missing".into()));
            };
            let mut found = None;
            while let Some(entry) = list.next()? {
                if entry.range.begin <= address && address < entry.range.end {
                    found = Some(entry.data);
                    break;
                }
            }
            match found {
                Some(e) => e,
                None => return Ok(Ok(Location::OptimizedOut)),
            }
        }
        Some(_) => return Ok(Err("its DW_AT_location has an unexpected form".into())),
        None => {
            return Ok(match constant_value(index, die, size)? {
                Some(bytes) => Ok(Location::Implicit { bytes }),
                None => Ok(Location::OptimizedOut),
            });
        }
    };
    if expression.0.is_empty() {
        return Ok(Ok(Location::OptimizedOut));
    }
    Ok(describe(expression, &frame, size, &index.binary.symbols))
}

/// The first instruction of a concrete subprogram: `DW_AT_low_pc`, else
/// `DW_AT_entry_pc`.
pub fn entry_address(index: &Index<'_>, subprogram: DieRef) -> Result<Option<u64>, gimli::Error> {
    if index.die(subprogram)?.tag != gimli::DW_TAG_subprogram {
        return Ok(None);
    }
    let unit = &index.units[subprogram.unit].unit;
    for attribute in [gimli::DW_AT_low_pc, gimli::DW_AT_entry_pc] {
        match index.attr(subprogram, attribute)? {
            Some(AttributeValue::Addr(a)) => return Ok(Some(a)),
            Some(AttributeValue::DebugAddrIndex(i)) => return Ok(Some(index.dwarf().address(unit, i)?)),
            _ => {}
        }
    }
    Ok(None)
}

/// Whether the variable has one location for its whole scope (a
/// `DW_AT_location` expression, not a location list): the compiler's
/// declaration of a stack slot, which says nothing about whether the slot
/// was written on the path that reached a given address.
pub fn whole_scope_location(index: &Index<'_>, die: DieRef) -> Result<bool, gimli::Error> {
    Ok(matches!(index.attr(die, gimli::DW_AT_location)?, Some(AttributeValue::Exprloc(_))))
}

/// `DW_AT_const_value` as little-endian hex bytes.
fn constant_value(index: &Index<'_>, die: DieRef, size: u64) -> Result<Option<String>, gimli::Error> {
    let Some((_, value)) = index.inherited(die, gimli::DW_AT_const_value)? else { return Ok(None) };
    let bytes: Vec<u8> = match value {
        AttributeValue::Block(b) => b.to_slice()?.into_owned(),
        AttributeValue::Sdata(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Udata(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Data1(v) => vec![v],
        AttributeValue::Data2(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Data4(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Data8(v) => v.to_le_bytes().to_vec(),
        _ => return Ok(None),
    };
    Ok(Some(hex(&bytes, size)))
}

/// A static found by path.
pub struct FoundStatic {
    pub die: DieRef,
    pub location: Location,
}

/// What a search for a static found.
#[derive(Default)]
pub struct StaticSearch {
    /// Statics with a fixed address, one per distinct address.
    pub found: Vec<FoundStatic>,
    /// Why a variable of that name and path was not usable (e.g. it is
    /// thread-local), for the warning when nothing was found.
    pub rejected: Option<String>,
}

/// The static `path` (`app::COUNTER` for Rust, `counter` for C; a leading
/// `crate::` or `::` is ignored): a `DW_TAG_variable` with that name in
/// those scopes whose location is a fixed address. The `preferred` units
/// (those of the region's file) are searched first, the others only if they
/// have none.
pub fn find_static(index: &Index<'_>, path: &str, preferred: &[usize]) -> Result<StaticSearch, gimli::Error> {
    let mut segments: Vec<&str> = path.split("::").map(str::trim).collect();
    while segments.len() > 1 && matches!(segments[0], "" | "crate") {
        segments.remove(0);
    }
    let Some((last, scopes)) = segments.split_last() else { return Ok(StaticSearch::default()) };
    let others: Vec<usize> = (0..index.units.len()).filter(|u| !preferred.contains(u)).collect();
    let mut search = StaticSearch::default();
    for units in [preferred, &others] {
        for &unit in units {
            let dies = index.dies(unit)?;
            for (i, d) in dies.iter().enumerate() {
                if d.tag != gimli::DW_TAG_variable {
                    continue;
                }
                let r = DieRef { unit, die: i };
                let declaration = index.declaration(r)?;
                if index.string(declaration, gimli::DW_AT_name)?.as_deref() != Some(*last) {
                    continue;
                }
                let scope_path = index.scope_path(declaration)?;
                if scopes.len() > scope_path.len()
                    || !scopes.iter().rev().zip(scope_path.iter().rev()).all(|(a, b)| a == b)
                {
                    continue;
                }
                let Some(AttributeValue::Exprloc(expression)) = index.attr(r, gimli::DW_AT_location)? else { continue };
                let unit_data = &index.units[unit].unit;
                let frame = Frame {
                    encoding: unit_data.encoding(),
                    unit: Some((index.dwarf(), unit_data)),
                    frame_base: None,
                    cfa: None,
                    entry: None,
                };
                match describe(expression, &frame, 0, &index.binary.symbols) {
                    Ok(location @ Location::Symbol { .. }) => {
                        let address = |l: &Location| match l {
                            Location::Symbol { address, .. } => *address,
                            _ => 0,
                        };
                        if !search.found.iter().any(|f| address(&f.location) == address(&location)) {
                            search.found.push(FoundStatic { die: r, location });
                        }
                    }
                    Ok(_) => {
                        search.rejected.get_or_insert_with(|| "its location is not a fixed address".into());
                    }
                    Err(why) => {
                        search.rejected.get_or_insert(why);
                    }
                }
            }
        }
        if !search.found.is_empty() {
            break;
        }
    }
    Ok(search)
}
