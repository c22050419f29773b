//! Files kept with a trace: the executables and every file the program mapped, so that a
//! rebuild, a `cargo clean` or an upgrade of the originals changes nothing for replay.
//!
//! Kept files are content-addressed: `TRACE/files/<blake3 hex>`. Each is a hard link to the
//! original where the filesystem allows (no space used while the original exists; a compiler
//! or package manager *replaces* a file, so the link keeps the recorded bytes), else a copy.
//! With a shared store (`<trace root>/.rdb-files/`, see [`KeepFiles::store`]) the file goes
//! into the store once and each trace links to it: a hundred traces of one program store it
//! once. Every kept file is checked against its name (its hash) when it is kept and when
//! replay uses it, so a file rewritten in place through a hard link is refused, never used.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::chunk::Digest;
use super::safe_fs::{self, Dir};
use super::{hex, FILES_DIR};

/// Whether and how a recording keeps the files it depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeepMode {
    /// Keep nothing: replay needs the original files, unchanged.
    Off,
    /// Hard link where possible, else copy.
    #[default]
    Link,
    /// Always copy (the trace stays valid even if an original is rewritten in place).
    Copy,
}

/// File keeping for a new trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeepFiles {
    pub mode: KeepMode,
    /// A content-addressed store shared by the traces of one trace root: files go there once
    /// and traces link to them.
    pub store: Option<PathBuf>,
}

/// One kept file, as listed in the summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KeptFile {
    /// blake3 of the contents, hex (also the file's name under `files/`).
    pub blake3: String,
    /// The path the program used.
    pub path: String,
    pub size: u64,
    /// Kept as a hard link (to the original or to the shared store) rather than a copy.
    pub linked: bool,
}

/// The writer's side: puts files into `TRACE/files/`.
pub(crate) struct Keeper {
    mode: KeepMode,
    files: Option<Dir>,
    store: Option<Dir>,
    kept: BTreeMap<Digest, KeptFile>,
    /// Bytes copied (not linked) into the trace or the store by this recording.
    pub copied_bytes: u64,
}

impl Keeper {
    pub fn new(keep: &KeepFiles) -> io::Result<Keeper> {
        let store = match (&keep.store, keep.mode) {
            (Some(s), KeepMode::Link | KeepMode::Copy) => Some(Dir::create_private(s, false)?),
            _ => None,
        };
        Ok(Keeper { mode: keep.mode, files: None, store, kept: BTreeMap::new(), copied_bytes: 0 })
    }

    /// The files kept so far, for the summary.
    pub fn list(&self) -> Vec<KeptFile> {
        self.kept.values().cloned().collect()
    }

    /// Keep `path`, whose contents hash to `blake3`. A file that cannot be kept (it changed
    /// since it was hashed, cannot be read, the disk is full) is reported and left out:
    /// replay then needs the original.
    pub fn keep(&mut self, trace: &Dir, path: &Path, blake3: &Digest) {
        if self.mode == KeepMode::Off || self.kept.contains_key(blake3) {
            return;
        }
        match self.try_keep(trace, path, blake3) {
            Ok(k) => {
                self.kept.insert(*blake3, k);
            }
            Err(e) => {
                eprintln!(
                    "rdb: warning: cannot keep a copy of {} in the trace ({e}); replaying it will need the original",
                    path.display()
                );
                // Do not try again for every mapping of the same file.
                self.kept
                    .insert(*blake3, KeptFile { blake3: String::new(), path: String::new(), size: 0, linked: false });
            }
        }
    }

    fn try_keep(&mut self, trace: &Dir, path: &Path, blake3: &Digest) -> io::Result<KeptFile> {
        if self.files.is_none() {
            self.files = Some(trace.subdir(FILES_DIR, true)?);
        }
        let files = self.files.as_ref().expect("just set");
        let name = hex(blake3);
        let link = self.mode == KeepMode::Link;
        let (size, linked) = if files.contains(&name) {
            (files.open_regular(&name)?.1, true)
        } else if let Some(store) = &self.store {
            let (size, _) = if store.contains(&name) {
                (store.open_regular(&name)?.1, true)
            } else {
                let (size, linked) = put(store, path, &name, blake3, link)?;
                if !linked {
                    self.copied_bytes += size;
                }
                (size, linked)
            };
            match files.link_from_dir(store, &name) {
                Ok(()) => (size, true),
                Err(_) => {
                    let (size, _) = put(files, &store.path().join(&name), &name, blake3, false)?;
                    self.copied_bytes += size;
                    (size, false)
                }
            }
        } else {
            let (size, linked) = put(files, path, &name, blake3, link)?;
            if !linked {
                self.copied_bytes += size;
            }
            (size, linked)
        };
        Ok(KeptFile { blake3: name, path: path.display().to_string(), size, linked })
    }
}

