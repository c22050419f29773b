//! Where a call callback runs: the function's copies in the main binary, the address in each
//! where its arguments are ready, where each argument lives there, and how it returns.
//!
//! **Breakpoint address.** The callback runs once the prologue has put the arguments where the
//! DWARF describes them: at the first line-table row of the function marked `prologue_end`, or
//! else at its second row (the first is the prologue), or else at its first instruction.
//! When that address is also the target of a branch inside the function (a loop starting right
//! after the prologue), it is reached more often than the function is called: the site is then
//! marked `reentered`, and the replayer also breaks at the function's first instruction and runs
//! the callback only at the first arrival after an entry (same stack frame).
//!
//! **Copies.** Every out-of-line copy (a generic function has one per instantiation; all must
//! take arguments of the same types, since one callback receives them). Copies inlined into
//! other functions are not calls: a warning says how many there are.
//!
//! **Return values** (`on_return`): by the x86-64 System V / Rust conventions, from the type's
//! DWARF: nothing for a zero-sized type, `xmm0` for `f32`/`f64`, `rax` up to 8 bytes, `rax` and
//! `rdx` up to 16 bytes, else memory at the address `rax` holds on return.

use crate::function::{self, demangle_legacy, Instance};
use crate::index::{DieRef, Index};
use crate::types::{type_name, type_size};
use crate::variable::variable_location;
use rdb_descriptors::{
    ArgumentDescriptor, ArgumentKind, CallSite, CallTarget, Location, PlacedLocation, ReturnClass, ReturnValue,
};

/// What the source says about one call callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallQuery {
    /// The callback id (argument descriptors' `region`).
    pub id: u32,
    /// The function: a Rust path (`events::vm::Vm::push`, or relative, `Vm::push`, matching any
    /// function whose path ends so), or a C function's name.
    pub function: String,
    /// Callbacks of returns need the return value's class.
    pub returns: bool,
}

/// Where a call callback runs, or why it cannot.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedCall {
    pub target: CallTarget,
    /// The function's arguments at each site's `address` (for `on_call` callbacks).
    pub arguments: Vec<ArgumentDescriptor>,
    pub warnings: Vec<String>,
    /// A problem that makes the callback unusable (the build should fail).
    pub error: Option<String>,
    /// Copies of the function inlined into others (calls there run no function and are not
    /// seen). A function with no site but inlined copies is still the program's.
    pub inlined: usize,
}

