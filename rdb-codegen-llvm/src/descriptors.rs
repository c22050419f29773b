//! Writes `<prog>.rdb-functions.json` and `<prog>.rdb-arguments.json`: the
//! region sites the source pass and the IR pass produced (ids, entries,
//! source positions, argument names and kinds) handed to `rdb-locate`, which
//! reads code and argument locations from the DWARF of the main binary (or of
//! its `-g` twin, whose code it has checked identical).

use rdb_descriptors::{ArtefactPaths, DebugEntry, Language};
use rdb_locate::RegionSite;
use std::path::{Path, PathBuf};

/// One C region: what the front end knows, and its debug function's symbol.
#[derive(Debug, Clone)]
pub struct CRegion {
    pub site: RegionSite,
    /// The exported symbol the debug module calls the region through.
    pub entry: String,
}

/// Why the descriptors could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptorError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot compute the descriptors: {0}")]
    Locate(#[from] rdb_locate::LocateError),
}

/// Writes both descriptor files for `prog` (whose DWARF is in
/// `dwarf_binary`); returns the locator's warnings.
pub fn write(
    prog: &Path,
    dwarf_binary: &Path,
    paths: &ArtefactPaths,
    regions: &[CRegion],
    toolchain: String,
) -> Result<Vec<String>, DescriptorError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DescriptorError::Io { path, source }
    };
    let mut binary = rdb_locate::binary_identity(prog)?;
    binary.path = std::fs::canonicalize(prog).map_err(io(prog))?;
    let module = paths.debug_module.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let sites: Vec<RegionSite> = regions.iter().map(|r| r.site.clone()).collect();
    let located = rdb_locate::locate(dwarf_binary, &sites)?;
    let warnings = located.warnings.clone();
    let (mut functions, arguments) = located.into_descriptors(Language::C, toolchain, binary, module);
    for (f, region) in functions.functions.iter_mut().zip(regions) {
        f.entry = DebugEntry::Symbol { name: region.entry.clone() };
    }
    rdb_descriptors::store(&paths.functions, &functions).map_err(io(&paths.functions))?;
    rdb_descriptors::store(&paths.arguments, &arguments).map_err(io(&paths.arguments))?;
    Ok(warnings)
}
