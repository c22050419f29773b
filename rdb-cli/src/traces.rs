//! Where traces live by default: `$RDB_TRACE_DIR` (a base directory) or
//! `~/.local/share/rdb`, holding `<prog>-<n>` trace directories and a `latest` symlink.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The base directory for traces.
pub fn base_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("RDB_TRACE_DIR") {
        return Ok(PathBuf::from(d));
    }
    let home = std::env::var_os("HOME").context("neither RDB_TRACE_DIR nor HOME is set")?;
    Ok(PathBuf::from(home).join(".local/share/rdb"))
}

/// A fresh `<base>/<prog>-<n>` for a new recording.
pub fn new_trace_dir(program: &str) -> Result<PathBuf> {
    let base = base_dir()?;
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    let name = Path::new(program).file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    for n in 0.. {
        let cand = base.join(format!("{name}-{n}"));
        if std::fs::create_dir(&cand).is_ok() {
            return Ok(cand);
        }
    }
    unreachable!("some trace number is free")
}

/// Point `<base>/latest` at `dir`.
pub fn set_latest(dir: &Path) -> Result<()> {
    let base = base_dir()?;
    let link = base.join("latest");
    let _ = std::fs::remove_file(&link);
    let target = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    std::os::unix::fs::symlink(&target, &link).with_context(|| format!("creating {}", link.display()))?;
    Ok(())
}

/// The trace named on the command line, or the latest one.
pub fn resolve(arg: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(p) = arg {
        return Ok(p);
    }
    let link = base_dir()?.join("latest");
    if !link.exists() {
        bail!("no trace given and {} does not exist (record something first)", link.display());
    }
    Ok(link)
}
