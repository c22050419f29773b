//! The debug host's own-process system calls: its sockets and shared mailbox, the memory it
//! reserves and re-protects to mirror the program, its signal handlers, and C stdio. Everything
//! about the *program* (another process) goes through `rdb_tracee`; dynamic loading of the
//! debug module stays in `host/module.rs`. Each function is a thin, allocation-free wrapper
//! (several run in the fault handler), with the `unsafe` call and its `// SAFETY:` reason here.

use std::ffi::c_void;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A connected `AF_UNIX` `SOCK_SEQPACKET` pair (close-on-exec): message boundaries are kept,
/// which the host protocol relies on.
pub(crate) fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors the kernel writes.
    check(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) })?;
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends one message (one packet); a short send is an error.
pub(crate) fn send(fd: RawFd, message: &[u8]) -> io::Result<()> {
    // SAFETY: message is a valid buffer for its length.
    let n = unsafe { libc::send(fd, message.as_ptr().cast(), message.len(), libc::MSG_NOSIGNAL) };
    if n != message.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message (one packet) into `buf`, retrying after signals.
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is writable for its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receives one message whose first `header.len()` bytes go to `header` and the rest to
/// `body`; the message's length, or -1.
pub(crate) fn recv_split(fd: RawFd, header: &mut [u8], body: &mut [u8]) -> isize {
    let mut iov = [
        libc::iovec { iov_base: header.as_mut_ptr().cast(), iov_len: header.len() },
        libc::iovec { iov_base: body.as_mut_ptr().cast(), iov_len: body.len() },
    ];
    // SAFETY: msghdr is plain data; zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = 2;
    // SAFETY: both iovecs point at writable memory of the given lengths.
    unsafe { libc::recvmsg(fd, &mut msg, 0) }
}

/// Whether `fd` is readable (or hung up) within `timeout_ms` (-1: wait forever).
pub(crate) fn readable(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n >= 0 {
            return Ok(n > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// An anonymous memory file (close-on-exec) of `len` bytes.
pub(crate) fn memfd(name: &std::ffi::CStr, len: u64) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; flags are valid.
    let fd = check(unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) })?;
    // SAFETY: fd is a fresh descriptor we own.
    let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.set_len(len)?;
    Ok(file.into())
}

/// Maps `len` bytes of `fd` shared, read-write, wherever the kernel likes.
pub(crate) fn map_shared(fd: RawFd, len: usize) -> io::Result<*mut c_void> {
    // SAFETY: a fresh mapping at an address the kernel picks: nothing of ours is replaced.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p)
}

/// Fresh anonymous read-write memory wherever the kernel likes (the signal stack).
pub(crate) fn map_anonymous(len: usize) -> Option<*mut c_void> {
    // SAFETY: a fresh mapping at an address the kernel picks: nothing of ours is replaced.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p)
}

/// Reserves `[addr, addr + len)` exactly, as anonymous memory with protection `prot`; false
/// when the host already has memory there (it is never replaced).
pub(crate) fn map_fixed(addr: u64, len: u64, prot: i32) -> bool {
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    let p = unsafe {
        libc::mmap(
            addr as *mut c_void,
            len as usize,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return false;
    }
    if p as u64 != addr {
        // A kernel without MAP_FIXED_NOREPLACE treats the address as a hint.
        unmap(p as u64, len);
        return false;
    }
    true
}

/// Unmaps memory this module mapped (the mirror's reservations, the mailbox).
pub(crate) fn unmap(addr: u64, len: u64) {
    // SAFETY: callers pass only ranges they mapped through this module and no longer use.
    unsafe { libc::munmap(addr as *mut c_void, len as usize) };
}

/// Changes the protection of memory this module mapped for the mirror.
pub(crate) fn protect(addr: u64, len: u64, prot: i32) {
    // SAFETY: callers pass only mirror ranges, which hold program copies, never Rust objects.
    unsafe { libc::mprotect(addr as *mut c_void, len as usize, prot) };
}

/// Drops the pages of a mirror range (`MADV_DONTNEED`): they read as missing again.
pub(crate) fn discard(addr: u64, len: u64) {
    // SAFETY: callers pass only mirror ranges, which hold program copies, never Rust objects.
    unsafe { libc::madvise(addr as *mut c_void, len as usize, libc::MADV_DONTNEED) };
}

/// The handler type of an `SA_SIGINFO` signal handler.
pub(crate) type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void);

/// Installs `handler` for `signal` on the alternate stack, with no signals blocked.
pub(crate) fn set_handler(signal: i32, handler: Handler) {
    // SAFETY: sigaction is plain data; all-zero is a valid (default) value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler as usize;
    sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: both pointers are valid; the handlers of this crate only make system calls and
    // touch the mirror state, as a signal handler must.
    unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(signal, &sa, std::ptr::null_mut());
    }
}

