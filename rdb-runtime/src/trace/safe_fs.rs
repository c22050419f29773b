//! File access for traces that never follows a planted symlink, never blocks on a special
//! file and never reads more than a bound.
//!
//! A trace directory is worked on through an open directory descriptor ([`Dir`]): once it
//! has been checked (a real directory, owned by the user, writable by nobody else), renaming
//! or replacing path components above it changes nothing. Files are created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600 (0700 for kept executables), directories
//! with 0700: a trace is private to the user who recorded it.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};

/// An open directory.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn mode(m: u32) -> Mode {
    Mode::from_raw_mode(m)
}

/// Open flags for reading a file named by a trace: no blocking on a FIFO, no controlling tty.
fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY
}

impl Dir {
    /// Open an existing directory for reading (a symlink to it is followed: `latest`).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Dir { fd, path: path.to_path_buf() })
    }

    /// Create `path` (mode 0700, parents too) or take over an existing directory, for writing a
    /// trace or a file store into it. An existing one must be a real directory (not a symlink)
    /// owned by the user and writable by nobody else, and, with `must_be_empty`, empty; it is
    /// then made private (0700).
    pub fn create_private(path: &Path, must_be_empty: bool) -> io::Result<Dir> {
        Self::create_private_at(path, must_be_empty, false)
    }

    /// Like [`Dir::create_private`], but `path` itself may be a symlink to such a directory (a
    /// trace root the user configured), whose target is checked instead; an existing one keeps
    /// its mode (a root such as `$HOME` is not made private: the traces in it are).
    pub fn create_private_following(path: &Path) -> io::Result<Dir> {
        Self::create_private_at(path, false, true)
    }

    fn create_private_at(path: &Path, must_be_empty: bool, follow: bool) -> io::Result<Dir> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.exists() {
                std::fs::DirBuilder::new().recursive(true).mode_private().create(parent)?;
            }
        }
        let existed = match rustix::fs::mkdir(path, mode(0o700)) {
            Ok(()) => false,
            Err(rustix::io::Errno::EXIST) => true,
            Err(e) => return Err(e.into()),
        };
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY
                | OFlags::DIRECTORY
                | OFlags::CLOEXEC
                | if follow { OFlags::empty() } else { OFlags::NOFOLLOW },
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symbolic link or not a directory (rdb writes traces only into real directories)",
            ),
            e => e.into(),
        })?;
        let st = rustix::fs::fstat(&fd)?;
        if st.st_uid != rustix::process::geteuid().as_raw() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("is owned by uid {}, not by you: refusing to write a trace into it", st.st_uid),
            ));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "is writable by other users (mode {:o}): they could replace what rdb writes there",
                    st.st_mode & 0o7777
                ),
            ));
        }
        if st.st_mode & 0o077 != 0 && !(follow && existed) {
            rustix::fs::fchmod(&fd, mode(0o700))?;
        }
        let dir = Dir { fd, path: path.to_path_buf() };
        if must_be_empty && dir.entries()?.next().is_some() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "exists and is not empty"));
        }
        Ok(dir)
    }

    /// The path this directory was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Names of the entries (without `.` and `..`).
    pub fn entries(&self) -> io::Result<impl Iterator<Item = PathBuf>> {
        let fd =
            rustix::fs::openat(&self.fd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let dir = rustix::fs::Dir::new(fd)?;
        Ok(dir.filter_map(|e| e.ok()).filter_map(|e| {
            let name = e.file_name().to_bytes();
            (name != b"." && name != b"..").then(|| PathBuf::from(OsStr::from_bytes(name)))
        }))
    }

    /// A subdirectory, created (0700) when `create` and missing. Never follows a symlink.
    pub fn subdir(&self, name: &str, create: bool) -> io::Result<Dir> {
        if create {
            match rustix::fs::mkdirat(&self.fd, name, mode(0o700)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir { fd, path: self.path.join(name) })
    }

    /// Create a new file exclusively (never an existing file, never through a symlink).
    pub fn create_file(&self, name: &str, executable: bool) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode(if executable { 0o700 } else { 0o600 }),
        )?;
        Ok(File::from(fd))
    }

    /// Open an entry for reading: it must be a regular file (a symlink, FIFO or device is
    /// refused without blocking). Returns the file and its size.
    pub fn open_regular(&self, name: &str) -> io::Result<(File, u64)> {
        let fd = rustix::fs::openat(&self.fd, name, read_flags() | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| {
            if e == rustix::io::Errno::LOOP {
                io::Error::new(io::ErrorKind::InvalidData, "is a symbolic link, not a regular file")
            } else {
                e.into()
            }
        })?;
        regular(fd)
    }

    /// Whether `name` exists (as anything; symlinks are not followed).
    pub fn contains(&self, name: &str) -> bool {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// Hard-link `src` (a path, symlinks followed) as `name` in this directory.
    pub fn link_from(&self, src: &Path, name: &str) -> io::Result<()> {
        Ok(rustix::fs::linkat(CWD, src, &self.fd, name, AtFlags::SYMLINK_FOLLOW)?)
    }

    /// Hard-link `from/name` as `name` in this directory.
    pub fn link_from_dir(&self, from: &Dir, name: &str) -> io::Result<()> {
        Ok(rustix::fs::linkat(&from.fd, name, &self.fd, name, AtFlags::empty())?)
    }

    /// Rename an entry (replacing `to` if it exists).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Remove a file entry.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Number of hard links of a file entry.
    pub fn link_count(&self, name: &str) -> io::Result<u64> {
        Ok(rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)?.st_nlink)
    }
}

/// `recursive(true)` with mode 0700 for directories rdb creates.
trait PrivateMode {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateMode for std::fs::DirBuilder {
    fn mode_private(&mut self) -> &mut Self {
        use std::os::unix::fs::DirBuilderExt;
        self.mode(0o700)
    }
}

fn regular(fd: OwnedFd) -> io::Result<(File, u64)> {
    let st = rustix::fs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is a {}, not a regular file", describe(kind))));
    }
    // Reads of a regular file never block; clear O_NONBLOCK anyway for plain semantics.
    rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
    Ok((File::from(fd), st.st_size as u64))
}

fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "directory",
        FileType::Fifo => "FIFO",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Socket => "socket",
        FileType::Symlink => "symbolic link",
        _ => "special file",
    }
}

/// Open a file by path for reading: symlinks are followed (paths the program used may be
/// links), but the result must be a regular file, and opening a FIFO does not block.
pub fn open_regular_path(path: &Path) -> io::Result<(File, u64)> {
    regular(rustix::fs::open(path, read_flags(), Mode::empty())?)
}

/// Read a whole file of at most `limit` bytes (more is an error, not an allocation).
pub fn read_bounded(mut f: &File, size: u64, limit: u64) -> io::Result<Vec<u8>> {
    if size > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{size} bytes, more than the {limit} allowed")));
    }
    let mut out = Vec::with_capacity(size as usize);
    (&mut f).take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("more than the {limit} bytes allowed")));
    }
    Ok(out)
}

/// Read buffer for hashing and copying: blake3 hashes large inputs several chunks at a time
/// (SIMD), which `io::copy`'s 8 KiB buffer defeats (measured: 3x slower on libLLVM).
pub const IO_BUF: usize = 1 << 20;

/// blake3 of an open file, from its current position (its start when just opened).
pub fn hash_file(mut f: &File) -> io::Result<[u8; 32]> {
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; IO_BUF];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(*h.finalize().as_bytes())
}
