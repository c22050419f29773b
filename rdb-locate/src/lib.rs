//! Reads the main binary's DWARF to compute rdb descriptors (code and
//! argument locations).
//!
//! Start at [`locate`]: give it the main binary and one [`RegionSite`] per
//! debug region (what the extractor knows from the source: the anchor
//! statement, the enclosing function, the region's arguments), and it
//! returns the function and argument descriptors of `rdb-descriptors`.
//!
//! How it works, module by module:
//! - [`loader`]: reads the ELF file (sections, symbol table, unwind tables);
//!   the only module doing I/O.
//! - `index`: per-unit DIE trees and line tables, parsed lazily on first use.
//! - `function`: the copies of the enclosing function (out-of-line,
//!   monomorphised, inlined) and the anchor's address in each.
//! - `variable`: locals by lexical scope, statics by path, and their
//!   locations at an address.
//! - [`eval`]: drives gimli's expression evaluator against a [`eval::Machine`]
//!   (registers + memory); `symbolic` runs it on a symbolic machine to
//!   obtain descriptor [`Location`]s.
//! - `types`: type names and sizes.
//! - [`build`]: what an executable tells about its build, and why a rebuilt
//!   binary differs from a recorded one.
//!
//! # What the descriptors mean, precisely
//!
//! **Code location.** For each copy of the enclosing function (the
//! out-of-line subprogram, each monomorphised copy, each inlined copy, the
//! closure holding the region), and in it for each copy of the anchor
//! statement's code that an optimizer duplicated without DWARF of its own
//! (unrolled loops, duplicated tails: see `function::code_addresses` for how
//! copies are told from one statement's code split in pieces), the region
//! runs at the lowest address of an
//! `is_stmt` line-table row of the anchor's file and line, among the rows
//! whose column is at or after the anchor's column. Not "the row with the
//! exact column": rustc and clang give a statement's sub-expressions (which
//! run first) later columns than the statement itself, so the exact-column
//! row is often in the middle of the statement (measured on
//! `total += c * (i as i64);`: the column-13 row comes after the multiply).
//! Rows of earlier statements on the same line have smaller columns and are
//! left out. When no `is_stmt` row qualifies, any row of the line does; when
//! the line has no row in that copy but callees inlined at it
//! (`DW_AT_call_line`, e.g. `STEPS.fetch_add(1, ..)` or a `for` loop's
//! `next()`), the region runs at the first instruction of each call of the
//! lowest such column (one per copy of the statement); otherwise the nearest
//! later line with code is used and a warning says so (a region that ends a loop body whose closing
//! brace has no code then runs after the loop: put such a region before the
//! body's last statement instead). If some copy has code on the anchor line
//! itself, copies that would only use a later line are dropped.
//!
//! **Function names.** `run`, `Vm::run`, `app::Vm::run`, `largest` (any
//! generic instance), `Vm::fmt` (trait impls: rustc's `{impl#N}` scope
//! matches any type name). Line-tables-only DWARF has no scopes (functions
//! match by name) and omits functions nothing is inlined into (they are found
//! in the ELF symbol table: C names, or Rust legacy-mangled names demangled).
//!
//! **Locals.** The innermost `DW_TAG_lexical_block` of the copy containing
//! the address that declares the name, walking outward; among several
//! declarations in one scope the latest `DW_AT_decl_line` at or before the
//! anchor line. If no scope around the address declares it (optimised block
//! ranges), any declaration in the copy; if only the abstract origin of an
//! inlined copy declares it, it is optimised out there.
//!
//! **Locations.** The variable's expression (or its location-list entry at
//! the address) is evaluated symbolically (see `symbolic`): `register`,
//! `stack` (base register + offset; `DW_OP_fbreg` resolves through
//! `DW_AT_frame_base`, and `DW_OP_call_frame_cfa` through the CFA rule of
//! `.eh_frame`/`.debug_frame` at that address), `symbol` (+ offset),
//! `pieces`, `implicit` (constants, `DW_AT_const_value`), `computed` (a
//! register plus a constant, `DW_OP_bregN k; DW_OP_stack_value`),
//! `entry_value` (`DW_OP_entry_value(DW_OP_regN)`: the register at the
//! function's entry, kept by the replayer per call) and `optimized_out`.
//! Where a Rust parameter bound without `mut` has no location at the
//! address (or only part of one), its location at the function's entry is
//! used as an `entry_value` (its value cannot have changed; not for types
//! holding an `UnsafeCell`, nor for copies inlined elsewhere). Values the
//! descriptor format cannot express (any other computation marked
//! `DW_OP_stack_value`, computations on entry values, TLS, implicit
//! pointers) are passed as `optimized_out` with a warning naming the
//! variable, the region, the address and the reason.
//!
//! **Statics.** A `DW_TAG_variable` whose name and enclosing scopes match the
//! path (`app::COUNTER`, `crate::COUNTER`, C `counter`, a C function-local
//! static by its name) and whose location is a fixed address, in the units
//! of the region's file first; the ELF symbol covering it gives
//! `symbol + offset`.

pub mod build;
mod calls;
mod cfg;
mod code;
mod copies;
mod coroutine;
pub mod eval;
mod function;
mod identity;
mod index;
mod joins;
pub mod loader;
mod module;
mod place;
mod reader;
mod stale;
mod symbolic;
mod twin;
mod types;
mod variable;