/// Runs signal handlers on `len` bytes at `stack` (so a stack overflow is still reported).
pub(crate) fn set_signal_stack(stack: *mut c_void, len: usize) {
    let ss = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: len };
    // SAFETY: `stack` is memory of ours, used for nothing else.
    unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
}

/// Flushes every C stdio stream (the debug module's `printf` output).
pub(crate) fn flush_c_stdio() {
    // SAFETY: fflush(NULL) flushes all of this process's open output streams.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

extern "C" {
    static stdout: *mut libc::FILE;
    static stderr: *mut libc::FILE;
    fn ftrylockfile(stream: *mut libc::FILE) -> libc::c_int;
    fn funlockfile(stream: *mut libc::FILE);
}

/// Flushes C's stdout and stderr unless another thread holds them (flushing would then wait
/// forever), and ends the process at once with `code`.
pub(crate) fn flush_and_exit(code: i32) -> ! {
    // SAFETY: glibc's standard streams; best effort before exiting without unwinding.
    unsafe {
        for stream in [stdout, stderr] {
            if ftrylockfile(stream) == 0 {
                libc::fflush(stream);
                funlockfile(stream);
            }
        }
        libc::_exit(code)
    }
}

/// A shared object loaded into this process with `dlopen` (never closed: its code and data
/// live as long as the host).
pub(crate) struct Library(*mut c_void);

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string owned by libdl, valid until the
    // next dl* call on this thread (copied at once).
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dynamic loader error".into()
        } else {
            std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Library {
    /// Loads `path` with every symbol bound now (`RTLD_NOW | RTLD_LOCAL`); the loader's
    /// message on failure.
    pub(crate) fn open(path: &std::ffi::CStr) -> Result<Library, String> {
        // SAFETY: dlopen runs the module's initialisers; the module is the user's debug code,
        // which the host exists to run.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dl_error());
        }
        Ok(Library(handle))
    }

    /// The object's load bias (`l_addr` of its link map).
    pub(crate) fn load_bias(&self) -> Result<u64, String> {
        /// The head of glibc's `struct link_map`.
        #[repr(C)]
        struct LinkMapHead {
            l_addr: usize,
        }
        let mut map: *mut LinkMapHead = std::ptr::null_mut();
        // SAFETY: RTLD_DI_LINKMAP stores a `struct link_map *` for our handle into `map`.
        if unsafe { libc::dlinfo(self.0, libc::RTLD_DI_LINKMAP, (&mut map as *mut *mut LinkMapHead).cast()) } != 0
            || map.is_null()
        {
            return Err(dl_error());
        }
        // SAFETY: a valid link_map from the loader, whose first field is l_addr.
        Ok(unsafe { (*map).l_addr } as u64)
    }

    /// The address of an exported symbol.
    pub(crate) fn symbol(&self, name: &std::ffi::CStr) -> Option<u64> {
        // SAFETY: dlsym on our handle with a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.0, name.as_ptr()) };
        (!p.is_null()).then_some(p as u64)
    }
}

/// The base address (`dli_fbase`) of the loaded object containing `address`, if any.
pub(crate) fn object_at(address: u64) -> Option<u64> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and writes `info`.
    let found = unsafe { libc::dladdr(address as *const c_void, &mut info) } != 0;
    // For an ELF shared object, dli_fbase is the address of its first mapping, which equals
    // the load bias when the first segment is at 0.
    found.then_some(info.dli_fbase as u64)
}
