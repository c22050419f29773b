//! Writes `<prog>.rdb-functions.json` and `<prog>.rdb-arguments.json`: what
//! the source and the IR pass know about each region (ids, entries, source
//! positions, argument names and kinds) handed to `rdb-locate`, which reads
//! code and argument locations from the DWARF of the main binary (or of its
//! `-g` twin, whose code is identical).

use crate::driver::{DriverError, ObjectInfo, RegionInfo};
use crate::pass::OutlinedRegion;
use rdb_descriptors::{ArgumentKind, ArtefactPaths, BinaryIdentity, DebugEntry, Language, Location, SourceLocation};
use rdb_locate::{ArgumentSite, RegionSite};
use std::collections::HashMap;
use std::path::Path;

/// Writes both descriptor files for `prog` (whose DWARF is in `dwarf_binary`).
pub fn write(
    prog: &Path,
    dwarf_binary: &Path,
    paths: &ArtefactPaths,
    sites: &[(ObjectInfo, RegionInfo, OutlinedRegion)],
    brace_anchors: &[(u32, u32)],
) -> Result<(), DriverError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DriverError::Io { path, source }
    };
    let data = std::fs::read(prog).map_err(io(prog))?;
    let binary = BinaryIdentity {
        path: std::fs::canonicalize(prog).map_err(io(prog))?,
        size: data.len() as u64,
        blake3: blake3::hash(&data).to_hex().to_string(),
    };
    let module = paths.debug_module.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let loc = |file: &Path, (line, column): (u32, u32)| SourceLocation { file: file.to_path_buf(), line, column };
    let region_sites: Vec<RegionSite> = sites
        .iter()
        .map(|(info, region, outlined)| RegionSite {
            region: outlined.id,
            begin: loc(&info.source_abs, region.begin),
            end: loc(&info.source_abs, region.end),
            anchor: loc(&info.source, region.anchor),
            // C regions that end a block are anchored where execution continues (see
            // `source.rs`), never at the brace.
            ends_block: false,
            function: outlined.function.clone(),
            arguments: outlined
                .arguments
                .iter()
                .map(|a| ArgumentSite {
                    name: a.name.clone(),
                    kind: if a.local { ArgumentKind::Local } else { ArgumentKind::Static },
                    static_path: None,
                })
                .collect(),
        })
        .collect();
    let mut located =
        rdb_locate::locate(dwarf_binary, &region_sites).map_err(|e| DriverError::Locate(e.to_string()))?;
    // A region that ends a loop body runs before the loop's step, whose
    // line precedes the declarations of the body's variables, so the
    // locator does not see them there. Their frame-based stack slots are the
    // same all through the function: take those from a lookup at the
    // block's closing brace. (Only `rbp`-based slots: register and
    // location-list values depend on the address.)
    let braced: Vec<RegionSite> = region_sites
        .iter()
        .zip(brace_anchors)
        .map(|(s, &(line, column))| RegionSite {
            anchor: SourceLocation { line, column, ..s.anchor.clone() },
            ..s.clone()
        })
        .collect();
    if braced != region_sites {
        if let Ok(at_brace) = rdb_locate::locate(dwarf_binary, &braced) {
            let mut recovered = Vec::new();
            for (a, b) in located.arguments.iter_mut().zip(&at_brace.arguments) {
                let lost = a.locations.iter().all(|p| p.location == Location::OptimizedOut);
                let frame_slot = b.locations.first().map(|p| &p.location).and_then(|l| match l {
                    Location::Stack { base, .. } if base.dwarf == 6 => Some(l.clone()),
                    _ => None,
                });
                if let (true, Some(slot)) = (lost, frame_slot) {
                    for p in &mut a.locations {
                        p.location = slot.clone();
                    }
                    a.type_name = b.type_name.clone();
                    a.size = b.size;
                    recovered.push(format!("region {}: no variable `{}` is visible", a.region, a.name));
                }
            }
            located.warnings.retain(|w| !recovered.iter().any(|r| w.starts_with(r.as_str())));
        }
    }
    // rdb-locate finds variables; program functions passed to regions are
    // located here, by symbol in the main binary.
    let symbols = function_symbols(prog)?;
    let mut fixed = Vec::new();
    let mut k = 0;
    for (_, _, outlined) in sites {
        for a in &outlined.arguments {
            let d = &mut located.arguments[k];
            k += 1;
            if !a.function {
                continue;
            }
            if let Some(&address) = symbols.get(&a.name) {
                d.type_name = "function".into();
                d.size = 0;
                for p in &mut d.locations {
                    p.location = Location::Symbol { symbol: a.name.clone(), offset: 0, address };
                }
                fixed.push(format!("`{}` with a fixed address", a.name));
            }
        }
    }
    for w in &located.warnings {
        if !fixed.iter().any(|f| w.contains(f.as_str())) {
            eprintln!("rdb-clang: warning: {w}");
        }
    }
    let (mut functions, arguments) = located.into_descriptors(Language::C, toolchain(), binary, module);
    for (f, (_, _, outlined)) in functions.functions.iter_mut().zip(sites) {
        f.entry = DebugEntry::Symbol { name: outlined.entry.clone() };
    }
    rdb_descriptors::store(&paths.functions, &functions).map_err(io(&paths.functions))?;
    rdb_descriptors::store(&paths.arguments, &arguments).map_err(io(&paths.arguments))?;
    Ok(())
}

/// First line of `clang --version`.
fn toolchain() -> String {
    std::process::Command::new(crate::driver::clang())
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "clang (unknown version)".into())
}

/// Addresses of the function symbols of an ELF file.
fn function_symbols(path: &Path) -> Result<HashMap<String, u64>, DriverError> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(path).map_err(|source| DriverError::Io { path: path.into(), source })?;
    let file =
        object::File::parse(&*data).map_err(|e| DriverError::Elf { path: path.into(), message: e.to_string() })?;
    Ok(file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && !s.is_undefined() && s.address() != 0)
        .filter_map(|s| s.name().ok().map(|n| (n.to_string(), s.address())))
        .collect())
}
