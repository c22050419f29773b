//! Naming a trace on a command line: a path, the name of a trace in the trace root
//! (`$RDB_TRACE_DIR`, else `~/.local/share/rdb`), nothing for the latest recording (the root's
//! `latest` link), or a packed trace (unpacked into a private temporary directory). `rdb` and
//! `cargo rdb` resolve them the same way, with [`resolve`].

use std::path::{Path, PathBuf};

use super::{pack, TraceError};

/// The trace root (not created): `$RDB_TRACE_DIR`, else `~/.local/share/rdb`.
pub fn base_dir() -> Result<PathBuf, TraceError> {
    if let Some(d) = std::env::var_os("RDB_TRACE_DIR") {
        return Ok(PathBuf::from(d));
    }
    let home = std::env::var_os("HOME").ok_or_else(|| TraceError::NoTrace {
        why: "neither RDB_TRACE_DIR nor HOME is set, so there is no trace root".into(),
    })?;
    Ok(PathBuf::from(home).join(".local/share/rdb"))
}

/// A trace to read: a directory, or a packed trace unpacked into a private temporary
/// directory that lives as long as this value.
pub struct Resolved {
    pub dir: PathBuf,
    /// The packed file it came from.
    pub pack: Option<PathBuf>,
    _unpacked: Option<tempfile::TempDir>,
}

/// The trace root to look names up in; one that is a file is said to be one (not "no trace
/// named ... in it").
fn root_dir() -> Result<PathBuf, TraceError> {
    let root = base_dir()?;
    if std::fs::metadata(&root).is_ok_and(|m| !m.is_dir()) {
        return Err(TraceError::NoTrace {
            why: format!(
                "the trace root {} is a file, not a directory (set RDB_TRACE_DIR to a directory)",
                root.display()
            ),
        });
    }
    Ok(root)
}

/// The trace named on the command line (a path, or the name of a trace in the root), or the
/// latest one; a packed trace is unpacked. The directory is not checked here: opening it
/// (`Trace::open`, `Trace::peek`) does that.
pub fn resolve(arg: Option<&Path>) -> Result<Resolved, TraceError> {
    let path = match arg {
        Some(p) if p.exists() || p.components().count() != 1 => p.to_path_buf(),
        Some(p) => {
            let root = root_dir()?;
            let in_root = root.join(p);
            if std::fs::symlink_metadata(&in_root).is_err() {
                return Err(TraceError::NoTrace {
                    why: format!(
                        "no trace named {} here or in the trace root {} (`rdb ls` lists the traces there)",
                        p.display(),
                        root.display()
                    ),
                });
            }
            in_root
        }
        None => {
            let link = root_dir()?.join("latest");
            if std::fs::symlink_metadata(&link).is_err() {
                return Err(TraceError::NoTrace {
                    why: format!("no trace given and {} does not exist (record something first)", link.display()),
                });
            }
            link
        }
    };
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) && pack::looks_like_pack(&path) {
        let tmp =
            tempfile::Builder::new().prefix("rdb-unpacked-").tempdir().map_err(TraceError::io(std::env::temp_dir()))?;
        let dir = pack::unpack_dir_name(tmp.path(), &path);
        pack::unpack(&path, &dir)?;
        return Ok(Resolved { dir, pack: Some(path), _unpacked: Some(tmp) });
    }
    Ok(Resolved { dir: path, pack: None, _unpacked: None })
}
