//! Where traces live by default: the trace root `$RDB_TRACE_DIR` or `~/.local/share/rdb`,
//! holding `<prog>-<n>` trace directories, a `latest` symlink, packed traces
//! (`<name>.tar.zst`) and the store of kept files shared by its traces (`.rdb-files/`).
//! The root and everything in it are private to the user (see `rdb_runtime::trace::safe_fs`).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rdb_runtime::trace::root;
use rdb_runtime::trace::safe_fs::Dir;

/// Name of the kept-files store in the trace root.
pub const STORE: &str = ".rdb-files";
/// Extension of packed traces.
pub const PACK_SUFFIX: &str = ".tar.zst";

/// The trace root (not created).
pub fn base_dir() -> Result<PathBuf> {
    Ok(root::base_dir()?)
}

/// The trace root, created (0700) when missing; it must be the user's and writable by nobody
/// else (others could replace `latest` or the traces in it).
pub fn root() -> Result<Dir> {
    let base = base_dir()?;
    Dir::create_private_following(&base).map_err(|e| {
        anyhow!(
            "cannot use the trace root {}: {e}\n(set RDB_TRACE_DIR to a directory of yours, or record with -o DIR)",
            base.display()
        )
    })
}

/// A fresh `<root>/<prog>-<n>` for a new recording (created, empty, 0700).
pub fn new_trace_dir(program: &str) -> Result<PathBuf> {
    let root = root()?;
    let name = Path::new(program).file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    for n in 0..1_000_000u32 {
        let cand = root.path().join(format!("{name}-{n}"));
        match std::fs::DirBuilder::new().mode_0700().create(&cand) {
            Ok(()) => return Ok(cand),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!(
                "cannot create a trace directory in {}: {e}\n(set RDB_TRACE_DIR to a writable directory of yours, or record with -o DIR)",
                root.path().display()
            ),
        }
    }
    bail!("{} holds a million traces named {name}-N: remove some (`rdb rm`)", root.path().display())
}

trait Mode0700 {
    fn mode_0700(&mut self) -> &mut Self;
}

impl Mode0700 for std::fs::DirBuilder {
    fn mode_0700(&mut self) -> &mut Self {
        use std::os::unix::fs::DirBuilderExt;
        self.mode(0o700)
    }
}

/// The shared store for a trace created at `dir`, when `dir` is in the trace root.
pub fn store_for(dir: &Path) -> Option<PathBuf> {
    let base = std::fs::canonicalize(base_dir().ok()?).ok()?;
    let parent = std::fs::canonicalize(dir.parent()?).ok()?;
    (parent == base).then(|| base.join(STORE))
}

/// Point `<root>/latest` at `dir` (replaced atomically; never follows what was there).
pub fn set_latest(dir: &Path) -> Result<()> {
    let base = base_dir()?;
    let link = base.join("latest");
    let tmp = base.join(format!(".latest.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let target = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    std::os::unix::fs::symlink(&target, &tmp).with_context(|| format!("creating {}", tmp.display()))?;
    std::fs::rename(&tmp, &link).with_context(|| format!("creating {}", link.display()))?;
    Ok(())
}

pub use root::Resolved;

/// The trace named on the command line (a path, or the name of a trace in the root), or the
/// latest one; a packed trace is unpacked (see `rdb_runtime::trace::root`).
pub fn resolve(arg: Option<PathBuf>) -> Result<Resolved> {
    Ok(root::resolve(arg.as_deref())?)
}
