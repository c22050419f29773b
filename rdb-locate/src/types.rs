//! Type names and sizes from DWARF type DIEs.

use crate::index::{DieRef, Index};

const MAX_DEPTH: u32 = 16;

/// Whether the unit is Rust (types are named with their module path).
fn is_rust(index: &Index<'_>, r: DieRef) -> bool {
    index.units[r.unit].language == Some(gimli::DW_LANG_Rust)
}

/// A readable name for the type DIE `r`: the DWARF name (Rust types with
/// their module path: `app::Vm`, `&mut app::Vm`), C aggregates with their
/// keyword (`struct node`), pointers and qualifiers rendered around the
/// pointee (`const char *`).
pub fn type_name(index: &Index<'_>, r: Option<DieRef>) -> Result<String, gimli::Error> {
    name_inner(index, r, 0)
}

fn name_inner(index: &Index<'_>, r: Option<DieRef>, depth: u32) -> Result<String, gimli::Error> {
    let Some(r) = r else { return Ok("void".into()) };
    if depth > MAX_DEPTH {
        return Ok("...".into());
    }
    let tag = index.die(r)?.tag;
    let target = || index.reference(r, gimli::DW_AT_type);
    let name = index.string(r, gimli::DW_AT_name)?;
    let rust = is_rust(index, r);
    Ok(match tag {
        gimli::DW_TAG_structure_type
        | gimli::DW_TAG_union_type
        | gimli::DW_TAG_enumeration_type
        | gimli::DW_TAG_class_type => {
            let keyword = match tag {
                gimli::DW_TAG_structure_type => "struct",
                gimli::DW_TAG_union_type => "union",
                gimli::DW_TAG_enumeration_type => "enum",
                _ => "class",
            };
            match (name, rust) {
                (Some(n), true) => {
                    // Builtin composite names (`&[i64]`, `(i32, u8)`) are complete already.
                    if n.starts_with(['&', '*', '(', '[']) {
                        n
                    } else {
                        let mut path = index.scope_path(r)?;
                        path.push(n);
                        path.join("::")
                    }
                }
                (Some(n), false) => format!("{keyword} {n}"),
                (None, _) => format!("{keyword} <anonymous>"),
            }
        }
        gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type => match name {
            Some(n) => n,
            None => {
                let inner = name_inner(index, target()?, depth + 1)?;
                let sigil = match tag {
                    gimli::DW_TAG_pointer_type => "*",
                    gimli::DW_TAG_reference_type => "&",
                    _ => "&&",
                };
                if inner.ends_with('*') {
                    format!("{inner}{sigil}")
                } else {
                    format!("{inner} {sigil}")
                }
            }
        },
        gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type | gimli::DW_TAG_restrict_type => {
            let qualifier = match tag {
                gimli::DW_TAG_const_type => "const",
                gimli::DW_TAG_volatile_type => "volatile",
                _ => "restrict",
            };
            let inner = name_inner(index, target()?, depth + 1)?;
            if inner.ends_with('*') {
                format!("{inner} {qualifier}")
            } else {
                format!("{qualifier} {inner}")
            }
        }
        gimli::DW_TAG_array_type => {
            let element = name_inner(index, target()?, depth + 1)?;
            let mut dims = String::new();
            for child in index.children(r)? {
                if index.die(child)?.tag == gimli::DW_TAG_subrange_type {
                    match subrange_count(index, child)? {
                        Some(n) => dims.push_str(&format!("[{n}]")),
                        None => dims.push_str("[]"),
                    }
                }
            }
            if rust {
                name.unwrap_or_else(|| format!("[{element}; {}]", dims.trim_matches(['[', ']'])))
            } else {
                format!("{element}{dims}")
            }
        }
        gimli::DW_TAG_subroutine_type => name.unwrap_or_else(|| "function".into()),
        _ => match name {
            Some(n) if rust && tag == gimli::DW_TAG_typedef => {
                let mut path = index.scope_path(r)?;
                path.push(n);
                path.join("::")
            }
            Some(n) => n,
            None => "<unnamed type>".into(),
        },
    })
}

fn subrange_count(index: &Index<'_>, r: DieRef) -> Result<Option<u64>, gimli::Error> {
    if let Some(count) = index.udata(r, gimli::DW_AT_count)? {
        return Ok(Some(count));
    }
    let lower = index.udata(r, gimli::DW_AT_lower_bound)?.unwrap_or(0);
    Ok(index.udata(r, gimli::DW_AT_upper_bound)?.and_then(|upper| upper.checked_add(1)?.checked_sub(lower)))
}

/// Size in bytes of the type DIE `r` (`DW_AT_byte_size`, through typedefs
/// and qualifiers; pointers are 8 bytes; arrays multiply out).
pub fn type_size(index: &Index<'_>, r: Option<DieRef>) -> Result<Option<u64>, gimli::Error> {
    size_inner(index, r, 0)
}

