//! The files `cargo rdb build` leaves in `target/rdb/<profile>/`.

use anyhow::{Context, Result};
use rdb_descriptors::{CallbackDescriptor, CallbackEvent, DebugEntry, Language, SourceLocation, SyscallName};
use rdb_extract::{CallTarget, Callback, CallbackKind, LineCol, NestKind, Region};
use rdb_locate::{ArgumentSite, Body, BodyKind, RegionSite};
use std::path::{Path, PathBuf};

fn location(file: &Path, lc: LineCol) -> SourceLocation {
    SourceLocation { file: file.to_path_buf(), line: lc.line, column: lc.column }
}

/// The event callbacks of a binary and the line maps of its instrumented files (descriptor
/// inputs besides the regions).
#[derive(Clone, Copy)]
pub struct EventInputs<'a> {
    pub callbacks: &'a [&'a Callback],
    pub line_maps: &'a [rdb_descriptors::LineMap],
}

/// Computes the descriptors of the regions compiled into `binary` from its
/// DWARF (`rdb-locate`) and writes `<bin>.rdb-functions.json` and
/// `<bin>.rdb-arguments.json`. The DWARF comes from `dwarf_binary`: the
/// binary itself, or its twin with debug information (checked to have the
/// same code, function by function: `twin` maps its addresses onto the
/// binary's, and locations in functions not proven equal are dropped with a
/// warning). `source_root` turns the regions'
/// workspace-relative paths into the absolute paths DWARF shows (after
/// `--remap-path-prefix`). Returns the paths and the warnings to show.
pub fn write_descriptors(
    binary: &Path,
    dwarf_binary: &Path,
    twin: Option<&rdb_locate::TwinMap>,
    toolchain: &str,
    regions: &[&Region],
    events: &EventInputs<'_>,
    source_root: &Path,
) -> Result<(PathBuf, PathBuf, Vec<String>)> {
    let EventInputs { callbacks, line_maps } = *events;
    let paths = rdb_descriptors::artefact_paths(binary);
    let module_name = paths.debug_module.file_name().expect("has a name").to_string_lossy().into_owned();
    let sites: Vec<RegionSite> = regions
        .iter()
        .map(|r| {
            let file = source_root.join(&r.file);
            RegionSite {
                region: r.id,
                begin: location(&file, r.begin),
                end: location(&file, r.end),
                anchor: location(&file, r.anchor),
                function: r.function.clone(),
                ends_block: r.ends_block,
                last_statement: r.last_statement,
                block_end: None,
                first_in_body: r.first_in_body,
                in_loop: r.in_loop,
                block_close_line: Some(r.block_close),
                before_loop: r.before_loop,
                bodies: r
                    .nesting
                    .iter()
                    .map(|n| Body {
                        kind: match n.kind {
                            NestKind::Closure => BodyKind::Closure,
                            NestKind::AsyncBlock => BodyKind::AsyncBlock,
                            NestKind::AsyncFn => BodyKind::AsyncFn,
                        },
                        line: n.at.line,
                    })
                    .collect(),
                arguments: r
                    .arguments
                    .iter()
                    .map(|a| ArgumentSite {
                        name: a.name.clone(),
                        kind: a.kind,
                        static_path: a.static_path.clone(),
                        after_await: a.after_await.map(|at| location(&file, at)),
                        written_after: a.written_after.iter().map(|at| at.line).collect(),
                        unchanged: a.unchanged,
                        unwritten_before: a.unwritten_before,
                        address_only: false,
                    })
                    .collect(),
            }
        })
        .collect();
    // Same binary, same module, same sites, same toolchain: the descriptors
    // on disk are current (a region edited within its lines changes none of
    // these); the module was copied afresh, so its entry ids are renumbered
    // again.
    let identity = rdb_locate::binary_identity(binary)?;
    let module_hash = rdb_descriptors::hash_file(&paths.debug_module)
        .with_context(|| format!("cannot read {}", paths.debug_module.display()))?;
    // This cargo-rdb (a newer one may locate differently).
    let tool = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| format!("{} {:?}", m.len(), m.modified().ok()))
        .unwrap_or_default();
    let key = format!(
        "{tool}\n{toolchain}\n{}\n{module_hash}\n{}\n{sites:?}\n{callbacks:?}\n{line_maps:?}",
        identity.blake3,
        dwarf_binary.display()
    );
    let key_path = binary.with_file_name(format!(".{}.rdb-key", binary.file_name().expect("named").to_string_lossy()));
    if paths.functions.is_file() && paths.arguments.is_file() {
        if let Ok(saved) = std::fs::read_to_string(&key_path) {
            let mut parts = saved.split('\0');
            if let (Some(saved_key), Some(warnings), Some(patches)) = (parts.next(), parts.next(), parts.next()) {
                if saved_key == key {
                    let patches: Vec<(usize, u64)> = patches
                        .split(',')
                        .filter_map(|p| p.split_once('=').and_then(|(i, id)| Some((i.parse().ok()?, id.parse().ok()?))))
                        .collect();
                    rdb_locate::patch_entry_ids(&paths.debug_module, &patches)?;
                    let warnings = warnings.lines().map(String::from).collect();
                    return Ok((paths.functions, paths.arguments, warnings));
                }
            }
        }
    }
    let mut located = rdb_locate::locate(dwarf_binary, &sites)
        .with_context(|| format!("cannot compute the descriptors of {}", binary.display()))?;
    if let Some(map) = twin {
        located.retarget(map);
    }
    never_stale_shared_locals(&mut located, regions);
    located.in_user_lines(&sites, line_maps);
    let table = rdb_locate::region_table(&paths.debug_module)
        .with_context(|| format!("cannot read the region table of {}", paths.debug_module.display()))?;
    let patches = dispatch_instantiations(&mut located, &table);
    rdb_locate::patch_entry_ids(&paths.debug_module, &patches)?;
    let warnings = located.warnings.clone();
    let (mut functions, mut arguments) =
        located.into_descriptors(Language::Rust, toolchain.to_string(), identity, module_name);
    let mut warnings = warnings;
    functions.callbacks =
        callback_descriptors(callbacks, dwarf_binary, twin, source_root, &mut arguments, &mut warnings)?;
    functions.line_maps = line_maps.to_vec();
    rdb_descriptors::store(&paths.functions, &functions)
        .with_context(|| format!("cannot write {}", paths.functions.display()))?;
    rdb_descriptors::store(&paths.arguments, &arguments)
        .with_context(|| format!("cannot write {}", paths.arguments.display()))?;
    let patch_text: Vec<String> = patches.iter().map(|(i, id)| format!("{i}={id}")).collect();
    let saved = format!("{key}\0{}\0{}", warnings.join("\n"), patch_text.join(","));
    crate::shadow::write_atomic(&key_path, saved.as_bytes())?;
    Ok((paths.functions, paths.arguments, warnings))
}

