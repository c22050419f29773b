//! `rdb rm`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rdb_runtime::trace::{pack, safe_fs::Dir, Trace, HEADER_FILE};

use crate::traces;

/// Remove traces
///
/// Traces are given by path or by name in the trace root (`rdb ls`), directories or packed
/// files; `latest` removes the latest one. Files kept in the trace root's shared store that
/// no trace uses any more are removed too, and `latest` moves to the newest remaining trace.
#[derive(clap::Args)]
pub struct Args {
    /// Traces to remove.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
}

fn locate(arg: &Path) -> Result<PathBuf> {
    let base = traces::base_dir()?;
    let p = if arg.exists() || arg.components().count() != 1 { arg.to_path_buf() } else { base.join(arg) };
    let md = std::fs::symlink_metadata(&p).with_context(|| format!("{}: no such trace", arg.display()))?;
    if md.file_type().is_symlink() {
        // `latest`: remove what it points to.
        return std::fs::canonicalize(&p).with_context(|| format!("{} points nowhere", p.display()));
    }
    Ok(p)
}

pub fn run(a: Args) -> Result<i32> {
    // Resolve every name first: `rdb rm latest prog-3` must not see `latest` dangle midway.
    let mut targets = Vec::new();
    for arg in &a.traces {
        let p = locate(arg)?;
        if !targets.contains(&p) {
            targets.push(p);
        }
    }
    for p in targets {
        let md = std::fs::symlink_metadata(&p)?;
        if md.is_file() {
            if !pack::looks_like_pack(&p) {
                bail!("{} is not a packed trace: not removing it", p.display());
            }
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        } else if md.is_dir() && p.join(HEADER_FILE).is_file() {
            // remove_dir_all never follows symlinks inside the tree.
            std::fs::remove_dir_all(&p).with_context(|| format!("removing {}", p.display()))?;
        } else {
            bail!("{} is not an rdb trace: not removing it", p.display());
        }
        eprintln!("rdb: removed {}", p.display());
    }
    let base = traces::base_dir()?;
    fix_latest(&base)?;
    collect_store(&base);
    Ok(0)
}

/// Point `latest` at the newest remaining trace, or remove it when none is left.
fn fix_latest(base: &Path) -> Result<()> {
    let link = base.join("latest");
    if std::fs::symlink_metadata(&link).is_err() || link.exists() {
        return Ok(());
    }
    let newest = std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.') && e.file_name() != "latest")
        .filter_map(|e| Trace::peek(&e.path()).ok().map(|(h, _)| (h.started_unix, e.path())))
        .max();
    match newest {
        Some((_, dir)) => traces::set_latest(&dir),
        None => std::fs::remove_file(&link).with_context(|| format!("removing {}", link.display())),
    }
}

/// Remove store entries no trace links to (link count 1: only the store's own name).
fn collect_store(base: &Path) {
    let Ok(store) = Dir::open(&base.join(traces::STORE)) else { return };
    let Ok(names) = store.entries() else { return };
    for name in names {
        let Some(name) = name.to_str() else { continue };
        if store.link_count(name).is_ok_and(|n| n == 1) {
            let _ = store.remove_file(name);
        }
    }
}
