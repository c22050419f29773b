//! The files `cargo rdb build` leaves in `target/rdb/<profile>/`.

use anyhow::{Context, Result};
use object::{Object, ObjectSection};
use rdb_descriptors::{Language, SourceLocation};
use rdb_extract::{LineCol, NestKind, Region};
use rdb_locate::{ArgumentSite, Body, BodyKind, RegionSite};
use std::path::{Path, PathBuf};

/// Whether the binary carries DWARF with variable information.
pub fn has_debug_info(binary: &Path) -> Result<bool> {
    let data = std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
    let file = object::File::parse(&*data).with_context(|| format!("{} is not an object file", binary.display()))?;
    // `debug = "line-tables-only"` still has .debug_info, but no variables;
    // a size check cannot tell them apart, so look for a variable entry tag
    // cheaply: full debug info has a .debug_loclists or many abbrevs. Keep
    // it simple and robust: require .debug_info and .debug_line.
    Ok(file.section_by_name(".debug_info").is_some_and(|s| s.size() > 0)
        && file.section_by_name(".debug_line").is_some())
}

fn location(file: &Path, lc: LineCol) -> SourceLocation {
    SourceLocation { file: file.to_path_buf(), line: lc.line, column: lc.column }
}

/// Computes the descriptors of the regions compiled into `binary` from its
/// DWARF (`rdb-locate`) and writes `<bin>.rdb-functions.json` and
/// `<bin>.rdb-arguments.json`. `source_root` turns the regions'
/// workspace-relative paths into the absolute paths DWARF shows (after
/// `--remap-path-prefix`). Returns the paths and the warnings to show.
pub fn write_descriptors(
    binary: &Path,
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
    // Same binary, same sites, same toolchain: the descriptors on disk are
    // current (a region edited within its lines changes none of these).
    let identity = rdb_locate::binary_identity(binary)?;
    let key = format!("{toolchain}\n{}\n{sites:?}", identity.blake3);
    let key_path = binary.with_file_name(format!(".{}.rdb-key", binary.file_name().expect("named").to_string_lossy()));
    if paths.functions.is_file() && paths.arguments.is_file() {
        if let Ok(saved) = std::fs::read_to_string(&key_path) {
            if let Some((saved_key, warnings)) = saved.split_once('\0') {
                if saved_key == key {
                    let warnings = warnings.lines().map(String::from).collect();
                    return Ok((paths.functions, paths.arguments, warnings));
                }
            }
        }
    }
    let located = rdb_locate::locate(binary, &sites)
        .with_context(|| format!("cannot compute the descriptors of {}", binary.display()))?;
    let warnings = located.warnings.clone();
    let (functions, arguments) = located.into_descriptors(Language::Rust, toolchain.to_string(), identity, module_name);
    rdb_descriptors::store(&paths.functions, &functions)
        .with_context(|| format!("cannot write {}", paths.functions.display()))?;
    rdb_descriptors::store(&paths.arguments, &arguments)
        .with_context(|| format!("cannot write {}", paths.arguments.display()))?;
    let saved = format!("{key}\0{}", warnings.join("\n"));
    crate::shadow::write_atomic(&key_path, saved.as_bytes())?;
    Ok((paths.functions, paths.arguments, warnings))
}