/// Gives each instantiation of a generic region a debug function of its own.
///
/// The debug module has one table entry per instantiation of each region,
/// all with the region's id; each names the generic arguments it was made
/// for. A region with more than one gets new, distinct ids for its entries
/// (returned as `(entry index, id)` to write into the module) and each code
/// location the id of the entry whose generic arguments are those of the
/// code at that location. A location whose instantiation has no entry is
/// dropped with a warning: calling another instantiation's function would
/// read its arguments with the wrong types.
/// A region using debug-only locals of an earlier region runs only where
/// that region can always run: where one of its hits cannot (an argument
/// not available, a copy not served), it would leave the values of an
/// earlier call in the same frame behind. Such a region is not served, with
/// a warning naming the region it depends on.
fn never_stale_shared_locals(located: &mut rdb_locate::Located, regions: &[&Region]) {
    use rdb_descriptors::Location;
    let broken = |id: u32, located: &rdb_locate::Located| -> Option<String> {
        let function = located.functions.iter().find(|f| f.region == id)?;
        if function.locations.is_empty() {
            return Some("it has no code location".into());
        }
        if let Some(copy) = function.unserved.first() {
            return Some(format!("its copy at {:#x} cannot run it", copy.address));
        }
        located
            .arguments
            .iter()
            .filter(|a| a.region == id)
            .find(|a| {
                a.locations.iter().any(|p| matches!(p.location, Location::OptimizedOut | Location::Unavailable { .. }))
            })
            .map(|a| format!("its argument `{}` is not available at some of its hits", a.name))
    };
    for region in regions {
        let Some((from, why)) = region.shares_from.iter().find_map(|&f| broken(f, located).map(|why| (f, why))) else {
            continue;
        };
        let reason = format!("it uses debug-only locals of region {from}, which cannot always run ({why})");
        located.warnings.push(format!("region {}: {reason}; it does not run", region.id));
        for argument in located.arguments.iter_mut().filter(|a| a.region == region.id) {
            for placed in &mut argument.locations {
                placed.location = Location::Unavailable { reason: reason.clone() };
            }
        }
    }
}