use rdb_descriptors::{
    ArgumentDescriptor, ArgumentDescriptors, ArgumentKind, BinaryIdentity, CodeLocation, DebugEntry, EnclosingFunction,
    FunctionDescriptor, FunctionDescriptors, Language, Location, PlacedLocation, Register, SourceLocation,
    UnservedCopy,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use calls::{CallQuery, LocatedCall, WatchedStatic};
pub use function::matches_function;
pub use identity::{binary_identity, check_same_code, debug_info, DebugInfo, TwinError};
pub use module::{patch_entry_ids, region_table, TableEntry};
pub use place::{is_static_path, Place, PlaceError, PlaceStep};
pub use twin::{prove_twin, ProvenFunction, TwinLayoutError, TwinMap};

/// What the source side knows about one debug region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionSite {
    pub region: u32,
    /// `rdb_begin` in the user's file.
    pub begin: SourceLocation,
    /// `rdb_end` in the user's file.
    pub end: SourceLocation,
    /// First statement after the region in the stripped source (path as the
    /// DWARF shows it: the user's original path, possibly relative to the
    /// compilation directory, e.g. `src/main.rs`); the block's closing brace
    /// if the region ends its block.
    pub anchor: SourceLocation,
    /// Enclosing function as written (`run`, `Vm::run`, C `main`).
    pub function: String,
    /// The region's arguments, in argv order.
    pub arguments: Vec<ArgumentSite>,
    /// The anchor is the closing brace of the region's block (the region is
    /// the block's last statement). Then a later line is never used in its
    /// place: the code after a block runs after the loop, or also when the
    /// branch was not taken, so the region would run at the wrong place.
    pub ends_block: bool,
    /// When the region ends its block: the first and last lines (stripped source) of the
    /// statement before it. Where the closing brace has no code of its own (the end of a loop
    /// body in a dev build), the region runs where control leaves that statement's code.
    pub last_statement: Option<(u32, u32)>,
    /// When the anchor lies after the region's block (a C region that ends a
    /// loop body runs before the loop's step): the closing brace of that
    /// block in the stripped source. Variables the anchor's line does not see
    /// yet (the step's line precedes the body's declarations) are looked up
    /// there; only frame slots, which hold for the whole function, are taken.
    pub block_end: Option<SourceLocation>,
    /// The closures and `async` bodies the region is written in, outermost
    /// first (Rust; empty for a region in a function's own body). Their code
    /// is a function of its own (`{closure#N}`, `{async_block#N}`,
    /// `{async_fn#N}`): the region runs in the copies of the innermost one
    /// declared at that line, never in the enclosing function's code that
    /// happens to share the anchor's line.
    pub bodies: Vec<Body>,
    /// The region is the first statement of its function's body (or of the
    /// innermost closure's): each call runs it once, before anything else
    /// of the body. Then a copy's entry is the region's point in that copy
    /// when no anchor row is (see `copies`).
    pub first_in_body: bool,
    /// The region is inside a loop of that body: it runs once per
    /// iteration, so a copy whose only location is in no loop of the copy's
    /// code (the optimizer fully unrolled the loop without rows for each
    /// iteration, or turned it into a `memcpy`) cannot serve it.
    pub in_loop: bool,
    /// The line of the `}` that closes the region's block, when known: code of a later
    /// line runs after the block (after the loop, or also when the `if` is not taken), so it
    /// never stands in for an anchor without code of its own.
    pub block_close_line: Option<u32>,
    /// The anchor statement is a loop (Rust `for`, `while`, `loop`): its first and last lines.
    /// A location on a cycle of that loop's own code (the header line had no code and a line of
    /// the loop stood in) would run the region per iteration: the copies pass moves it to the
    /// loop statement's first code, or reports the copy (see `copies`).
    pub before_loop: Option<(u32, u32)>,
}

/// A closure or `async` body around a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body {
    pub kind: BodyKind,
    /// Line (in the stripped source) where it starts: its `DW_AT_decl_line`.
    pub line: u32,
}

/// What kind of body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Closure,
    AsyncBlock,
    AsyncFn,
}

/// One argument of a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentSite {
    pub name: String,
    pub kind: ArgumentKind,
    /// For statics: the path (Rust `app::COUNTER`; C: the global's name).
    /// `None` means `name`. A static no variable matches but a function
    /// symbol of that name does is passed by the function's address (C
    /// regions may call the program's functions through their arguments).
    pub static_path: Option<String>,
    /// A local of an `async` body: the `.await` that can suspend the future
    /// between the variable's binding and the region (Rust front end). The
    /// variable then lives in the future only if the program keeps it
    /// across that `.await`; a frame slot described for its whole scope
    /// (dev builds: an unsaved local's stack slot in `poll`'s frame) holds
    /// a stale value once the future is resumed, and is not served.
    pub after_await: Option<SourceLocation>,
    /// Lines (of the anchor's file) of later statements in the region's
    /// block that may change the variable. Where the anchor's line has no
    /// code and a later line stands in, a change on a line in between may
    /// already have happened there: the variable is not served.
    pub written_after: Vec<u32>,
    /// The variable's value never changes in its scope: a Rust binding
    /// without `mut` (no binding of that name in the function is `mut`).
    /// A parameter whose location the optimizer dropped at the region is
    /// then the value it had on entry to the function (kept by the replayer
    /// at the entry, descriptor class `entry_value`), unless its type holds
    /// an `UnsafeCell` in its own bytes. Always false for C.
    pub unchanged: bool,
    /// No statement of the function before the region (in the source text)
    /// may change the variable (Rust: no assignment, compound assignment,
    /// `&mut` borrow or method call on it; always false for C). Where the
    /// DWARF loses it only at a join of paths that each held it, the value
    /// then cannot have changed between the join and the region (see
    /// `copies`).
    pub unwritten_before: bool,
    /// A static whose address only the region uses (C: `rdb_watch(&x, ..)`): its value may
    /// be held in a register at the region without harm.
    pub address_only: bool,
}

/// The descriptors computed for a set of sites.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// One per site, in site order; `entry` is [`DebugEntry::RegionTable`]
    /// (callers may override it).
    pub functions: Vec<FunctionDescriptor>,
    /// One per site argument, ordered by site then position.
    pub arguments: Vec<ArgumentDescriptor>,
    /// Things the user should know (variables optimised out, regions without
    /// code, ...), one sentence each.
    pub warnings: Vec<String>,
    /// Per function, per code location: the generic arguments of the
    /// instantiation whose code it is, as the DWARF writes them after the
    /// function's name (`<u8>`, `<app::Sq>`; empty when not generic). A
    /// Rust debug module has one debug function per instantiation, found by
    /// the same arguments ([`region_table`]).
    pub instantiations: Vec<Vec<String>>,
}

impl Located {
    /// Moves descriptors computed from a DWARF twin onto the main binary
    /// ([`prove_twin`]): each code location becomes the main binary's
    /// address of the same instruction; a location in a function whose
    /// code is not proven equal is dropped (with its argument locations)
    /// and reported, never served. A symbol location in code (a C function
    /// passed by address) is mapped the same way; a static's address moves
    /// with its section ([`TwinMap::map_data`]).
    pub fn retarget(&mut self, map: &TwinMap) {
        if map.identical {
            return;
        }
        let mut dropped: Vec<(u32, u64)> = Vec::new();
        let mut moved: HashMap<(u32, u64), u64> = HashMap::new();
        for (function, instantiations) in self.functions.iter_mut().zip(self.instantiations.iter_mut()) {
            let region = function.region;
            let mut kept = Vec::new();
            let mut kept_instantiations = Vec::new();
            let old = std::mem::take(instantiations);
            let mut old = old.into_iter();
            for location in function.locations.drain(..) {
                let instantiation = old.next().unwrap_or_default();
                match map.map(location.address) {
                    Ok((address, symbol, offset)) => {
                        moved.insert((region, location.address), address);
                        kept.push(CodeLocation { address, symbol, offset, ..location });
                        kept_instantiations.push(instantiation);
                    }
                    Err(why) => {
                        self.warnings.push(format!(
                            "region {region} ({}): its code at {:#x} in `{}` cannot be served: {why}; the region does \
                             not run there",
                            show(&function.begin),
                            location.address,
                            function.function.name
                        ));
                        dropped.push((region, location.address));
                    }
                }
            }
            for copy in std::mem::take(&mut function.unserved) {
                match map.map(copy.address) {
                    Ok((address, symbol, offset)) => {
                        function.unserved.push(UnservedCopy { address, symbol, offset, ..copy })
                    }
                    // Code not proven identical is reported as such above when it held locations;
                    // a copy where the region cannot run anyway says so too.
                    Err(why) => self.warnings.push(format!(
                        "region {region} ({}): the copy at {:#x} in `{}`, where the region cannot run ({}), cannot be \
                         reported during replay either: {why}",
                        show(&function.begin),
                        copy.address,
                        function.function.name,
                        copy.reason
                    )),
                }
            }
            if kept.is_empty() && function.note.is_none() {
                function.note =
                    Some("no code location is proven identical between the recorded build and its twin".into());
            }
            function.locations = kept;
            *instantiations = kept_instantiations;
        }
        for argument in &mut self.arguments {
            let region = argument.region;
            argument.locations.retain(|p| !dropped.contains(&(region, p.address)));
            for placed in &mut argument.locations {
                if let Some(&address) = moved.get(&(region, placed.address)) {
                    placed.address = address;
                }
                retarget_location(&mut placed.location, map);
            }
        }
    }