/// Put `src` into `dir` as `name`: a hard link when `link` and the filesystem allows, else a
/// copy; either way checked against `want` before it gets its name. Returns the size and
/// whether it is a link.
fn put(dir: &Dir, src: &Path, name: &str, want: &Digest, link: bool) -> io::Result<(u64, bool)> {
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    let _ = dir.remove_file(&tmp);
    if link && dir.link_from(src, &tmp).is_ok() {
        let (f, size) = dir.open_regular(&tmp)?;
        if &safe_fs::hash_file(&f)? == want {
            dir.rename(&tmp, name)?;
            return Ok((size, true));
        }
        let _ = dir.remove_file(&tmp);
        return Err(io::Error::other("it changed after it was hashed"));
    }
    let (mut from, size) = safe_fs::open_regular_path(src)?;
    let executable = {
        use std::os::unix::fs::PermissionsExt;
        from.metadata()?.permissions().mode() & 0o111 != 0
    };
    let mut out = dir.create_file(&tmp, executable)?;
    let mut hasher = blake3::Hasher::new();
    let copied = copy_hashing(&mut from, &mut out, &mut hasher).and_then(|_| out.sync_all());
    match copied {
        Ok(()) if hasher.finalize().as_bytes() == want => {
            dir.rename(&tmp, name)?;
            Ok((size, false))
        }
        Ok(_) => {
            let _ = dir.remove_file(&tmp);
            Err(io::Error::other("it changed after it was hashed"))
        }
        Err(e) => {
            let _ = dir.remove_file(&tmp);
            Err(e)
        }
    }
}

/// Copy `from` to `to`, hashing what is copied (large buffers: see [`safe_fs::IO_BUF`]).
fn copy_hashing(from: &mut impl Read, to: &mut impl Write, hasher: &mut blake3::Hasher) -> io::Result<()> {
    let mut buf = vec![0u8; safe_fs::IO_BUF];
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
        to.write_all(&buf[..n])?;
    }
}

/// The program interpreter (`PT_INTERP`, the dynamic loader) an ELF executable names, if any.
/// The kernel loads it from that path at exec, so replay checks it rather than using a copy.
pub fn elf_interpreter(path: &Path) -> Option<PathBuf> {
    use object::read::elf::{FileHeader, ProgramHeader};
    use std::os::unix::ffi::OsStrExt;
    let (f, size) = safe_fs::open_regular_path(path).ok()?;
    let mut data = vec![0u8; size.min(64 << 10) as usize];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut data, 0).ok()?;
    let header = object::elf::FileHeader64::<object::LittleEndian>::parse(&*data).ok()?;
    let endian = header.endian().ok()?;
    for ph in header.program_headers(endian, &*data).ok()? {
        if let Ok(Some(interp)) = ph.interpreter(endian, &*data) {
            return Some(PathBuf::from(std::ffi::OsStr::from_bytes(interp)));
        }
    }
    None
}

/// A file replay may use: checked against the hash the trace records for it.
#[derive(Debug)]
pub struct Checked {
    /// Where it is: the trace's copy, or the original path.
    pub path: PathBuf,
    pub file: std::fs::File,
    pub size: u64,
    /// It is the trace's copy.
    pub kept: bool,
}

/// Where replay finds the files a trace names: the trace's kept copies first, else the
/// original paths. Only files the trace's own record names are looked at (the caller passes
/// the path and hash from an event), each is hashed once, and a mismatch never reveals the
/// file's current hash.
pub struct ReplayFiles {
    trace: PathBuf,
    files: Option<Dir>,
    checked: std::collections::HashMap<Digest, Checked>,
    in_place: std::collections::HashSet<(PathBuf, Digest)>,
}

impl ReplayFiles {
    pub fn new(trace: &super::Trace) -> ReplayFiles {
        let files = Dir::open(trace.path()).and_then(|d| d.subdir(FILES_DIR, false)).ok();
        ReplayFiles {
            trace: trace.path().to_path_buf(),
            files,
            checked: Default::default(),
            in_place: Default::default(),
        }
    }

    /// The file the program used at `recorded` with contents `blake3`: the trace's copy when it
    /// has one, else the original, either checked.
    pub fn get(&mut self, recorded: &Path, blake3: &Digest) -> Result<&Checked, crate::Error> {
        if !self.checked.contains_key(blake3) {
            let name = hex(blake3);
            let kept = self.files.as_ref().and_then(|d| d.open_regular(&name).ok());
            let is_kept = kept.is_some();
            let (path, file, size) = match kept {
                Some((f, size)) => (self.trace.join(FILES_DIR).join(&name), f, size),
                None => {
                    let (f, size) = safe_fs::open_regular_path(recorded)
                        .map_err(|source| crate::Error::FileMissing { path: recorded.to_path_buf(), source })?;
                    (recorded.to_path_buf(), f, size)
                }
            };
            let now =
                safe_fs::hash_file(&file).map_err(|source| crate::Error::FileMissing { path: path.clone(), source })?;
            if &now != blake3 {
                return Err(if is_kept {
                    crate::Error::KeptFileChanged { path: recorded.to_path_buf(), kept: path, recorded: hex(blake3) }
                } else {
                    crate::Error::FileChanged { path, recorded: hex(blake3) }
                });
            }
            self.checked.insert(*blake3, Checked { path, file, size, kept: is_kept });
        }
        Ok(&self.checked[blake3])
    }

    /// Check that the file at `path` itself (not a copy: the kernel loads it by path, like a
    /// script's interpreter or an executable's dynamic loader) still hashes to `blake3`.
    pub fn check_in_place(&mut self, path: &Path, blake3: &Digest) -> Result<(), crate::Error> {
        if self.in_place.contains(&(path.to_path_buf(), *blake3)) {
            return Ok(());
        }
        let (f, _) = safe_fs::open_regular_path(path)
            .map_err(|source| crate::Error::FileMissing { path: path.to_path_buf(), source })?;
        let now =
            safe_fs::hash_file(&f).map_err(|source| crate::Error::FileMissing { path: path.to_path_buf(), source })?;
        if &now != blake3 {
            return Err(crate::Error::LoadedFileChanged { path: path.to_path_buf(), recorded: hex(blake3) });
        }
        self.in_place.insert((path.to_path_buf(), *blake3));
        Ok(())
    }
}
