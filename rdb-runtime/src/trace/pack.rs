//! Packed traces: one portable file, a zstd-compressed tar archive holding the trace's files
//! (`rdb-trace.json`, `events`, `summary.json`, `files/<blake3>`). `tar --zstd -xf` unpacks
//! one too; [`unpack`] does it defensively (only those names, only regular files, every kept
//! file checked against its name, nothing written outside a fresh private directory).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::safe_fs::{self, Dir};
use super::{hex, unhex, Event, Trace, TraceError, EVENTS_FILE, FILES_DIR, HEADER_FILE, MAX_JSON, SUMMARY_FILE};

/// The first bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// zstd level: packing is done once, unpacking often; 3 is zstd's default balance.
const LEVEL: i32 = 3;

/// Whether `path` looks like a packed trace (a zstd-compressed file).
pub fn looks_like_pack(path: &Path) -> bool {
    let Ok((f, _)) = safe_fs::open_regular_path(path) else { return false };
    let mut magic = [0u8; 4];
    (&f).read_exact(&mut magic).is_ok() && magic == ZSTD_MAGIC
}

/// What packing did.
#[derive(Debug, Clone, Default)]
pub struct PackOutcome {
    /// Kept files packed (from `files/`, or from their original paths for a trace recorded
    /// without keeping files, when they are unchanged).
    pub files: usize,
    /// Files the trace depends on that could not be packed (path and why): replaying the pack
    /// elsewhere will need them there, unchanged.
    pub missing: Vec<(String, String)>,
    /// Size of the archive.
    pub bytes: u64,
}

/// Every file (hash → path) the trace's own record says the program executed or mapped
/// without a snapshot.
fn needed_files(trace: &Trace) -> Result<BTreeMap<[u8; 32], Vec<u8>>, TraceError> {
    let mut out = BTreeMap::new();
    let mut events = trace.events()?;
    while let Some(ev) = events.next_event()? {
        match ev {
            Event::Exec { exe, blake3, image, image_blake3, interp, .. } => {
                out.entry(blake3).or_insert(exe);
                out.entry(image_blake3).or_insert(image);
                if let Some((path, hash)) = interp {
                    out.entry(hash).or_insert(path);
                }
            }
            Event::Syscall { file: Some(f), .. } if f.snapshot.is_none() => {
                out.entry(f.blake3).or_insert(f.path);
            }
            _ => {}
        }
    }
    Ok(out)
}

fn append(b: &mut tar::Builder<impl Write>, name: &str, mut f: &File, size: u64, exec: bool) -> io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_size(size);
    h.set_mode(if exec { 0o700 } else { 0o600 });
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mtime(0);
    b.append_data(&mut h, name, (&mut f).take(size))
}

fn executable(f: &File) -> bool {
    use std::os::unix::fs::PermissionsExt;
    f.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Pack an opened trace into `out` (created exclusively, mode 0600).
pub fn pack(trace: &Trace, out: &Path) -> Result<PackOutcome, TraceError> {
    let needed = needed_files(trace)?;
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(out)
            .map_err(TraceError::io(out))?
    };
    let enc = zstd::stream::write::Encoder::new(io::BufWriter::new(file), LEVEL).map_err(TraceError::io(out))?;
    let mut b = tar::Builder::new(enc);
    let mut outcome = PackOutcome::default();
    let dir = trace.path();
    for name in [HEADER_FILE, EVENTS_FILE, SUMMARY_FILE] {
        let p = dir.join(name);
        let Ok((f, size)) = safe_fs::open_regular_path(&p) else { continue };
        append(&mut b, name, &f, size, false).map_err(TraceError::io(out))?;
    }
    for (hash, path) in &needed {
        let name = format!("{FILES_DIR}/{}", hex(hash));
        let original = Path::new(OsStr::from_bytes(path));
        let (f, size) = match trace.open_kept(hash) {
            Some((_, f, size)) => (f, size),
            None => match safe_fs::open_regular_path(original) {
                Ok(x) => x,
                Err(e) => {
                    outcome.missing.push((original.display().to_string(), e.to_string()));
                    continue;
                }
            },
        };
        if &safe_fs::hash_file(&f).map_err(TraceError::io(original))? != hash {
            outcome.missing.push((original.display().to_string(), "it changed since it was recorded".into()));
            continue;
        }
        (&f).rewind_to_start().map_err(TraceError::io(original))?;
        append(&mut b, &name, &f, size, executable(&f)).map_err(TraceError::io(out))?;
        outcome.files += 1;
    }
    let enc = b.into_inner().map_err(TraceError::io(out))?;
    let mut w = enc.finish().map_err(TraceError::io(out))?;
    w.flush().map_err(TraceError::io(out))?;
    let f = w.into_inner().map_err(|e| TraceError::Io { path: out.to_path_buf(), source: e.into_error() })?;
    f.sync_all().map_err(TraceError::io(out))?;
    outcome.bytes = f.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(outcome)
}