fn dispatch_instantiations(located: &mut rdb_locate::Located, table: &[rdb_locate::TableEntry]) -> Vec<(usize, u64)> {
    // The debug crate may be renamed (`<bin>_rdb_debug`) when a library of the same name exists.
    let key = |e: &rdb_locate::TableEntry| e.instantiation.replace("_rdb_debug::", "::");
    let mut next_id =
        table.iter().map(|e| e.id).chain(located.functions.iter().map(|f| u64::from(f.region))).max().unwrap_or(0) + 1;
    let mut patches = Vec::new();
    let mut dropped_args: Vec<(u32, u64)> = Vec::new();
    for (function, instantiations) in located.functions.iter_mut().zip(&located.instantiations) {
        let region = u64::from(function.region);
        if function.locations.is_empty() {
            // Nothing calls it (its code was inlined away): its entries keep
            // the region's id, which the replayer looks up when loading.
            continue;
        }
        let entries: Vec<&rdb_locate::TableEntry> = table.iter().filter(|e| e.id == region).collect();
        let mut keys: Vec<String> = entries.iter().map(|e| key(e)).collect();
        keys.sort();
        keys.dedup();
        if keys.len() <= 1 {
            continue;
        }
        let mut ids: std::collections::BTreeMap<String, u64> = Default::default();
        for k in &keys {
            ids.insert(k.clone(), next_id);
            for e in entries.iter().filter(|e| key(e) == *k) {
                patches.push((e.index, next_id));
            }
            next_id += 1;
        }
        let mut kept = Vec::new();
        for (location, instantiation) in function.locations.drain(..).zip(instantiations) {
            match ids.get(instantiation) {
                Some(&id) => kept.push(rdb_descriptors::CodeLocation { entry_id: Some(id as u32), ..location }),
                None => {
                    located.warnings.push(format!(
                        "region {region}: the debug module has no debug function for the instantiation `{instantiation}` at {:#x}; the region does not run there",
                        location.address
                    ));
                    dropped_args.push((function.region, location.address));
                }
            }
        }
        function.locations = kept;
    }
    for a in &mut located.arguments {
        a.locations.retain(|p| !dropped_args.contains(&(a.region, p.address)));
    }
    patches
}

