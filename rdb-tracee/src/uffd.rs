//! userfaultfd for a process that mirrors another one's memory (the debug host): register
//! ranges for missing-page faults, resolve them with `UFFDIO_COPY`, through the `userfaultfd`
//! crate. The descriptor also serves faults the kernel takes on those ranges (a system call
//! given a registered buffer), which needs `/dev/userfaultfd` access (root by default; the
//! crate opens the device where the kernel has it) or `CAP_SYS_PTRACE` /
//! `vm.unprivileged_userfaultfd=1` on older kernels.
//!
//! Everything here is allocation-free after [`Userfaultfd::open`]: it runs in a fault handler
//! and in a server thread while another thread of the process may hold the allocator's lock.

use std::ffi::c_void;

use userfaultfd::{Error, Event, Uffd, UffdBuilder};

/// A userfaultfd that serves kernel-mode faults too.
#[derive(Debug)]
pub struct Userfaultfd(Uffd);

/// What [`Userfaultfd::copy`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// Every byte was installed; waiters are woken.
    All,
    /// Some pages were present already (installed by someone else): this many bytes were
    /// copied before the first present page, and waiters are woken.
    Partly(usize),
    /// Nothing was installed.
    Failed,
}

impl Userfaultfd {
    /// A blocking, close-on-exec userfaultfd that serves kernel faults, or the reason why none
    /// can be had.
    pub fn open() -> Result<Userfaultfd, String> {
        UffdBuilder::new()
            .close_on_exec(true)
            .non_blocking(false)
            .user_mode_only(false)
            .create()
            .map(Userfaultfd)
            .map_err(|e| match e {
                Error::OpenDevUserfaultfd(io) => format!("cannot open /dev/userfaultfd: {io}"),
                Error::SystemError(errno) => {
                    format!("userfaultfd: {}", std::io::Error::from_raw_os_error(errno as i32))
                }
                other => other.to_string(),
            })
    }

    /// Register `[start, start + len)` (a mapping of this process) for missing-page faults.
    pub fn register(&self, start: u64, len: u64) -> bool {
        self.0.register(start as *mut c_void, len as usize).is_ok()
    }

    /// Install `src` at `dst` (page-aligned, inside a registered range) and wake the threads
    /// waiting for those pages.
    pub fn copy(&self, src: &[u8], dst: u64) -> Copied {
        // SAFETY: `src` is readable for its length; `dst` lies in a range registered by this
        // process, where the kernel installs fresh pages (it never overwrites present ones).
        match unsafe { self.0.copy(src.as_ptr().cast(), dst as *mut c_void, src.len(), true) } {
            Ok(n) if n >= src.len() => Copied::All,
            Ok(n) => {
                self.wake(dst, src.len() as u64);
                Copied::Partly(n)
            }
            Err(Error::PartiallyCopied(n)) if n < src.len() => {
                self.wake(dst, src.len() as u64);
                Copied::Partly(n)
            }
            Err(Error::CopyFailed(errno)) if errno as i32 == libc::EEXIST => {
                self.wake(dst, src.len() as u64);
                Copied::Partly(0)
            }
            Err(_) => Copied::Failed,
        }
    }

    /// Wake the threads waiting for pages of `[start, start + len)`.
    pub fn wake(&self, start: u64, len: u64) {
        let _ = self.0.wake(start as *mut c_void, len as usize);
    }

    /// Wait for the next missing-page fault; its address, or `None` when the descriptor is
    /// closed or broken.
    pub fn next_fault(&self) -> Option<u64> {
        loop {
            match self.0.read_event() {
                Ok(Some(Event::Pagefault { addr, .. })) => return Some(addr as u64),
                Ok(Some(_)) => continue,
                Err(Error::SystemError(errno)) if errno as i32 == libc::EINTR => continue,
                Ok(None) | Err(_) => return None,
            }
        }
    }
}
