//! Files mapped `MAP_SHARED`, shared again at replay.
//!
//! Replay turns a file mapping into anonymous memory filled from the trace (the program's
//! descriptors are not real files at replay). For a `MAP_SHARED` mapping that is not enough:
//! two processes that mapped the same file (`/dev/shm`, a file in `/tmp`) see each other's
//! stores. So the replayer keeps one copy of each such file (an unlinked file of its own, in
//! `/dev/shm` when it can), and maps that copy, shared, where the recording mapped the file:
//! at the `mmap`'s exit stop the replayed thread opens the copy through `/proc/<rdb>/fd/N`,
//! maps it over the anonymous memory with the recorded protection and offset, and closes it
//! (three injected calls, invisible to the program). Files are named by the path the recording
//! gave the mapped descriptor, like the scheduling units of `share`.
//!
//! Contents: the bytes the recording saw right after its `mmap` (its snapshot) are written into
//! the copy at every mapping, so a later mapper sees what it saw while recording even when the
//! file was also changed with `write` (which replay does not run); as the processes that share
//! the file are scheduled as one unit, the copy holds the same bytes then anyway. A mapping
//! recorded without a snapshot (a read-only system file) is filled from the file once.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use rdb_tracee::{mem, Pid};

use crate::process;
use crate::syscalls::Sysno;
use crate::trace::MappedFile;

/// The replay's copies of the files mapped `MAP_SHARED`, by recorded path.
#[derive(Default)]
pub(crate) struct SharedFiles {
    files: HashMap<Vec<u8>, File>,
}

/// Where and how the recording mapped a file.
pub(crate) struct Mapping {
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) prot: u64,
    pub(crate) flags: u64,
    pub(crate) offset: u64,
}

fn scratch_file() -> io::Result<File> {
    tempfile::tempfile_in("/dev/shm").or_else(|_| tempfile::tempfile())
}

impl SharedFiles {
    /// Map the replay's copy of `f` into stopped thread `pid` (at the exit stop of its `mmap`,
    /// which made anonymous memory at `m.addr`). `data` reads the mapped range from the file,
    /// for a mapping recorded without a snapshot.
    pub(crate) fn map(
        &mut self,
        pid: Pid,
        f: &MappedFile,
        m: &Mapping,
        data: impl FnOnce() -> Result<Vec<u8>, crate::Error>,
    ) -> Result<(), crate::Error> {
        let err = |what: &'static str| move |e: io::Error| crate::Error::ptrace(pid, what)(e);
        let fresh = !self.files.contains_key(&f.path);
        if fresh {
            let file = scratch_file().map_err(err("creating the replay's copy of a shared file"))?;
            self.files.insert(f.path.clone(), file);
        }
        let bytes = match &f.snapshot {
            Some(s) => Some(s.clone()),
            None if fresh => Some(data()?),
            None => None,
        };
        let file = &self.files[&f.path];
        let page = 4096u64;
        let end = m.offset.saturating_add(m.len).div_ceil(page) * page;
        let size = file.metadata().map_err(err("sizing a shared file"))?.len();
        if size < end {
            file.set_len(end).map_err(err("sizing a shared file"))?;
        }
        if let Some(b) = bytes {
            let n = b.len().min(m.len as usize);
            file.write_all_at(&b[..n], m.offset).map_err(err("filling a shared file"))?;
        }
        // The path goes into the new mapping itself (about to be replaced).
        let mut path = format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd()).into_bytes();
        path.push(0);
        mem::write(pid, m.addr, &path).map_err(err("writing a shared file's path"))?;
        let inject = |nr: Sysno, args: [u64; 6], what: &'static str| {
            process::inject_syscall(pid, nr as u64, args).map_err(err(what))
        };
        let fd = inject(
            Sysno::openat,
            [libc::AT_FDCWD as u64, m.addr, libc::O_RDWR as u64, 0, 0, 0],
            "opening a shared file",
        )?;
        if fd < 0 {
            return Err(crate::Error::Unsupported {
                pid,
                what: format!("the replayed process cannot open the replay's copy of a shared file: error {}", -fd),
            });
        }
        let keep = m.flags & (libc::MAP_NORESERVE | libc::MAP_POPULATE) as u64;
        let flags = (libc::MAP_SHARED | libc::MAP_FIXED) as u64 | keep;
        let at = inject(Sysno::mmap, [m.addr, m.len, m.prot, flags, fd as u64, m.offset], "mapping a shared file");
        let closed = inject(Sysno::close, [fd as u64, 0, 0, 0, 0, 0], "closing a shared file");
        let at = at?;
        closed?;
        if at as u64 != m.addr {
            return Err(crate::Error::Unsupported {
                pid,
                what: format!("mapping the replay's copy of a shared file at {:#x} gave {at:#x}", m.addr),
            });
        }
        Ok(())
    }
}