    /// Writes the sites' anchors and block ends (`file:line:col` in the lines the DWARF knows:
    /// the stripped source's) in the lines of the user's files, which the user reads, in the
    /// warnings, notes and reasons.
    pub fn in_user_lines(&mut self, sites: &[RegionSite], line_maps: &[rdb_descriptors::LineMap]) {
        let mut shown = Vec::new();
        for site in sites {
            let Some(map) = line_maps.iter().find(|m| m.file == site.begin.file) else { continue };
            for at in std::iter::once(&site.anchor).chain(&site.block_end) {
                let Some(&user) = (at.line as usize).checked_sub(1).and_then(|i| map.lines.get(i)) else { continue };
                let show = |line: u32| format!("{}:{line}:{}", at.file.display(), at.column);
                shown.push((show(at.line), show(user)));
            }
        }
        if shown.is_empty() {
            return;
        }
        // Through placeholders, so that a replacement is never replaced again.
        let rewrite = |text: &mut String| {
            for (k, (stripped, _)) in shown.iter().enumerate() {
                *text = text.replace(stripped, &format!("\u{0}{k}\u{0}"));
            }
            for (k, (_, user)) in shown.iter().enumerate() {
                *text = text.replace(&format!("\u{0}{k}\u{0}"), user);
            }
        };
        self.warnings.iter_mut().for_each(rewrite);
        for function in &mut self.functions {
            function.note.iter_mut().for_each(rewrite);
            function.unserved.iter_mut().for_each(|u| rewrite(&mut u.reason));
        }
    }

    /// The two descriptor files' contents for these results.
    pub fn into_descriptors(
        self,
        language: Language,
        toolchain: String,
        binary: BinaryIdentity,
        debug_module: String,
    ) -> (FunctionDescriptors, ArgumentDescriptors) {
        let mut functions = FunctionDescriptors::new(language, toolchain, binary, debug_module);
        functions.functions = self.functions;
        let mut arguments = ArgumentDescriptors::new();
        arguments.arguments = self.arguments;
        (functions, arguments)
    }
}

fn retarget_location(location: &mut Location, map: &TwinMap) {
    if let Location::EntryValue { entry, value, .. } = location {
        match map.map(*entry) {
            Ok((main, _, _)) => {
                *entry = main;
                retarget_location(value, map);
            }
            Err(why) => {
                *location = Location::Unavailable {
                    reason: format!(
                        "its value on entry to the function is read at the function's first instruction, whose code \
                         is not proven the same in the recorded build ({why})"
                    ),
                };
            }
        }
        return;
    }
    match location {
        Location::Symbol { symbol, offset, address } => {
            if let Ok((main, name, off)) = map.map(*address) {
                *address = main;
                *symbol = name;
                *offset = off as i64;
            } else if let Some(main) = map.map_data(*address) {
                // A static: its section may have moved after grown code.
                *address = main;
            }
        }
        Location::Pieces { pieces } => pieces.iter_mut().for_each(|p| retarget_location(&mut p.location, map)),
        Location::Indirect { pointer, .. } => retarget_location(pointer, map),
        _ => {}
    }
}

/// Why descriptors could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocateError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a binary rdb can read: {reason}")]
    NotElf { path: PathBuf, reason: String },
    #[error(
        "{path} has no debug information rdb can use ({detail}); rdb needs full DWARF to find variables: \
         add `debug = \"full\"` under `[profile.dev]` (or `[profile.release]`, or the profile you record with) \
         in Cargo.toml, or pass `-g` to the C compiler, then rebuild"
    )]
    NoDebugInfo { path: PathBuf, detail: String },
    #[error("malformed DWARF in {path}: {source}")]
    Dwarf { path: PathBuf, source: gimli::Error },
}

/// Computes the descriptors of `sites` from the DWARF of `binary`.
pub fn locate(binary: &Path, sites: &[RegionSite]) -> Result<Located, LocateError> {
    let loaded = loader::Binary::load(binary)?;
    locate_in(&loaded, sites)
}

/// [`locate`] on an already loaded binary.
pub fn locate_in(binary: &loader::Binary, sites: &[RegionSite]) -> Result<Located, LocateError> {
    let dwarf_error = |source| LocateError::Dwarf { path: binary.path.clone(), source };
    let index = index::Index::new(binary).map_err(dwarf_error)?;
    if index.units.is_empty() {
        return Err(LocateError::NoDebugInfo {
            path: binary.path.clone(),
            detail: "its .debug_info has no units".into(),
        });
    }
    // Sites whose files no line table mentions: if that is all of them, the
    // program's own code has no DWARF (only the standard library's).
    let mut missing = Vec::new();
    for site in sites {
        if function::units_with_file(&index, &site.anchor.file).map_err(dwarf_error)?.is_empty() {
            missing.push(site.anchor.file.display().to_string());
        }
    }
    if !sites.is_empty() && missing.len() == sites.len() {
        missing.sort();
        missing.dedup();
        return Err(LocateError::NoDebugInfo {
            path: binary.path.clone(),
            detail: format!(
                "no line table mentions {}: the program's own code was compiled without debug information \
                 (or that path is not the one the compiler saw)",
                missing.join(", ")
            ),
        });
    }
    let mut located =
        Located { functions: Vec::new(), arguments: Vec::new(), warnings: Vec::new(), instantiations: Vec::new() };
    let mut has_variables: HashMap<usize, bool> = HashMap::new();
    for site in sites {
        locate_site(&index, site, &mut located, &mut has_variables).map_err(|e| match e {
            SiteError::Dwarf(source) => dwarf_error(source),
            SiteError::LineTablesOnly => LocateError::NoDebugInfo {
                path: binary.path.clone(),
                detail: format!(
                    "the unit holding `{}` has line tables but no variables, as with `debug = \"line-tables-only\"` \
                     or `debug = \"limited\"`",
                    site.function
                ),
            },
        })?;
    }
    Ok(located)
}

enum SiteError {
    Dwarf(gimli::Error),
    LineTablesOnly,
}