fn size_inner(index: &Index<'_>, r: Option<DieRef>, depth: u32) -> Result<Option<u64>, gimli::Error> {
    let Some(r) = r else { return Ok(None) };
    if depth > MAX_DEPTH {
        return Ok(None);
    }
    if let Some(size) = index.udata(r, gimli::DW_AT_byte_size)? {
        return Ok(Some(size));
    }
    let tag = index.die(r)?.tag;
    match tag {
        gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type => {
            Ok(Some(u64::from(index.units[r.unit].unit.encoding().address_size)))
        }
        gimli::DW_TAG_array_type => {
            let element = size_inner(index, index.reference(r, gimli::DW_AT_type)?, depth + 1)?;
            let mut total = element;
            for child in index.children(r)? {
                if index.die(child)?.tag == gimli::DW_TAG_subrange_type {
                    total = match (total, subrange_count(index, child)?) {
                        (Some(t), Some(n)) => t.checked_mul(n),
                        _ => None,
                    };
                }
            }
            Ok(total)
        }
        _ => size_inner(index, index.reference(r, gimli::DW_AT_type)?, depth + 1),
    }
}

/// Whether a value of type `r` holds an `UnsafeCell` in its own bytes (not
/// behind a pointer): `Cell`, `RefCell`, atomics, `Mutex`. Such a value can
/// change without its binding being `mut`. Unknown or too deep: `true`.
pub fn has_interior_mutability(index: &Index<'_>, r: Option<DieRef>) -> Result<bool, gimli::Error> {
    interior_inner(index, r, 0)
}

fn interior_inner(index: &Index<'_>, r: Option<DieRef>, depth: u32) -> Result<bool, gimli::Error> {
    let Some(r) = r else { return Ok(false) };
    if depth > MAX_DEPTH {
        return Ok(true);
    }
    let die = index.die(r)?;
    match die.tag {
        gimli::DW_TAG_pointer_type
        | gimli::DW_TAG_reference_type
        | gimli::DW_TAG_rvalue_reference_type
        | gimli::DW_TAG_base_type
        | gimli::DW_TAG_subroutine_type
        | gimli::DW_TAG_enumeration_type => Ok(false),
        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
            if index.string(r, gimli::DW_AT_name)?.is_some_and(|n| n.starts_with("UnsafeCell<")) {
                return Ok(true);
            }
            members_inner(index, r, depth)
        }
        gimli::DW_TAG_typedef
        | gimli::DW_TAG_const_type
        | gimli::DW_TAG_volatile_type
        | gimli::DW_TAG_array_type
        | gimli::DW_TAG_member
        | gimli::DW_TAG_variant => {
            if interior_inner(index, index.reference(r, gimli::DW_AT_type)?, depth + 1)? {
                return Ok(true);
            }
            members_inner(index, r, depth)
        }
        gimli::DW_TAG_variant_part => members_inner(index, r, depth),
        _ => Ok(true),
    }
}

/// Whether a member (or variant) of `r` holds an `UnsafeCell`.
fn members_inner(index: &Index<'_>, r: DieRef, depth: u32) -> Result<bool, gimli::Error> {
    for child in index.children(r)? {
        let tag = index.die(child)?.tag;
        if matches!(tag, gimli::DW_TAG_member | gimli::DW_TAG_variant_part | gimli::DW_TAG_variant)
            && interior_inner(index, Some(child), depth + 1)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The byte ranges `[offset, offset + size)` of a structure's (or tuple's)
/// members, through typedefs and qualifiers: the bytes a value of the type
/// holds, its padding left out. `None` for other types (scalars, enums,
/// unions) or when a member's place or size is not known.
pub fn member_ranges(index: &Index<'_>, r: Option<DieRef>) -> Result<Option<Vec<(u64, u64)>>, gimli::Error> {
    let mut r = r;
    for _ in 0..MAX_DEPTH {
        let Some(t) = r else { return Ok(None) };
        match index.die(t)?.tag {
            gimli::DW_TAG_typedef | gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => {
                r = index.reference(t, gimli::DW_AT_type)?;
            }
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type => {
                let mut out = Vec::new();
                for child in index.children(t)? {
                    match index.die(child)?.tag {
                        gimli::DW_TAG_member => {
                            let Some(offset) = index.udata(child, gimli::DW_AT_data_member_location)? else {
                                return Ok(None);
                            };
                            let Some(size) = type_size(index, index.reference(child, gimli::DW_AT_type)?)? else {
                                return Ok(None);
                            };
                            out.push((offset, offset + size));
                        }
                        gimli::DW_TAG_variant_part => return Ok(None),
                        _ => {}
                    }
                }
                return Ok(Some(out));
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}