/// Locates `query` in the binary `index` describes; `code` reads the binary's bytes at a
/// module-relative address range (for the branch-target check).
pub fn locate_call(
    index: &Index<'_>,
    code: &dyn Fn(u64, u64) -> Option<Vec<u8>>,
    query: &CallQuery,
) -> Result<LocatedCall, gimli::Error> {
    let units: Vec<usize> = (0..index.units.len()).collect();
    let wanted: Vec<&str> = query.function.split("::").map(str::trim).collect();
    let mut instances = function::instances(index, &units, &query.function)?;
    // rustc's DWARF scopes of methods are `{impl#N}`, which match any type: the linkage name
    // (legacy mangling carries the type's path) decides.
    // A trait impl's method is mangled `<Type as Trait>::method`: it is wanted by either path.
    instances.retain(|i| match i.linkage_name.as_deref().and_then(demangle_legacy) {
        Some(path) => impl_paths(&path).iter().any(|path| {
            path.len() >= wanted.len() && path[path.len() - wanted.len()..].iter().zip(&wanted).all(|(p, w)| p == w)
        }),
        None => true,
    });
    let mut warnings = Vec::new();
    let mut concrete = Vec::new();
    let mut inlined = 0;
    for instance in instances {
        let Some(die) = instance.die else {
            concrete.push(instance);
            continue;
        };
        if index.die(die)?.tag == gimli::DW_TAG_inlined_subroutine {
            inlined += 1;
        } else {
            concrete.push(instance);
        }
    }
    let mut paths: Vec<String> = concrete
        .iter()
        .map(|i| i.linkage_name.as_deref().and_then(demangle_legacy).map_or(i.name.clone(), |p| p.join("::")))
        .collect();
    paths.sort();
    paths.dedup();
    let fail = |error: String| LocatedCall {
        target: CallTarget::Program {
            name: query.function.clone(),
            linkage_name: None,
            sites: Vec::new(),
            return_value: None,
        },
        arguments: Vec::new(),
        warnings: Vec::new(),
        error: Some(error),
        inlined: 0,
    };
    if paths.len() > 1 {
        return Ok(fail(format!(
            "`{}` names several functions of the program ({}): write its full path (`crate::...`)",
            query.function,
            paths.join(", ")
        )));
    }
    if inlined > 0 {
        warnings.push(format!(
            "callback {}: `{}` is inlined at {inlined} place(s) of the binary; calls there run no function and are not seen",
            query.id, query.function
        ));
    }
    if concrete.is_empty() {
        let why = if inlined > 0 {
            "every call of it was inlined (build without optimizations, or keep it out of line: Rust \
             `#[inline(never)]`, C `__attribute__((noinline))`)"
                .to_string()
        } else {
            "no such function is in the binary (never called, so not compiled in?)".to_string()
        };
        warnings.push(format!("callback {}: `{}`: {why}; the callback will never run", query.id, query.function));
        let mut located = fail(String::new());
        located.error = None;
        located.warnings = warnings;
        located.inlined = inlined;
        return Ok(located);
    }
    concrete.sort_by_key(|i| i.ranges.iter().map(|r| r.begin).min().unwrap_or(0));

    let mut sites = Vec::new();
    let mut arguments: Vec<ArgumentDescriptor> = Vec::new();
    let mut return_value = None;
    for instance in &concrete {
        let entry = instance.ranges.iter().map(|r| r.begin).min().unwrap_or(0);
        let end = instance.ranges.iter().map(|r| r.end).max().unwrap_or(entry);
        let address = after_prologue(index, instance, entry)?;
        let reentered = address != entry
            && code(entry, end - entry).is_some_and(|bytes| branch_targets(&bytes, entry).contains(&address));
        let (symbol, offset) = index.binary.symbols.lookup(address);
        sites.push(CallSite { entry, address, symbol, offset: offset as u64, reentered });
        let Some(die) = instance.die else {
            warnings.push(format!(
                "callback {}: `{}` has no DWARF description (line tables only?); its arguments cannot be passed",
                query.id, instance.name
            ));
            continue;
        };
        let params = parameters(index, die)?;
        if arguments.is_empty() && sites.len() == 1 {
            for (position, (name, p)) in params.iter().enumerate() {
                let (type_name, size) = crate::variable::variable_type(index, *p)?;
                arguments.push(ArgumentDescriptor {
                    region: query.id,
                    position: position as u32,
                    name: name.clone(),
                    kind: ArgumentKind::Local,
                    type_name,
                    size,
                    locations: Vec::new(),
                });
            }
        } else if params.len() != arguments.len() {
            return Ok(fail(format!(
                "the copies of `{}` take different numbers of arguments; a callback of a generic function is only supported when every instantiation takes the same types",
                query.function
            )));
        }
        for (arg, (name, p)) in arguments.iter_mut().zip(&params) {
            let (type_name, size) = crate::variable::variable_type(index, *p)?;
            if type_name != arg.type_name || size != arg.size {
                return Ok(fail(format!(
                    "the copies of `{}` take argument `{name}` as `{}` and as `{type_name}`; a callback of a generic function is only supported when every instantiation takes the same types",
                    query.function, arg.type_name
                )));
            }
            let location = match variable_location(index, *p, Some(die), address, size)? {
                Ok(l) => l,
                Err(why) => {
                    warnings.push(format!(
                        "callback {}: argument `{name}` of `{}` at {address:#x}: {why}; it is passed as optimized out",
                        query.id, instance.name
                    ));
                    Location::OptimizedOut
                }
            };
            if location == Location::OptimizedOut {
                warnings.push(format!(
                    "callback {}: argument `{name}` of `{}` is optimized out at {address:#x}; a callback taking it will not run there",
                    query.id, instance.name
                ));
            }
            arg.locations.push(PlacedLocation { address, location, type_name: None, size: None });
        }
        if query.returns && return_value.is_none() {
            return_value = Some(return_value_of(index, die)?);
        }
    }
    let first = &concrete[0];
    Ok(LocatedCall {
        target: CallTarget::Program {
            name: first.linkage_name.as_deref().and_then(demangle_legacy).map_or(first.name.clone(), |p| p.join("::")),
            linkage_name: first.linkage_name.clone(),
            sites,
            return_value,
        },
        arguments,
        warnings,
        error: None,
        inlined,
    })
}