impl From<gimli::Error> for SiteError {
    fn from(e: gimli::Error) -> Self {
        SiteError::Dwarf(e)
    }
}

/// `<u8>` of `app::show<u8>` (the generic arguments after the last path
/// segment's name), empty when there are none.
pub fn generic_arguments(name: &str) -> String {
    let segment = function::last_segment(name);
    segment.find('<').map(|i| segment[i..].to_string()).unwrap_or_default()
}

fn show(location: &SourceLocation) -> String {
    format!("{}:{}:{}", location.file.display(), location.line, location.column)
}

fn locate_site(
    index: &index::Index<'_>,
    site: &RegionSite,
    located: &mut Located,
    has_variables: &mut HashMap<usize, bool>,
) -> Result<(), SiteError> {
    let region = site.region;
    let units = function::units_with_file(index, &site.anchor.file)?;
    let mut note = None;
    let mut fallback_note = None;
    let mut placed: Vec<(function::Instance, u64)> = Vec::new();
    // Code locations where a later line stands in for the anchor's.
    let mut stand_ins: HashMap<u64, u32> = HashMap::new();
    // Locations where the block's last statement ends (its closing brace has no code).
    let mut block_exits: Vec<u64> = Vec::new();
    let mut function = EnclosingFunction { name: site.function.clone(), linkage_name: None };
    let mut unserved: Vec<UnservedCopy> = Vec::new();
    if units.is_empty() {
        note = Some(format!(
            "the DWARF has no line information for {}: the file was not compiled into this binary, or its path differs",
            site.anchor.file.display()
        ));
    } else {
        let instances = function::instances(index, &units, &site.function)?;
        let instances = function::in_body(index, instances, site.bodies.last())?;
        let copies = instances.len();
        let all_instances = instances.clone();
        let mut found = Vec::new();
        for instance in &instances {
            for code in function::code_addresses(index, instance, &site.anchor)? {
                found.push((instance.clone(), code));
            }
        }
        // Copies with code on the anchor's own line win over copies that only
        // have later lines (e.g. the function around a closure holding the region).
        // A C region ending a loop body is anchored at the loop's step; when the step has no
        // code of its own (an unrolled loop), the next line with code is the body's first
        // statement, which runs before each iteration (the first one included), never after.
        // Likewise when the step's line has code only at earlier columns (the loop's
        // condition: clang -O2 gives `e = e->next` no row of its own).
        let in_block = |line: u32| site.block_end.as_ref().is_some_and(|end| line <= end.line);
        let step_without_code = !found.is_empty()
            && found.iter().all(|(_, code)| {
                code.fallback_line.is_some_and(in_block) || (site.block_end.is_some() && code.earlier_column)
            });
        // Code after the region's block is no stand-in for an anchor inside it.
        // (A region ending its block is anchored at the closing brace: handled below.)
        let after_block =
            |line: u32| !site.ends_block && site.block_end.is_none() && site.block_close_line.is_some_and(|c| line > c);
        if !step_without_code && found.iter().any(|(_, code)| code.fallback_line.is_none()) {
            found.retain(|(_, code)| code.fallback_line.is_none());
        } else if !step_without_code && found.iter().any(|(_, code)| code.fallback_line.is_some_and(after_block)) {
            found.retain(|(_, code)| !code.fallback_line.is_some_and(after_block));
            if found.is_empty() {
                note = Some(format!(
                    "the statement after the region ({}) has no code of its own in this build, and the next code \
                     is after the region's block: it runs after the loop, or also when the branch is \
                     not taken, so the region is not placed there (a `break`, `continue` or `return` right after \
                     the region is often only the branch of the `if` around it); put the region before a statement \
                     of its block that still has code, or before the `if`, testing its condition inside the region",
                    show(&site.anchor)
                ));
            }
        } else if site.ends_block || step_without_code {
            found.clear();
            // The closing brace has no code: the region runs where control leaves the code of
            // the block's last statement, in each copy.
            let mut why = None;
            if let Some(lines) = site.last_statement {
                let mut seen: Vec<(Option<index::DieRef>, Vec<gimli::Range>)> = Vec::new();
                for instance in &instances {
                    let key = (instance.die, instance.ranges.clone());
                    if seen.contains(&key) {
                        continue;
                    }
                    seen.push(key);
                    match function::statement_exits(index, instance, &site.anchor.file, lines)? {
                        Ok(exits) => {
                            block_exits.extend(&exits);
                            found.extend(exits.into_iter().map(|address| {
                                (
                                    instance.clone(),
                                    function::CodeAddress { address, fallback_line: None, earlier_column: false },
                                )
                            }))
                        }
                        Err(e) => why = Some(format!("in `{}` {e}", instance.name)),
                    }
                }
                if found.is_empty() && why.is_none() {
                    why = Some(format!("no code of lines {}-{} was found", lines.0, lines.1));
                }
            }
            if found.is_empty() {
                let (what, next) = if site.ends_block {
                    (
                        "the block's closing brace",
                        "the next code runs after the block (after the loop, or also when the branch is not taken)",
                    )
                } else {
                    ("the loop's step", "the next code is the loop body's, which runs before each iteration")
                };
                note = Some(format!(
                    "the region ends its block and {what} ({}) has no code of its own in this build, nor could the \
                     end of the statement before the region be found{}: {next}, so the region is not placed there; \
                     move it before the block's last statement",
                    show(&site.anchor),
                    why.map(|w| format!(" ({w})")).unwrap_or_default()
                ));
            } else if let Some(w) = why {
                located.warnings.push(format!(
                    "region {region} ({}): the region ends its block and the block's closing brace has no code; it \
                     runs where the statement before it ends, except {w}: there it will not run",
                    show(&site.begin)
                ));
            }
        }
        for (instance, code) in found {
            if let Some(line) = code.fallback_line {
                stand_ins.insert(code.address, line);
                let text = format!(
                    "no code for line {} in `{}`; it runs before line {line} at {:#x}",
                    site.anchor.line, instance.name, code.address
                );
                located.warnings.push(format!("region {region}: {text}"));
                fallback_note.get_or_insert(text);
            }
            if !placed.iter().any(|(_, a)| *a == code.address) {
                placed.push((instance, code.address));
            }
        }
        serve_bypasses(index, site, &mut placed, &stand_ins, &mut located.warnings)?;
        judge_copies(index, site, &all_instances, &mut placed, &mut unserved, &mut located.warnings)?;
        if placed.is_empty() && !unserved.is_empty() && note.is_none() {
            note = Some(format!(
                "none of the {} cop{} of `{}` in this binary can run the region (see the build's warnings); \
                 the replay reports each pass through them",
                all_instances.len(),
                if all_instances.len() == 1 { "y" } else { "ies" },
                site.function
            ));
        }
        if placed.is_empty() && note.is_none() {
            let name = &site.function;
            let what = match site.bodies.last() {
                Some(body) => format!(
                    "the {} at line {} in `{name}`",
                    match body.kind {
                        BodyKind::Closure => "closure",
                        BodyKind::AsyncBlock => "`async` block",
                        BodyKind::AsyncFn => "body of `async fn`",
                    },
                    body.line
                ),
                None => format!("`{name}`"),
            };
            let c = matches!(site.anchor.file.extension().and_then(|e| e.to_str()), Some("c" | "h"));
            let keep = match site.bodies.last() {
                Some(_) => "move that body into a function marked `#[inline(never)]`".to_string(),
                None if c => format!("mark `{name}` `__attribute__((noinline))`"),
                None => format!("mark `{name}` `#[inline(never)]`"),
            };
            let (inliner, tail, unoptimized) = if c {
                ("", "a value a function inlined into its caller returns", "an -O0 build")
            } else {
                (
                    " (rustc's MIR inlining; a closure passed to `sort_by` or `map` is inlined into the library \
                     code calling it)",
                    "a tail expression such as `Ok(next)` of a function inlined into its caller",
                    "a dev build",
                )
            };
            note = Some(if copies == 0 {
                format!(
                    "{what} has no code of its own in this binary: it is never called (or, if generic, never \
                     instantiated), or the optimizer inlined it into its callers without keeping debug information \
                     for the inlined copies{inliner} or removed it; to run the region in an optimized build, \
                     {keep}, rebuild and record again ({unoptimized} runs it as written)"
                )
            } else {
                format!(
                    "none of the {copies} cop{} of {what} in this binary has code from {} or later lines: the \
                     optimizer removed that code or merged it with other code (its result was not used, or it \
                     was computed at compile time; {tail} has no code of its own when its value stays in \
                     registers); put the region where the program still does \
                     something (before the statement that computes that value), use in the program a value the \
                     region reads, or {keep}",
                    if copies == 1 { "y" } else { "ies" },
                    show(&site.anchor)
                )
            });
        }
    }
    placed.sort_by_key(|(_, a)| *a);
    if note.is_none() {
        note = fallback_note;
    }
    if let Some((first, _)) = placed.first() {
        function = EnclosingFunction { name: first.name.clone(), linkage_name: first.linkage_name.clone() };
    }
    if placed.is_empty() {
        if let Some(n) = &note {
            located.warnings.push(format!("region {region} ({}): {n}; it will never run", show(&site.begin)));
        }
    }
    let locations: Vec<CodeLocation> = placed
        .iter()
        .map(|(_, address)| {
            let (symbol, offset) = index.binary.symbols.lookup(*address);
            CodeLocation { address: *address, symbol, offset: offset as u64, entry_id: None }
        })
        .collect();
    located.instantiations.push(placed.iter().map(|(instance, _)| generic_arguments(&instance.name)).collect());
    located.functions.push(FunctionDescriptor {
        region,
        entry: DebugEntry::RegionTable,
        begin: site.begin.clone(),
        end: site.end.clone(),
        anchor: site.anchor.clone(),
        function,
        locations,
        note,
        unserved,
    });

    for (position, argument) in site.arguments.iter().enumerate() {
        let descriptor = match argument.kind {
            ArgumentKind::Local => {
                locate_local(index, site, argument, &placed, &stand_ins, &block_exits, has_variables)?
            }
            ArgumentKind::Static => locate_static(index, site, argument, &placed, &stand_ins, &units)?,
            ArgumentKind::Frame => locate_frame(index, site, &placed),
        };
        let (type_name, size, locations, warnings) = descriptor;
        located.warnings.extend(warnings);
        located.arguments.push(ArgumentDescriptor {
            region,
            position: position as u32,
            name: argument.name.clone(),
            kind: argument.kind,
            type_name,
            size,
            locations,
        });
    }
    Ok(())
}

