//! Writes `<prog>.rdb-functions.json` and `<prog>.rdb-arguments.json`.
//!
//! TODO(rdb-locate): code and argument locations come from the `rdb-locate`
//! crate (DWARF of the main binary, or of its `-g` twin). Until it is
//! merged, `locations` are empty and each function descriptor's `note`
//! says so; everything else (ids, entries, source positions, argument
//! names and kinds) is final.

use crate::driver::{DriverError, ObjectInfo, RegionInfo};
use crate::pass::OutlinedRegion;
use rdb_descriptors::{
    ArgumentDescriptor, ArgumentDescriptors, ArgumentKind, ArtefactPaths, BinaryIdentity, DebugEntry,
    EnclosingFunction, FunctionDescriptor, FunctionDescriptors, Language, SourceLocation,
};
use std::path::Path;

/// Writes both descriptor files for `prog` (whose DWARF is in `dwarf_binary`).
pub fn write(
    prog: &Path,
    _dwarf_binary: &Path,
    paths: &ArtefactPaths,
    sites: &[(ObjectInfo, RegionInfo, OutlinedRegion)],
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
    let mut functions = FunctionDescriptors::new(Language::C, toolchain(), binary, module);
    let mut arguments = ArgumentDescriptors::new();
    let loc = |file: &Path, (line, column): (u32, u32)| SourceLocation { file: file.to_path_buf(), line, column };
    for (info, region, outlined) in sites {
        functions.functions.push(FunctionDescriptor {
            region: outlined.id,
            entry: DebugEntry::Symbol { name: outlined.entry.clone() },
            begin: loc(&info.source_abs, region.begin),
            end: loc(&info.source_abs, region.end),
            anchor: loc(&info.source, region.anchor),
            function: EnclosingFunction { name: outlined.function.clone(), linkage_name: None },
            // TODO(rdb-locate): rdb_locate::locate(dwarf_binary, sites).
            locations: Vec::new(),
            note: Some("code locations not computed yet: rdb-clang awaits the rdb-locate crate".into()),
        });
        for (position, a) in outlined.arguments.iter().enumerate() {
            arguments.arguments.push(ArgumentDescriptor {
                region: outlined.id,
                position: position as u32,
                name: a.name.clone(),
                kind: if a.local { ArgumentKind::Local } else { ArgumentKind::Static },
                // TODO(rdb-locate): type name, size and locations from DWARF.
                type_name: String::new(),
                size: 0,
                locations: Vec::new(),
            });
        }
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