/// Where the arguments are ready: the first `prologue_end` row of the function, else its
/// second row, else its first instruction.
fn after_prologue(index: &Index<'_>, instance: &Instance, entry: u64) -> Result<u64, gimli::Error> {
    let lines = index.lines(instance.unit)?;
    let inside = |a: u64| instance.ranges.iter().any(|r| r.begin <= a && a < r.end);
    let mut rows: Vec<_> = lines.rows.iter().filter(|r| inside(r.address)).collect();
    rows.sort_by_key(|r| r.address);
    if let Some(r) = rows.iter().find(|r| r.prologue_end) {
        return Ok(r.address);
    }
    Ok(rows.iter().map(|r| r.address).find(|&a| a > entry).unwrap_or(entry))
}

/// The near branch targets of the instructions in `bytes` (code at `address`).
fn branch_targets(bytes: &[u8], address: u64) -> Vec<u64> {
    use iced_x86::{Decoder, DecoderOptions, FlowControl};
    let mut out = Vec::new();
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    while decoder.can_decode() {
        let instruction = decoder.decode();
        if matches!(instruction.flow_control(), FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch) {
            out.push(instruction.near_branch_target());
        }
    }
    out
}

/// The formal parameters of a subprogram, in order, with their names.
fn parameters(index: &Index<'_>, die: DieRef) -> Result<Vec<(String, DieRef)>, gimli::Error> {
    let mut out = Vec::new();
    for child in index.children(die)? {
        if index.die(child)?.tag == gimli::DW_TAG_formal_parameter {
            let name = index.name(child)?.unwrap_or_else(|| format!("#{}", out.len()));
            out.push((name, child));
        }
    }
    Ok(out)
}

/// How a subprogram returns its value.
fn return_value_of(index: &Index<'_>, die: DieRef) -> Result<ReturnValue, gimli::Error> {
    let ty = match index.inherited(die, gimli::DW_AT_type)? {
        Some((owner, _)) => index.reference(owner, gimli::DW_AT_type)?,
        None => None,
    };
    let name = if ty.is_some() { type_name(index, ty)? } else { "()".to_string() };
    let size = type_size(index, ty)?.unwrap_or(0);
    let class = if size == 0 {
        ReturnClass::None
    } else if is_float(index, ty)? {
        ReturnClass::Xmm0
    } else if size <= 8 {
        ReturnClass::Rax
    } else if size <= 16 {
        ReturnClass::RaxRdx
    } else {
        ReturnClass::Memory
    };
    Ok(ReturnValue { type_name: name, size, class })
}