trait Rewind {
    fn rewind_to_start(self) -> io::Result<()>;
}

impl Rewind for &File {
    fn rewind_to_start(mut self) -> io::Result<()> {
        use std::io::Seek;
        self.rewind()
    }
}

/// Unpack the packed trace `pack` into the new directory `dest` (created private; must not
/// exist or be empty). The result still has to be opened with [`Trace::open`], which checks
/// the trace itself.
pub fn unpack(pack: &Path, dest: &Path) -> Result<(), TraceError> {
    let bad = |why: String| TraceError::Corrupt { path: pack.to_path_buf(), offset: 0, why };
    let (f, _) = safe_fs::open_regular_path(pack).map_err(|e| bad(e.to_string()))?;
    let dir = Dir::create_private(dest, true).map_err(TraceError::io(dest))?;
    let mut dec = zstd::stream::read::Decoder::new(f).map_err(|e| bad(format!("not a packed trace: {e}")))?;
    dec.window_log_max(27).map_err(|e| bad(e.to_string()))?;
    let mut archive = tar::Archive::new(dec);
    let mut files: Option<Dir> = None;
    for entry in archive.entries().map_err(|e| bad(format!("not a packed trace: {e}")))? {
        let mut entry = entry.map_err(|e| bad(format!("damaged archive: {e}")))?;
        let kind = entry.header().entry_type();
        let raw_path = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw_path).into_owned();
        if kind == tar::EntryType::Directory && name.trim_end_matches('/') == FILES_DIR {
            continue;
        }
        if kind != tar::EntryType::Regular {
            return Err(bad(format!("{name}: only regular files belong in a packed trace")));
        }
        let size = entry.size();
        let exec = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
        let (target, file_name, want) = match name.split_once('/') {
            None if [HEADER_FILE, EVENTS_FILE, SUMMARY_FILE].contains(&name.as_str()) => {
                if name != EVENTS_FILE && size > MAX_JSON {
                    return Err(bad(format!("{name} is {size} bytes, more than a trace holds")));
                }
                (&dir, name.clone(), None)
            }
            Some((FILES_DIR, h)) if unhex(h).is_some() => {
                if files.is_none() {
                    files = Some(dir.subdir(FILES_DIR, true).map_err(TraceError::io(dest.join(FILES_DIR)))?);
                }
                (files.as_ref().expect("just set"), h.to_string(), unhex(h))
            }
            _ => return Err(bad(format!("unexpected entry {name:?}"))),
        };
        let out = target.create_file(&file_name, exec && want.is_some()).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                bad(format!("{name} appears twice"))
            } else {
                TraceError::Io { path: dest.join(&name), source: e }
            }
        })?;
        let mut hasher = blake3::Hasher::new();
        let mut w = io::BufWriter::new(out);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = entry.read(&mut buf).map_err(|e| bad(format!("{name}: damaged archive: {e}")))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            w.write_all(&buf[..n]).map_err(TraceError::io(dest.join(&name)))?;
        }
        w.flush().map_err(TraceError::io(dest.join(&name)))?;
        if let Some(want) = want {
            if hasher.finalize().as_bytes() != &want {
                return Err(bad(format!("{name} does not match its name (its contents were changed)")));
            }
        }
    }
    Ok(())
}

/// A fresh private directory name for unpacking `pack` under `parent`.
pub fn unpack_dir_name(parent: &Path, pack: &Path) -> PathBuf {
    let stem = pack.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    let stem = stem.strip_suffix(".tar.zst").unwrap_or(&stem).to_string();
    parent.join(stem)
}