/// The descriptors of the callbacks (call callbacks located in `dwarf_binary`, their arguments
/// added to `arguments`; with a twin, each site mapped onto the binary, or dropped with a
/// warning where the function's code is not proven the same).
fn callback_descriptors(
    callbacks: &[&Callback],
    dwarf_binary: &Path,
    twin: Option<&rdb_locate::TwinMap>,
    source_root: &Path,
    arguments: &mut rdb_descriptors::ArgumentDescriptors,
    warnings: &mut Vec<String>,
) -> Result<Vec<CallbackDescriptor>> {
    let queries: Vec<rdb_locate::CallQuery> = callbacks
        .iter()
        .filter_map(|c| match &c.kind {
            CallbackKind::Call { target: CallTarget::Path { resolved, .. }, returns } => {
                Some(rdb_locate::CallQuery { id: c.id, function: resolved.clone(), returns: *returns })
            }
            _ => None,
        })
        .collect();
    let mut located = if queries.is_empty() {
        Vec::new()
    } else {
        rdb_locate::locate_calls(dwarf_binary, &queries)
            .with_context(|| format!("cannot locate the functions callbacks watch in {}", dwarf_binary.display()))?
    }
    .into_iter();
    let statics: Vec<String> = callbacks
        .iter()
        .filter_map(|c| match &c.kind {
            CallbackKind::Access { resolved, .. } | CallbackKind::Watched { resolved, .. } => Some(resolved.clone()),
            _ => None,
        })
        .collect();
    let mut watched = if statics.is_empty() {
        Vec::new()
    } else {
        rdb_locate::locate_statics(dwarf_binary, &statics)
            .with_context(|| format!("cannot locate the statics callbacks watch in {}", dwarf_binary.display()))?
    }
    .into_iter();
    let mut out = Vec::new();
    for c in callbacks {
        let mut path = c.module_path.clone();
        path.push(c.function.clone());
        let source = location(&source_root.join(&c.file), c.at);
        let mut note = None;
        let event = match &c.kind {
            CallbackKind::Access { .. } | CallbackKind::Watched { .. } => None,
            CallbackKind::Syscall { names, when } => Some(CallbackEvent::Syscall {
                syscalls: names
                    .iter()
                    .map(|(name, number)| SyscallName { name: name.clone(), number: *number })
                    .collect(),
                when: *when,
            }),
            CallbackKind::Call { target: CallTarget::Symbol(symbol), returns } => Some(CallbackEvent::Call {
                function: symbol.clone(),
                target: rdb_descriptors::CallTarget::Symbol { symbol: symbol.clone() },
                returns: *returns,
            }),
            CallbackKind::Call { target: CallTarget::Path { written, .. }, returns } => {
                let found = located.next().expect("one result per query");
                if let Some(error) = found.error {
                    anyhow::bail!(
                        "callback `{}` ({}:{}:{}): {error}",
                        path.join("::"),
                        source.file.display(),
                        source.line,
                        source.column
                    );
                }
                warnings.extend(found.warnings);
                let (mut target, mut found_arguments) = (found.target, found.arguments);
                if let (Some(map), rdb_descriptors::CallTarget::Program { sites, .. }) = (twin, &mut target) {
                    if !map.identical {
                        let mut kept = Vec::new();
                        for (i, site) in std::mem::take(sites).into_iter().enumerate() {
                            match map.map(site.address).and_then(|a| Ok((a, map.map(site.entry)?.0))) {
                                Ok(((address, symbol, offset), entry)) => {
                                    kept.push(i);
                                    sites.push(rdb_descriptors::CallSite { entry, address, symbol, offset, ..site });
                                }
                                Err(why) => warnings.push(format!(
                                    "callback `{}` ({}:{}): the copy of `{written}` at {:#x} cannot be served: {why}; \
                                     the callback does not run there",
                                    path.join("::"),
                                    source.file.display(),
                                    source.line,
                                    site.address
                                )),
                            }
                        }
                        for a in &mut found_arguments {
                            let all = std::mem::take(&mut a.locations);
                            a.locations =
                                all.into_iter().enumerate().filter(|(i, _)| kept.contains(i)).map(|(_, l)| l).collect();
                        }
                    }
                }
                if matches!(&target, rdb_descriptors::CallTarget::Program { sites, .. } if sites.is_empty()) {
                    note = Some(format!("`{written}` has no out-of-line copy in the binary: the callback never runs"));
                }
                if !returns && c.params > 0 {
                    arguments.arguments.extend(found_arguments);
                }
                Some(CallbackEvent::Call { function: written.clone(), target, returns: *returns })
            }
        };
        let event = match event {
            Some(e) => e,
            None => {
                let found = watched.next().expect("one result per static");
                let (written, reads) = match &c.kind {
                    CallbackKind::Access { written, reads, .. } => (written, Some(*reads)),
                    CallbackKind::Watched { written, .. } => (written, None),
                    _ => unreachable!("only accesses and watched values wait"),
                };
                match found {
                    Ok(w) if reads.is_none() => CallbackEvent::Watched {
                        variable: written.clone(),
                        symbol: w.symbol,
                        address: w.address,
                        size: w.size,
                        type_name: w.type_name,
                    },
                    Ok(w) => CallbackEvent::Access {
                        variable: written.clone(),
                        symbol: w.symbol,
                        address: w.address,
                        size: w.size,
                        type_name: w.type_name,
                        reads: reads == Some(true),
                    },
                    Err(why) => anyhow::bail!(
                        "callback `{}` ({}:{}:{}): {why}",
                        path.join("::"),
                        source.file.display(),
                        source.line,
                        source.column
                    ),
                }
            }
        };
        out.push(CallbackDescriptor {
            id: c.id,
            entry: DebugEntry::CallbackTable,
            function: path.join("::"),
            source,
            event,
            note,
        });
    }
    Ok(out)
}
