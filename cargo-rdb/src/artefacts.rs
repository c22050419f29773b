//! The files `cargo rdb build` leaves in `target/rdb/<profile>/`.

use anyhow::{Context, Result};
use rdb_descriptors::{Language, SourceLocation};
use rdb_extract::{LineCol, NestKind, Region};
use rdb_locate::{ArgumentSite, Body, BodyKind, RegionSite};
use std::path::{Path, PathBuf};

fn location(file: &Path, lc: LineCol) -> SourceLocation {
    SourceLocation { file: file.to_path_buf(), line: lc.line, column: lc.column }
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
    source_root: &Path,
) -> Result<(PathBuf, PathBuf, Vec<String>)> {
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
                block_end: None,
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
                    .map(|a| ArgumentSite { name: a.name.clone(), kind: a.kind, static_path: a.static_path.clone() })
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
    let key = format!("{tool}\n{toolchain}\n{}\n{module_hash}\n{}\n{sites:?}", identity.blake3, dwarf_binary.display());
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
    let table = rdb_locate::region_table(&paths.debug_module)
        .with_context(|| format!("cannot read the region table of {}", paths.debug_module.display()))?;
    let patches = dispatch_instantiations(&mut located, &table);
    rdb_locate::patch_entry_ids(&paths.debug_module, &patches)?;
    let warnings = located.warnings.clone();
    let (functions, arguments) = located.into_descriptors(Language::Rust, toolchain.to_string(), identity, module_name);
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