/// Serves the paths of each copy's code that skip its locations (see
/// `cfg`): a location at the path's jump where the region's values are
/// those at the anchor and only that path passes; otherwise a warning with
/// the address: the region does not run on that path.
fn serve_bypasses(
    index: &index::Index<'_>,
    site: &RegionSite,
    placed: &mut Vec<(function::Instance, u64)>,
    stand_ins: &HashMap<u64, u32>,
    warnings: &mut Vec<String>,
) -> Result<(), gimli::Error> {
    let mut served = Vec::new();
    let mut done: Vec<usize> = Vec::new();
    for (n, (instance, _)) in placed.iter().enumerate() {
        if done.contains(&n) {
            continue;
        }
        let same = |other: &function::Instance| other.die == instance.die && other.ranges == instance.ranges;
        let mine: Vec<usize> = (n..placed.len()).filter(|&m| same(&placed[m].0)).collect();
        done.extend(&mine);
        let addresses: Vec<u64> = mine.iter().map(|&m| placed[m].1).collect();
        // Copies placed at a later line standing in for the anchor's share it.
        let line = stand_ins.get(&addresses[0]).copied().unwrap_or(site.anchor.line);
        for bypass in function::bypasses(index, instance, &addresses, &site.anchor, line)? {
            match bypass.servable {
                Ok(()) => served.push((instance.clone(), bypass.from)),
                Err(why) => warnings.push(format!(
                    "region {} ({}): in `{}` the optimizer skips the code of {} on a path: at {:#x} the code of line {} \
                     jumps straight to line {} at {:#x}; the region cannot run on that path ({why}), so it will not \
                     run there; anchor the region on a statement that does work on every path",
                    site.region,
                    show(&site.begin),
                    instance.name,
                    show(&site.anchor),
                    bypass.from,
                    bypass.from_line,
                    bypass.to_line,
                    bypass.to,
                )),
            }
        }
    }
    for (instance, address) in served {
        if !placed.iter().any(|(_, a)| *a == address) {
            placed.push((instance, address));
        }
    }
    Ok(())
}

/// Judges each copy of the region's function ([`copies::judge`]): a copy whose anchor rows
/// do not run the region once per call runs it at its entry, or, when no point of the copy
/// can, is reported (build warning, `unserved` descriptor) and loses its locations.
fn judge_copies(
    index: &index::Index<'_>,
    site: &RegionSite,
    instances: &[function::Instance],
    placed: &mut Vec<(function::Instance, u64)>,
    unserved: &mut Vec<UnservedCopy>,
    warnings: &mut Vec<String>,
) -> Result<(), gimli::Error> {
    let same = |a: &function::Instance, b: &function::Instance| a.die == b.die && a.ranges == b.ranges;
    for instance in instances {
        let mine: Vec<u64> = placed.iter().filter(|(i, _)| same(i, instance)).map(|(_, a)| *a).collect();
        let verdict = copies::judge(index, site, instance, &mine)?;
        if verdict == copies::Verdict::Keep {
            continue;
        }
        placed.retain(|(i, _)| !same(i, instance));
        let frame = |address: u64| index.binary.symbols.lookup(address);
        match verdict {
            copies::Verdict::Keep => {}
            copies::Verdict::AtEntry(address) => {
                if !placed.iter().any(|(_, a)| *a == address) {
                    placed.push((instance.clone(), address));
                }
            }
            copies::Verdict::At(addresses) => {
                for address in addresses {
                    if !placed.iter().any(|(_, a)| *a == address) {
                        placed.push((instance.clone(), address));
                    }
                }
            }
            copies::Verdict::Unserved { at, reason } => {
                let (symbol, offset) = frame(at);
                warnings.push(format!(
                    "region {} ({}): the copy of `{}` at {at:#x} (in `{:#}`) cannot run it: {reason}; the replay \
                     reports each pass there as a region that could not run",
                    site.region,
                    show(&site.begin),
                    instance.name,
                    rustc_demangle::demangle(&symbol),
                ));
                if !unserved.iter().any(|u| u.address == at) {
                    unserved.push(UnservedCopy { address: at, symbol, offset: offset as u64, reason });
                }
            }
        }
    }
    unserved.sort_by_key(|u| u.address);
    Ok(())
}

