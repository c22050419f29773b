//! Shadow copies of the user's workspace under `target/rdb/`.
//!
//! A shadow is kept in sync file by file: a file is only rewritten when its
//! content changed (so cargo's fingerprints see unchanged mtimes and rebuilds
//! stay incremental), always through a temporary file renamed into place (an
//! interrupted sync leaves whole files). Nothing outside the shadow is ever
//! written.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files of the user's workspace to mirror: every file under the
/// workspace root except the target directory, nested cargo target
/// directories, `.git` and `.cargo` (cargo finds the user's `.cargo/config.toml`
/// itself, by walking up from the shadow, which sits below it).
pub fn source_files(root: &Path, target_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(root).follow_links(true).sort_by_file_name().into_iter();
    for entry in walker.filter_entry(|e| {
        let p = e.path();
        if p == target_dir {
            return false;
        }
        if e.file_type().is_dir() {
            let name = e.file_name();
            if name == ".git" || name == ".cargo" {
                return false;
            }
            if name == "target" && p.join("CACHEDIR.TAG").exists() {
                return false;
            }
        }
        true
    }) {
        let entry = entry.with_context(|| format!("cannot list {}", root.display()))?;
        if entry.file_type().is_file() {
            out.push(entry.path().strip_prefix(root).expect("walk stays under root").to_path_buf());
        }
    }
    Ok(out)
}

/// Result of a sync.
#[derive(Debug, Default)]
pub struct Synced {
    pub written: usize,
    pub removed: usize,
}

/// Makes `shadow` hold exactly `files` (relative path -> content).
pub fn sync(shadow: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) -> Result<Synced> {
    let mut stats = Synced::default();
    std::fs::create_dir_all(shadow).with_context(|| format!("cannot create {}", shadow.display()))?;
    for (rel, content) in files {
        let dest = shadow.join(rel);
        if std::fs::read(&dest).is_ok_and(|old| &old == content) {
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        write_atomic(&dest, content)?;
        stats.written += 1;
    }
    // Files the user deleted disappear from the shadow too.
    let mut stale = Vec::new();
    for entry in walkdir::WalkDir::new(shadow).into_iter().filter_map(|e| e.ok()) {
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(shadow).expect("under shadow");
            if !files.contains_key(rel) {
                stale.push(entry.path().to_path_buf());
            }
        }
    }
    for path in stale {
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        stats.removed += 1;
    }
    Ok(stats)
}

/// Writes `path` through a temporary file in the same directory and a rename.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.rdb-tmp"));
    std::fs::write(&tmp, content).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}

/// Copies a file through a temporary file and a rename, keeping permissions.
pub fn copy_atomic(from: &Path, to: &Path) -> Result<()> {
    let name = to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = to.with_file_name(format!(".{name}.rdb-tmp"));
    std::fs::copy(from, &tmp).with_context(|| format!("cannot copy {} to {}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("cannot rename {} to {}", tmp.display(), to.display()))
}