/// Whether the type is a floating-point base type (through typedefs and qualifiers).
fn is_float(index: &Index<'_>, mut ty: Option<DieRef>) -> Result<bool, gimli::Error> {
    for _ in 0..16 {
        let Some(r) = ty else { return Ok(false) };
        match index.die(r)?.tag {
            gimli::DW_TAG_base_type => {
                return Ok(matches!(
                    index.attr(r, gimli::DW_AT_encoding)?,
                    Some(gimli::AttributeValue::Encoding(gimli::DW_ATE_float))
                ))
            }
            gimli::DW_TAG_typedef | gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => {
                ty = index.reference(r, gimli::DW_AT_type)?;
            }
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// The paths a demangled function path answers to: itself, or for a method of an impl
/// (`<app::Counter as app::Scorer>`, `<app::Stack<T>>`, then the method), the self type's path
/// (generic arguments left out) and the trait's, each followed by the method.
fn impl_paths(path: &[String]) -> Vec<Vec<String>> {
    let Some((first, rest)) = path.split_first() else { return vec![Vec::new()] };
    let Some(inner) = first.strip_prefix('<').and_then(|f| f.strip_suffix('>')) else {
        return vec![path.to_vec()];
    };
    // ` as ` at nesting depth 0 splits the self type from the trait.
    let mut depth = 0i32;
    let mut split = None;
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            _ if depth == 0 && inner[i..].starts_with(" as ") => {
                split = Some(i);
                break;
            }
            _ => {}
        }
    }
    let parts = match split {
        Some(i) => vec![&inner[..i], &inner[i + 4..]],
        None => vec![inner],
    };
    parts
        .into_iter()
        .map(|part| {
            let bare = part.find('<').map_or(part, |i| &part[..i]);
            let mut out: Vec<String> = bare.split("::").map(|s| s.trim().to_string()).collect();
            out.extend(rest.iter().cloned());
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{branch_targets, impl_paths};

    #[test]
    fn a_trait_impls_method_answers_to_the_type_and_the_trait() {
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            impl_paths(&path(&["<app::stats::Counter as app::stats::Scorer>", "score"])),
            [path(&["app", "stats", "Counter", "score"]), path(&["app", "stats", "Scorer", "score"])]
        );
        assert_eq!(
            impl_paths(&path(&["<app::Stack<alloc::vec::Vec<u8>> as core::fmt::Display>", "fmt"])),
            [path(&["app", "Stack", "fmt"]), path(&["core", "fmt", "Display", "fmt"])]
        );
        assert_eq!(impl_paths(&path(&["<app::Stack<T>>", "push"])), [path(&["app", "Stack", "push"])]);
        assert_eq!(impl_paths(&path(&["app", "vm", "Vm", "push"])), [path(&["app", "vm", "Vm", "push"])]);
    }

    #[test]
    fn a_loop_back_to_the_start_is_seen() {
        // 0x1000: nop; 0x1001: jmp 0x1000 (eb fd)
        assert_eq!(branch_targets(&[0x90, 0xeb, 0xfd], 0x1000), vec![0x1000]);
        // call is not a branch target of the function's own flow.
        assert!(branch_targets(&[0xe8, 0, 0, 0, 0], 0x1000).is_empty());
    }
}

/// A static a memory callback watches: symbol, module-relative address, size, type name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedStatic {
    pub symbol: String,
    pub address: u64,
    pub size: u64,
    pub type_name: String,
}

/// The static `path` (`events::bank::AUDITED`, C `head`), or why it cannot be watched.
pub fn locate_static(index: &Index<'_>, path: &str) -> Result<Result<WatchedStatic, String>, gimli::Error> {
    Ok(locate_static_die(index, path)?.map(|(s, _)| s))
}

/// [`locate_static`], with the static's variable DIE (for its type).
pub fn locate_static_die(
    index: &Index<'_>,
    path: &str,
) -> Result<Result<(WatchedStatic, DieRef), String>, gimli::Error> {
    let search = crate::variable::find_static(index, path, &[])?;
    let Some(found) = search.found.first() else {
        return Ok(Err(match search.rejected {
            Some(why) => format!("`{path}` cannot be watched: {why}"),
            None => format!("no static `{path}` with a fixed address in the DWARF (removed as unused?)"),
        }));
    };
    if search.found.len() > 1 {
        return Ok(Err(format!("`{path}` names {} statics: write its full path", search.found.len())));
    }
    let (type_name, size) = crate::variable::variable_type(index, found.die)?;
    match &found.location {
        Location::Symbol { symbol, address, .. } => {
            Ok(Ok((WatchedStatic { symbol: symbol.clone(), address: *address, size, type_name }, found.die)))
        }
        other => Ok(Err(format!("`{path}` is not at a fixed address ({other:?})"))),
    }
}