type ArgumentResult = (String, u64, Vec<PlacedLocation>, Vec<String>);

fn unit_has_variables(index: &index::Index<'_>, unit: usize) -> Result<bool, gimli::Error> {
    let dies = index.dies(unit)?;
    for die in dies {
        if matches!(die.tag, gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter | gimli::DW_TAG_base_type) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn locate_local(
    index: &index::Index<'_>,
    site: &RegionSite,
    argument: &ArgumentSite,
    placed: &[(function::Instance, u64)],
    stand_ins: &HashMap<u64, u32>,
    block_exits: &[u64],
    has_variables: &mut HashMap<usize, bool>,
) -> Result<ArgumentResult, SiteError> {
    let region = site.region;
    let name = &argument.name;
    let mut type_info: Option<(String, u64)> = None;
    let mut locations = Vec::new();
    let mut warnings = Vec::new();
    for (instance, address) in placed {
        let unit = instance.unit;
        let full = match has_variables.get(&unit) {
            Some(v) => *v,
            None => {
                let v = unit_has_variables(index, unit)?;
                has_variables.insert(unit, v);
                v
            }
        };
        if !full {
            return Err(SiteError::LineTablesOnly);
        }
        let mut found = variable::find_local(index, instance, *address, name, site.anchor.line)?;
        if found.is_none() {
            if let Some(block_end) = &site.block_end {
                found = frame_slot_at_block_end(index, instance, *address, name, block_end.line)?;
            }
        }
        let location = match found {
            None => {
                warnings.push(format!(
                    "region {region}: no variable `{name}` is visible in `{}` at {} ({address:#x}); it is passed as optimized out",
                    instance.name,
                    show(&site.anchor)
                ));
                (Location::OptimizedOut, None)
            }
            Some(found) => {
                // Where a block's last statement ends, the code is often the enclosing scope's
                // (a loop's jump back to its head): the block's variables are expected there.
                if found.outside_scope && !block_exits.contains(address) {
                    warnings.push(format!(
                        "region {region}: the DWARF scopes of `{}` at {address:#x} do not declare `{name}`; using its declaration elsewhere in the function",
                        instance.name
                    ));
                }
                let (type_name, size) = variable::variable_type(index, found.die)?;
                let described = if found.only_in_origin {
                    Ok(Location::OptimizedOut)
                } else {
                    variable::variable_location(index, found.die, instance.frame_owner, *address, size)?
                };
                let stale = match (&argument.after_await, &described) {
                    (Some(at), Ok(l)) if reads_frame(l) && variable::whole_scope_location(index, found.die)? => {
                        Some(at)
                    }
                    _ => None,
                };
                let changed = changed_before_stand_in(site, argument, instance, *address, stand_ins, &mut warnings);
                let location = match described {
                    _ if changed.is_some() => changed.expect("checked"),
                    _ if stale.is_some() => {
                        let at = show(stale.expect("checked"));
                        warnings.push(format!(
                            "region {region}: `{name}` is not available in `{}` at {address:#x}: the program does not \
                             keep it across the `.await` at {at} (its slot in the frame of `poll` is stale once the \
                             future is resumed); use it after that `.await` in the program, or copy what the region \
                             needs into a `#[debug_only]` static before it",
                            instance.name
                        ));
                        Location::Unavailable {
                            reason: format!(
                                "not kept across the `.await` at {at} (the program does not use it after that point)"
                            ),
                        }
                    }
                    Ok(l) if matches!(l, Location::OptimizedOut) || incomplete(index, found.die, &l, size)? => {
                        let recovered =
                            match entry_value_of_parameter(index, instance, found.die, argument, *address, size)? {
                                Ok(l) => Ok(l),
                                Err(why) => {
                                    match coroutine::saved_local(index, instance, found.die, name, *address, size)? {
                                        Ok(l) => Ok(l),
                                        Err(more) if matches!(l, Location::OptimizedOut) => {
                                            match held_across_join(
                                                index, site, instance, found.die, argument, *address, size,
                                            )? {
                                                Ok(l) => Ok(l),
                                                Err(last) => Err(format!("{why}{more}{last}")),
                                            }
                                        }
                                        Err(more) => Err(format!("{why}{more}")),
                                    }
                                }
                            };
                        match recovered {
                            Ok(l) => l,
                            Err(why) => {
                                let partly = if matches!(l, Location::OptimizedOut) { "" } else { "partly " };
                                warnings.push(format!(
                                    "region {region} ({}): variable `{name}` is {partly}optimized out in `{}` at \
                                     {address:#x}{why}",
                                    show(&site.begin),
                                    instance.name
                                ));
                                Location::OptimizedOut
                            }
                        }
                    }
                    Ok(l) => l,
                    Err(why) => {
                        warnings.push(format!(
                                "region {region}: variable `{name}` in `{}` at {address:#x}: {why}; it is passed as optimized out",
                                instance.name
                            ));
                        Location::OptimizedOut
                    }
                };
                // Instantiations of generic code give the variable other
                // types: each location says its own when it differs.
                let own = match &type_info {
                    None => {
                        type_info = Some((type_name, size));
                        None
                    }
                    Some((first, first_size)) if *first != type_name || *first_size != size => Some((type_name, size)),
                    Some(_) => None,
                };
                (location, own)
            }
        };
        let (location, own) = location;
        let (type_name, size) = own.map_or((None, None), |(t, s)| (Some(t), Some(s)));
        locations.push(PlacedLocation { address: *address, location, type_name, size });
    }
    let (type_name, size) = type_info.unwrap_or_else(|| ("<unknown>".into(), 0));
    Ok((type_name, size, locations, warnings))
}

/// A parameter the optimizer dropped at `address` whose value never changes
/// (`argument.unchanged`): the value it had on entry to the function, where
/// its location list places it. `Err` says (after a `;`) why that cannot
/// be, or is empty when the variable is no such parameter.
fn entry_value_of_parameter(
    index: &index::Index<'_>,
    instance: &function::Instance,
    die: index::DieRef,
    argument: &ArgumentSite,
    address: u64,
    size: u64,
) -> Result<Result<Location, String>, gimli::Error> {
    if index.die(die)?.tag != gimli::DW_TAG_formal_parameter {
        return Ok(Err("; it is not a parameter, whose value on entry could stand in".into()));
    }
    if !argument.unchanged {
        return Ok(Err(if argument.kind == ArgumentKind::Local && site_is_c(index, die) {
            "; a C parameter may have changed since the entry, and the DWARF does not say it has not".into()
        } else {
            format!("; `{}` is bound `mut` in the function: its value on entry may have changed", argument.name)
        }));
    }
    let (Some(own), Some(owner)) = (instance.die, instance.frame_owner) else { return Ok(Err(String::new())) };
    if own != owner {
        return Ok(Err(
            "; it is a parameter of a copy inlined into another function, whose entry is not its own".into()
        ));
    }
    if interior_mutable(index, die)? {
        return Ok(Err("; its type holds an `UnsafeCell` (it may change without `mut`)".into()));
    }
    let Some(entry) = variable::entry_address(index, owner)? else {
        return Ok(Err("; the function's entry is not known".into()));
    };
    let Some(cfa) = index.binary.cfa_rule(address) else {
        return Ok(Err("; the unwind tables give no frame address here to tell calls apart".into()));
    };
    Ok(match variable::variable_location(index, die, Some(owner), entry, size)? {
        Ok(value @ (Location::Register { .. } | Location::Stack { .. } | Location::Pieces { .. }))
            if !partly_missing(&value) && !incomplete(index, die, &value, size)? =>
        {
            Ok(Location::EntryValue {
                entry,
                value: Box::new(value),
                frame: rdb_descriptors::FrameAddress { register: Register::x86_64(cfa.register.0), offset: cfa.offset },
            })
        }
        _ => Err("; not even on entry to the function".into()),
    })
}

/// A local the DWARF lost where paths join, in the register holding it on
/// every path (`joins`), when no statement before the region may change it.
fn held_across_join(
    index: &index::Index<'_>,
    site: &RegionSite,
    instance: &function::Instance,
    die: index::DieRef,
    argument: &ArgumentSite,
    address: u64,
    size: u64,
) -> Result<Result<Location, String>, gimli::Error> {
    if !argument.unwritten_before || interior_mutable(index, die)? {
        return Ok(Err(String::new()));
    }
    let lines = function::LineLookup::new(index, instance, &site.anchor.file)?;
    joins::held_across_join(index, instance, die, address, size, &lines)
}

/// Whether variable `die`'s type holds an `UnsafeCell` (its value may change
/// without `mut`).
fn interior_mutable(index: &index::Index<'_>, die: index::DieRef) -> Result<bool, gimli::Error> {
    let ty = match index.inherited(die, gimli::DW_AT_type)? {
        Some((holder, _)) => index.reference(holder, gimli::DW_AT_type)?,
        None => None,
    };
    types::has_interior_mutability(index, ty)
}

/// Whether a split value's pieces leave part of the value out: a piece
/// optimized out, or bytes of a member (of `die`'s type; without members,
/// any of its `size` bytes) that no piece gives. Padding may go without a
/// piece (rustc describes `(char, i16)` by 6 of its 8 bytes).
fn incomplete(
    index: &index::Index<'_>,
    die: index::DieRef,
    location: &Location,
    size: u64,
) -> Result<bool, gimli::Error> {
    let Location::Pieces { pieces } = location else { return Ok(false) };
    let mut given = Vec::new();
    let mut at = 0;
    for piece in pieces {
        match piece.location {
            Location::OptimizedOut | Location::Unavailable { .. } => return Ok(true),
            _ => given.push((at, at + piece.size)),
        }
        at += piece.size;
    }
    let ty = match index.inherited(die, gimli::DW_AT_type)? {
        Some((holder, _)) => index.reference(holder, gimli::DW_AT_type)?,
        None => None,
    };
    let needed = types::member_ranges(index, ty)?.unwrap_or_else(|| vec![(0, size)]);
    let covered = |(begin, end): (u64, u64)| {
        // Pieces are consecutive from byte 0: `given` covers [0, at) but for optimized-out ones.
        (begin..end).all(|b| given.iter().any(|&(g0, g1)| g0 <= b && b < g1))
    };
    Ok(!needed.into_iter().filter(|&(b, e)| b < e).all(covered))
}

/// Whether the variable's unit is C (not Rust).
fn site_is_c(index: &index::Index<'_>, die: index::DieRef) -> bool {
    index.units[die.unit].language != Some(gimli::DW_LANG_Rust)
}

/// Whether a location lacks part of the value (an optimized-out piece) or
/// needs a value kept elsewhere.
fn partly_missing(location: &Location) -> bool {
    match location {
        Location::Pieces { pieces } => pieces.iter().any(|p| partly_missing(&p.location)),
        Location::OptimizedOut | Location::Unavailable { .. } | Location::EntryValue { .. } => true,
        _ => false,
    }
}

/// Whether reading `location` reads the stopped function's frame memory
/// (a `stack` location, alone or as a piece).
fn reads_frame(location: &Location) -> bool {
    match location {
        Location::Stack { .. } => true,
        Location::Pieces { pieces } => pieces.iter().any(|p| reads_frame(&p.location)),
        _ => false,
    }
}

/// A variable declared in the region's block, which the anchor's line does
/// not see: taken when it lives in a frame slot (`rbp`-based), the same all
/// through the function.
fn frame_slot_at_block_end(
    index: &index::Index<'_>,
    instance: &function::Instance,
    address: u64,
    name: &str,
    line: u32,
) -> Result<Option<variable::FoundLocal>, gimli::Error> {
    let Some(found) = variable::find_local(index, instance, address, name, line)? else { return Ok(None) };
    if found.only_in_origin {
        return Ok(None);
    }
    let (_, size) = variable::variable_type(index, found.die)?;
    Ok(match variable::variable_location(index, found.die, instance.frame_owner, address, size)? {
        Ok(Location::Stack { base, .. }) if base.dwarf == 6 => {
            Some(variable::FoundLocal { outside_scope: false, ..found })
        }
        _ => None,
    })
}

/// The canonical frame address at each code location, from the unwind
/// tables: `register + offset`, computed.
fn locate_frame(index: &index::Index<'_>, site: &RegionSite, placed: &[(function::Instance, u64)]) -> ArgumentResult {
    let mut warnings = Vec::new();
    let locations = placed
        .iter()
        .map(|(instance, address)| {
            let location = match index.binary.cfa_rule(*address) {
                Some(rule) => Location::Computed { register: Register::x86_64(rule.register.0), offset: rule.offset },
                None => {
                    warnings.push(format!(
                        "region {}: the unwind tables give no frame address in `{}` at {address:#x}: its debug-only \
                         locals cannot be kept per call there",
                        site.region, instance.name
                    ));
                    Location::Unavailable { reason: "no frame address in the unwind tables here".into() }
                }
            };
            PlacedLocation { address: *address, location, type_name: None, size: None }
        })
        .collect();
    ("u64".into(), 8, locations, warnings)
}

/// Where a later line stands in for the anchor's at `address` and runs after statements that
/// may change the argument (it may hold its later value there): the location that says so,
/// with a warning.
fn changed_before_stand_in(
    site: &RegionSite,
    argument: &ArgumentSite,
    instance: &function::Instance,
    address: u64,
    stand_ins: &HashMap<u64, u32>,
    warnings: &mut Vec<String>,
) -> Option<Location> {
    let line = *stand_ins.get(&address)?;
    let written = *argument.written_after.iter().find(|&&w| w >= site.anchor.line && w < line)?;
    let name = &argument.name;
    warnings.push(format!(
        "region {}: `{name}` is not served in `{}` at {address:#x}: line {} has no code there, line {line} stands \
         in, and line {written} may change `{name}` before it",
        site.region, instance.name, site.anchor.line
    ));
    Some(Location::Unavailable {
        reason: format!(
            "possibly changed already: line {written} of {} may change it, and the region runs after it, before \
             line {line} (line {} has no code of its own in this build)",
            site.anchor.file.display(),
            site.anchor.line
        ),
    })
}

fn locate_static(
    index: &index::Index<'_>,
    site: &RegionSite,
    argument: &ArgumentSite,
    placed: &[(function::Instance, u64)],
    stand_ins: &HashMap<u64, u32>,
    units: &[usize],
) -> Result<ArgumentResult, SiteError> {
    let path = argument.static_path.as_deref().unwrap_or(&argument.name);
    let mut warnings = Vec::new();
    let search = variable::find_static(index, path, units)?;
    let (type_name, size, location) = match search.found.first() {
        Some(found) => {
            if search.found.len() > 1 {
                warnings.push(format!(
                    "region {}: {} statics match `{path}`; using the first ({:?}); write its full path to choose",
                    site.region,
                    search.found.len(),
                    found.location
                ));
            }
            let (type_name, size) = variable::variable_type(index, found.die)?;
            (type_name, size, found.location.clone())
        }
        None if search.rejected.is_none() && index.binary.symbols.function_address(path).is_some() => {
            let address = index.binary.symbols.function_address(path).unwrap_or(0);
            ("function".into(), 0, Location::Symbol { symbol: path.to_string(), offset: 0, address })
        }
        None => {
            let why = match &search.rejected {
                Some(why) => format!("the static `{path}` cannot be passed: {why}"),
                None => format!("no static `{path}` with a fixed address in the DWARF"),
            };
            warnings.push(format!("region {}: {why}; it is passed as optimized out", site.region));
            ("<unknown>".into(), 0, Location::OptimizedOut)
        }
    };
    let locations = placed
        .iter()
        .map(|(instance, address)| {
            let location = match changed_before_stand_in(site, argument, instance, *address, stand_ins, &mut warnings) {
                Some(changed) => changed,
                None => match &location {
                    Location::Symbol { address: global, .. } if size > 0 && !argument.address_only => {
                        // A store of the anchor's statement or a later one is the program's next
                        // change (its value may be computed before the region): memory is current.
                        let earlier = |store: u64| {
                            function::LineLookup::new(index, instance, &site.anchor.file)
                                .ok()
                                .and_then(|l| l.line(store))
                                .is_none_or(|line| line < site.anchor.line)
                        };
                        // The frame's function: the same code the bypass pass and the future-field check read.
                        let code = index
                            .code(&function::frame_ranges(index, instance).unwrap_or_else(|_| instance.ranges.clone()));
                        match stale::pending_store(&code, *address, *global, size).filter(|&s| earlier(s)) {
                            Some(store) => {
                                warnings.push(format!(
                                    "region {} ({}): `{}` is not served in `{}` at {address:#x}: the code after it \
                                     stores `{}` (at {store:#x}) without reading it first, so the optimizer may keep \
                                     its current value in a register there and memory may hold an older one",
                                    site.region,
                                    show(&site.begin),
                                    argument.name,
                                    instance.name,
                                    argument.name
                                ));
                                Location::Unavailable {
                                    reason: format!(
                                        "not current in memory here: the program stores it at {store:#x} without \
                                         reading it first (the optimizer may keep it in a register until then)"
                                    ),
                                }
                            }
                            None => location.clone(),
                        }
                    }
                    _ => location.clone(),
                },
            };
            PlacedLocation { address: *address, location, type_name: None, size: None }
        })
        .collect();
    Ok((type_name, size, locations, warnings))
}

/// Locates the functions call callbacks watch (see `calls.rs`): one result per query.
pub fn locate_calls(binary: &Path, queries: &[CallQuery]) -> Result<Vec<LocatedCall>, LocateError> {
    let data = std::fs::read(binary).map_err(|source| LocateError::Io { path: binary.into(), source })?;
    let loaded = loader::Binary::parse(binary, &data)?;
    let dwarf_error = |source| LocateError::Dwarf { path: binary.to_path_buf(), source };
    let index = index::Index::new(&loaded).map_err(dwarf_error)?;
    let file =
        object::File::parse(&*data).map_err(|e| LocateError::NotElf { path: binary.into(), reason: e.to_string() })?;
    let code = |address: u64, len: u64| -> Option<Vec<u8>> {
        use object::{Object, ObjectSegment};
        let segment = file.segments().find(|s| s.address() <= address && address + len <= s.address() + s.size())?;
        segment.data_range(address, len).ok().flatten().map(<[u8]>::to_vec)
    };
    queries.iter().map(|q| calls::locate_call(&index, &code, q).map_err(dwarf_error)).collect()
}

/// Locates the statics memory callbacks watch: one result per path (`Err`: why it cannot be).
pub fn locate_statics(binary: &Path, paths: &[String]) -> Result<Vec<Result<WatchedStatic, String>>, LocateError> {
    let loaded = loader::Binary::load(binary)?;
    let dwarf_error = |source| LocateError::Dwarf { path: binary.to_path_buf(), source };
    let index = index::Index::new(&loaded).map_err(dwarf_error)?;
    paths.iter().map(|p| calls::locate_static(&index, p).map_err(dwarf_error)).collect()
}

/// Resolves a place expression over a static (`LIST.head->next->value`, `STATE.items[3].count`;
/// see `place.rs`): `Err` says why it cannot be, with the column.
pub fn locate_place(binary: &Path, expr: &str) -> Result<Result<Place, PlaceError>, LocateError> {
    let loaded = loader::Binary::load(binary)?;
    let dwarf_error = |source| LocateError::Dwarf { path: binary.to_path_buf(), source };
    let index = index::Index::new(&loaded).map_err(dwarf_error)?;
    let locate = |path: &str| Ok(calls::locate_static_die(&index, path)?.map(|(s, die)| (s.symbol, s.address, die)));
    place::resolve(&index, expr, &locate).map_err(dwarf_error)
}
