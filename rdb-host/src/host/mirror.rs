//! The mirror of the program's address space inside the host process, and
//! the fault handler that fills it.
//!
//! Every readable program mapping is reserved in the host at the same
//! address as an anonymous `PROT_NONE` mapping. The first access to a page
//! faults; the `SIGSEGV` handler reads the page's bytes from the program
//! (`process_vm_readv`, or the replayer sends them), and maps it read-only
//! (read+exec where the program's mapping is executable). A *write* fault
//! (x86 page-fault error code bit 1) on a mirrored page is debug code
//! writing program memory: it is recorded and, by default, let through to a
//! private copy that is discarded after the call. After the program has run,
//! one `mprotect(PROT_NONE)` per touched mapping makes every page stale
//! again.
//!
//! With userfaultfd available (privileged host, see [`crate::FaultHandling`]),
//! readable mappings are reserved read-only and registered for missing-page
//! faults instead: a server thread fills pages with `UFFDIO_COPY`, which
//! also serves the faults the *kernel* takes on program memory (a system
//! call given a program buffer); invalidation is one `MADV_DONTNEED` per
//! touched mapping; the `SIGSEGV` handler still catches writes and
//! addresses not mirrored yet.
//!
//! Everything here runs either in the host's main loop, in the fault
//! handler, which interrupts debug code on the same thread, or in the
//! userfaultfd server thread while that thread is blocked in a fault; the
//! handlers allocate nothing and only make system calls.

use crate::protocol::{self, reason, RangeSpec, MAX_RANGES};
use std::cell::UnsafeCell;

const PAGE: u64 = 4096;
const MAX_WRITES: usize = 64;

#[derive(Clone, Copy)]
struct Range {
    start: u64,
    end: u64,
    prot: u32,
    /// Some page was filled since the last invalidation.
    touched: bool,
    /// The host itself has memory here: the range is not mirrored.
    collided: bool,
    /// Registered with userfaultfd (mapped with the program's protection).
    uffd: bool,
    /// Some page was made writable for a (reported) write by debug code.
    written: bool,
}

const EMPTY: Range = Range { start: 0, end: 0, prot: 0, touched: false, collided: false, uffd: false, written: false };

pub(crate) struct Mirror {
    pub fd: i32,
    pub pid: i32,
    pub fill: u32,
    pub chunk: u64,
    pub abort_on_write: bool,
    pub in_call: bool,
    /// The userfaultfd, or -1 (fault handler mode).
    pub uffd: i32,
    tables: [[Range; MAX_RANGES]; 2],
    lens: [usize; 2],
    current: usize,
    incoming: [RangeSpec; MAX_RANGES],
    pub writes: [u64; MAX_WRITES],
    pub nwrites: usize,
    pub wrote: bool,
    pub collisions: [RangeSpec; 16],
    pub ncollisions: usize,
    maps_buf: [u8; protocol::MAX_MESSAGE],
    /// Breakpoints the replayer planted in the program's text (module-relative
    /// address, original byte): mirrored pages show the original bytes, so
    /// debug code that runs program code never meets an `int3`.
    pub patches: [(u64, u8); MAX_PATCHES],
    pub npatches: usize,
    /// Load bias of the program's executable, for `patches`.
    pub bias: u64,
}

/// Most breakpoint bytes the mirror restores.
pub(crate) const MAX_PATCHES: usize = 4096;

struct Global(UnsafeCell<Mirror>);
// SAFETY: the host runs debug code on one thread; the state is touched by
// that thread (main loop, or its synchronous fault handler), or by the
// userfaultfd thread while that thread is blocked in a fault (never
// concurrently: the fault is resolved by the userfaultfd thread's copy,
// which it makes after its last access).
unsafe impl Sync for Global {}

static STATE: Global = Global(UnsafeCell::new(Mirror {
    fd: -1,
    pid: 0,
    fill: protocol::FILL_DIRECT,
    chunk: PAGE,
    abort_on_write: false,
    in_call: false,
    uffd: -1,
    tables: [[EMPTY; MAX_RANGES]; 2],
    lens: [0; 2],
    current: 0,
    incoming: [RangeSpec { start: 0, end: 0, prot: 0 }; MAX_RANGES],
    writes: [0; MAX_WRITES],
    nwrites: 0,
    wrote: false,
    collisions: [RangeSpec { start: 0, end: 0, prot: 0 }; 16],
    ncollisions: 0,
    maps_buf: [0; protocol::MAX_MESSAGE],
    patches: [(0, 0); MAX_PATCHES],
    npatches: 0,
    bias: 0,
}));

/// The mirror state.
///
/// # Safety
/// No two returned references may be used at overlapping times: the main
/// loop holds none across a call into debug code, during which only the
/// fault handler or the userfaultfd thread (while debug code waits in a
/// fault) use the state.
pub(crate) unsafe fn state() -> &'static mut Mirror {
    // SAFETY: see the function's contract.
    unsafe { &mut *STATE.0.get() }
}

impl Mirror {
    fn ranges(&self) -> &[Range] {
        &self.tables[self.current][..self.lens[self.current]]
    }

    fn find(&self, addr: u64) -> Option<usize> {
        let ranges = self.ranges();
        let i = ranges.partition_point(|r| r.end <= addr);
        (i < ranges.len() && ranges[i].start <= addr).then_some(i)
    }

    /// Makes every touched page stale: one `mprotect` (or `madvise`) per
    /// touched mapping.
    pub fn invalidate(&mut self) {
        let cur = self.current;
        for r in &mut self.tables[cur][..self.lens[cur]] {
            if r.touched && !r.collided {
                let (addr, len) = (r.start as *mut libc::c_void, (r.end - r.start) as usize);
                // SAFETY: [start, end) is a mapping this host created for the mirror.
                unsafe {
                    if r.uffd {
                        libc::madvise(addr, len, libc::MADV_DONTNEED);
                        if r.written {
                            libc::mprotect(addr, len, r.prot as i32);
                        }
                    } else {
                        libc::mprotect(addr, len, libc::PROT_NONE);
                    }
                }
                r.touched = false;
                r.written = false;
            }
        }
    }

    /// Puts the original bytes back where the replayer planted breakpoints in
    /// `buf`, which holds program memory from `start`. Allocation-free (runs
    /// in the fault handler).
    fn restore_code(&self, start: u64, buf: &mut [u8]) {
        for &(offset, byte) in &self.patches[..self.npatches] {
            let at = self.bias.wrapping_add(offset);
            if at >= start && at - start < buf.len() as u64 {
                buf[(at - start) as usize] = byte;
            }
        }
    }

    /// Fills the pages holding `(address, size)` program objects, in mappings
    /// untouched since the last invalidation (so no page is filled twice).
    /// Failures are ignored: the access faults later and is reported then.
    pub fn prefetch(&mut self, objects: &[(u64, u64)]) {
        const MOST_PAGES: u64 = 16;
        let cur = self.current;
        let untouched: Vec<bool> = self.ranges().iter().map(|r| !r.touched).collect();
        let mut done: Vec<u64> = Vec::new();
        let mut bounce: Vec<u8> = Vec::new();
        for &(address, size) in objects {
            let first = address & !(PAGE - 1);
            let last = address.saturating_add(size.max(1) - 1) & !(PAGE - 1);
            let mut page = first;
            while page <= last && page < first + MOST_PAGES * PAGE {
                let Some(i) = self.find(page) else { break };
                let r = self.tables[cur][i];
                let block = (page & !(self.chunk - 1)).max(r.start);
                let end = (block + self.chunk).min(r.end);
                if untouched[i] && !r.collided && r.prot & libc::PROT_READ as u32 != 0 && !done.contains(&block) {
                    done.push(block);
                    let ok = if r.uffd {
                        bounce.resize((end - block) as usize, 0);
                        read_program(self, &mut bounce, block, end - block)
                            && copy_in(self.uffd, &bounce, block, end - block)
                    } else {
                        fill(self, block, end - block, r.prot as i32)
                    };
                    if ok {
                        self.tables[cur][i].touched = true;
                    }
                }
                page = end.max(page + PAGE);
            }
        }
    }

    /// Replaces the mirrored set by the first `n` ranges of `incoming`
    /// (sorted, non-overlapping): unmaps what went away, reserves what is
    /// new. Collisions with the host's own memory are recorded in `collisions`.
    pub fn apply(&mut self, n: usize) {
        let cur = self.current;
        let next = 1 - cur;
        let old_len = self.lens[cur];
        // Unmap old ranges that are not in the new set (two sorted lists).
        let mut j = 0;
        for i in 0..old_len {
            let r = self.tables[cur][i];
            while j < n && self.incoming[j].start < r.start {
                j += 1;
            }
            let kept = j < n && same(&r, &self.incoming[j]);
            if !kept && !r.collided {
                // SAFETY: [start, end) is a mapping this host created for the mirror.
                unsafe { libc::munmap(r.start as *mut libc::c_void, (r.end - r.start) as usize) };
            }
        }
        let mut i = 0;
        for k in 0..n {
            let spec = self.incoming[k];
            while i < old_len && self.tables[cur][i].start < spec.start {
                i += 1;
            }
            let range = if i < old_len && same(&self.tables[cur][i], &spec) {
                self.tables[cur][i]
            } else {
                let readable = spec.prot & libc::PROT_READ as u32 != 0;
                let (collided, uffd) = match reserve(spec, if readable { self.uffd } else { -1 }) {
                    Reserved::Collision => (true, false),
                    Reserved::Uffd => (false, true),
                    Reserved::Signal => (false, false),
                };
                if collided && self.ncollisions < self.collisions.len() {
                    self.collisions[self.ncollisions] = spec;
                    self.ncollisions += 1;
                }
                Range {
                    start: spec.start,
                    end: spec.end,
                    prot: spec.prot,
                    touched: false,
                    collided,
                    uffd,
                    written: false,
                }
            };
            self.tables[next][k] = range;
        }
        self.lens[next] = n;
        self.current = next;
    }

    /// Applies a mapping list (a `MAPS` message body after the tag).
    /// Returns false when it is malformed.
    pub fn apply_message(&mut self, body: &[u8]) -> bool {
        match parse_ranges(&mut self.incoming, body) {
            Some(n) => {
                self.apply(n);
                true
            }
            None => false,
        }
    }
}

fn same(r: &Range, spec: &RangeSpec) -> bool {
    r.start == spec.start && r.end == spec.end && r.prot == spec.prot
}

/// Parses a count and that many sorted, non-overlapping ranges into `out`.
fn parse_ranges(out: &mut [RangeSpec; MAX_RANGES], body: &[u8]) -> Option<usize> {
    let mut r = protocol::Reader(body);
    let n = r.u32()? as usize;
    if n > MAX_RANGES {
        return None;
    }
    for k in 0..n {
        let spec = r.range()?;
        if spec.start >= spec.end
            || spec.start % PAGE != 0
            || spec.end % PAGE != 0
            || (k > 0 && out[k - 1].end > spec.start)
        {
            return None;
        }
        out[k] = spec;
    }
    Some(n)
}

enum Reserved {
    Collision,
    Signal,
    Uffd,
}

/// Reserves a program range at that exact address: registered with the
/// userfaultfd `uffd` when given (and it works), else `PROT_NONE` for the
/// fault handler. `Collision` when the host already has memory there.
fn reserve(spec: RangeSpec, uffd: i32) -> Reserved {
    let len = (spec.end - spec.start) as usize;
    let prot = if uffd >= 0 { spec.prot as i32 } else { libc::PROT_NONE };
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    let p = unsafe {
        libc::mmap(
            spec.start as *mut libc::c_void,
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Reserved::Collision;
    }
    if p as u64 != spec.start {
        // A kernel without MAP_FIXED_NOREPLACE treats the address as a hint.
        // SAFETY: p is the mapping just created.
        unsafe { libc::munmap(p, len) };
        return Reserved::Collision;
    }
    if uffd < 0 {
        return Reserved::Signal;
    }
    let mut reg = uffd::Register { start: spec.start, len: len as u64, mode: uffd::REGISTER_MODE_MISSING, ioctls: 0 };
    // SAFETY: registers our own fresh mapping.
    if unsafe { libc::ioctl(uffd, uffd::REGISTER, &mut reg) } == 0 {
        return Reserved::Uffd;
    }
    // SAFETY: our own mapping; fall back to the fault handler for it.
    unsafe { libc::mprotect(p, len, libc::PROT_NONE) };
    Reserved::Signal
}

/// The userfaultfd ABI (linux/userfaultfd.h), which the libc crate lacks.
pub(crate) mod uffd {
    pub const API: u64 = 0xaa;
    pub const IOC_API: libc::c_ulong = 0xc018_aa3f;
    pub const REGISTER: libc::c_ulong = 0xc020_aa00;
    pub const COPY: libc::c_ulong = 0xc028_aa03;
    pub const WAKE: libc::c_ulong = 0x8010_aa02;
    pub const REGISTER_MODE_MISSING: u64 = 1;
    pub const EVENT_PAGEFAULT: u8 = 0x12;

    #[repr(C)]
    pub struct Api {
        pub api: u64,
        pub features: u64,
        pub ioctls: u64,
    }
    #[repr(C)]
    pub struct Register {
        pub start: u64,
        pub len: u64,
        pub mode: u64,
        pub ioctls: u64,
    }
    #[repr(C)]
    pub struct Copy {
        pub dst: u64,
        pub src: u64,
        pub len: u64,
        pub mode: u64,
        pub copy: i64,
    }
    #[repr(C)]
    pub struct Range {
        pub start: u64,
        pub len: u64,
    }
    /// `struct uffd_msg` (32 bytes); for page faults the address is at 16.
    #[repr(C)]
    pub struct Msg {
        pub event: u8,
        pub reserved: [u8; 7],
        pub flags: u64,
        pub address: u64,
        pub rest: u64,
    }
}

/// Opens a userfaultfd that also serves faults taken in the kernel; -1 when
/// the kernel or the host's privileges do not allow it.
pub(crate) fn open_userfaultfd() -> i32 {
    // SAFETY: plain system calls on a new descriptor.
    unsafe {
        let fd = libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) as i32;
        if fd < 0 {
            return -1;
        }
        let mut api = uffd::Api { api: uffd::API, features: 0, ioctls: 0 };
        if libc::ioctl(fd, uffd::IOC_API, &mut api) != 0 {
            libc::close(fd);
            return -1;
        }
        fd
    }
}

/// The userfaultfd server: fills missing pages of mirrored ranges. Runs on
/// its own thread while debug code (or the kernel on its behalf) waits in
/// the fault.
pub(crate) fn serve_userfaultfd() {
    // SAFETY: reads the state while the main thread is blocked in a fault.
    let fd = unsafe { state() }.uffd;
    let mut bounce = vec![0u8; 256 * PAGE as usize];
    loop {
        let mut msg = uffd::Msg { event: 0, reserved: [0; 7], flags: 0, address: 0, rest: 0 };
        // SAFETY: reads one uffd_msg into msg.
        let n = unsafe { libc::read(fd, (&mut msg as *mut uffd::Msg).cast(), std::mem::size_of::<uffd::Msg>()) };
        if n != std::mem::size_of::<uffd::Msg>() as isize {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        if msg.event != uffd::EVENT_PAGEFAULT {
            continue;
        }
        // SAFETY: the faulting thread is blocked until we copy or wake.
        let st = unsafe { state() };
        let addr = msg.address;
        let page = addr & !(PAGE - 1);
        let Some(i) = st.find(addr) else { crash(st, libc::SIGSEGV, addr, reason::UNMAPPED) };
        let range = st.ranges()[i];
        let block = (addr & !(st.chunk - 1)).max(range.start);
        let end = (block + st.chunk).min(range.end);
        // Marked before the copy wakes the faulting thread: once it runs on,
        // the main loop may invalidate at any moment.
        let cur = st.current;
        st.tables[cur][i].touched = true;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let copied = (read_program(st, &mut bounce, block, end - block) && copy_in(fd, &bounce, block, end - block))
            || (read_program(st, &mut bounce, page, PAGE) && copy_in(fd, &bounce, page, PAGE));
        if !copied {
            crash(st, libc::SIGSEGV, addr, reason::UNREADABLE);
        }
    }
}

/// Installs `len` bytes of `bounce` at `dst`; true once the page at `dst`
/// is present (pages already present are kept, and the waiter woken).
fn copy_in(fd: i32, bounce: &[u8], dst: u64, len: u64) -> bool {
    let mut copy = uffd::Copy { dst, src: bounce.as_ptr() as u64, len, mode: 0, copy: 0 };
    // SAFETY: copies from our bounce buffer into our registered range.
    if unsafe { libc::ioctl(fd, uffd::COPY, &mut copy) } == 0 {
        return true;
    }
    if errno() == libc::EEXIST || copy.copy == -(libc::EEXIST as i64) || copy.copy > 0 {
        // Part of the block was present already: wake the waiter; it faults
        // again if its own page is still missing, and we fill that page alone.
        let mut range = uffd::Range { start: dst, len };
        // SAFETY: wakes threads waiting on our own range.
        unsafe { libc::ioctl(fd, uffd::WAKE, &mut range) };
        return len == PAGE || copy.copy > 0;
    }
    false
}

/// Reads program bytes into `bounce`, directly or through the replayer.
fn read_program(st: &mut Mirror, bounce: &mut [u8], start: u64, len: u64) -> bool {
    let buf = &mut bounce[..len as usize];
    let ok = loop {
        if st.fill == protocol::FILL_DIRECT {
            let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
            let remote = libc::iovec { iov_base: start as *mut libc::c_void, iov_len: buf.len() };
            // SAFETY: local points at our buffer.
            let n = unsafe { libc::process_vm_readv(st.pid, &local, 1, &remote, 1, 0) };
            if n < 0 && matches!(errno(), libc::EPERM | libc::ENOSYS) {
                st.fill = protocol::FILL_PARENT;
                continue;
            }
            break n == len as isize;
        }
        break request_bytes(st.fd, buf.as_mut_ptr() as u64, start, len);
    };
    if ok {
        st.restore_code(start, buf);
    }
    ok
}

/// Reads program bytes into [start, start+len) of the mirror and leaves the
/// pages with protection `prot`. False when the program has no readable
/// memory there.
fn fill(st: &mut Mirror, start: u64, len: u64, prot: i32) -> bool {
    let addr = start as *mut libc::c_void;
    // SAFETY: the pages belong to a mirror mapping of this host.
    unsafe { libc::mprotect(addr, len as usize, libc::PROT_READ | libc::PROT_WRITE) };
    let ok = loop {
        if st.fill == protocol::FILL_DIRECT {
            let local = libc::iovec { iov_base: addr, iov_len: len as usize };
            let remote = libc::iovec { iov_base: addr, iov_len: len as usize };
            // SAFETY: local points at len writable bytes of our own mirror.
            let n = unsafe { libc::process_vm_readv(st.pid, &local, 1, &remote, 1, 0) };
            if n < 0 && matches!(errno(), libc::EPERM | libc::ENOSYS) {
                // Not allowed to read the program directly (yama, another
                // user, a remote target): ask the replayer from now on.
                st.fill = protocol::FILL_PARENT;
                continue;
            }
            break n == len as isize;
        }
        break request_bytes(st.fd, start, start, len);
    };
    if ok {
        // SAFETY: the pages are ours and writable until the mprotect below.
        st.restore_code(start, unsafe { std::slice::from_raw_parts_mut(addr.cast::<u8>(), len as usize) });
    }
    let prot = if ok { prot } else { libc::PROT_NONE };
    // SAFETY: as above.
    unsafe { libc::mprotect(addr, len as usize, prot) };
    ok
}

/// Asks the replayer for the program bytes at `start`, received at `dst`.
fn request_bytes(fd: i32, dst: u64, start: u64, len: u64) -> bool {
    // One socket message must fit the socket buffer (≈200 KiB by default).
    const MOST: u64 = 64 * 1024;
    let mut done = 0;
    while done < len {
        let part = (len - done).min(MOST);
        if !request_part(fd, dst + done, start + done, part) {
            return false;
        }
        done += part;
    }
    true
}

fn request_part(fd: i32, dst: u64, start: u64, len: u64) -> bool {
    let mut req = [0u8; 24];
    req[0..4].copy_from_slice(&protocol::PAGE_REQUEST.to_le_bytes());
    req[8..16].copy_from_slice(&start.to_le_bytes());
    req[16..24].copy_from_slice(&len.to_le_bytes());
    if !send_all(fd, &req) {
        return false;
    }
    let mut header = [0u8; protocol::PAGE_DATA_HEADER];
    let mut iov = [
        libc::iovec { iov_base: header.as_mut_ptr().cast(), iov_len: header.len() },
        libc::iovec { iov_base: dst as *mut libc::c_void, iov_len: len as usize },
    ];
    // SAFETY: msghdr is plain data; zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = 2;
    // SAFETY: both iovecs point at writable memory of the given lengths.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    let tag = u32::from_le_bytes(header[0..4].try_into().unwrap());
    let err = i32::from_le_bytes(header[4..8].try_into().unwrap());
    let got = u32::from_le_bytes(header[8..12].try_into().unwrap());
    n == (protocol::PAGE_DATA_HEADER as u64 + len) as isize
        && tag == protocol::PAGE_DATA
        && err == 0
        && got as u64 == len
}

/// Asks the replayer for the program's current mappings and applies them.
fn refresh_maps(st: &mut Mirror) -> bool {
    if !send_all(st.fd, &protocol::MAPS_REQUEST.to_le_bytes()) {
        return false;
    }
    // SAFETY: maps_buf is ours and large enough for any MAPS message.
    let n = unsafe { libc::recv(st.fd, st.maps_buf.as_mut_ptr().cast(), st.maps_buf.len(), 0) };
    if n < 4 || st.maps_buf[0..4] != protocol::MAPS.to_le_bytes() {
        return false;
    }
    match parse_ranges(&mut st.incoming, &st.maps_buf[4..n as usize]) {
        Some(count) => {
            st.apply(count);
            true
        }
        None => false,
    }
}

fn send_all(fd: i32, bytes: &[u8]) -> bool {
    // SAFETY: bytes is a valid buffer; SEQPACKET sends it as one message.
    unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) == bytes.len() as isize }
}

fn errno() -> i32 {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Tells the replayer the host is dying, flushes C stdio so debug output
/// printed so far is kept, and exits.
/// Records a write by debug code to program memory (reported after the call);
/// under [`WritePolicy::Abort`](crate::WritePolicy) the call ends here.
fn note_write(st: &mut Mirror, signal: i32, addr: u64) {
    if st.nwrites < MAX_WRITES {
        st.writes[st.nwrites] = addr;
        st.nwrites += 1;
    }
    st.wrote = true;
    if st.abort_on_write {
        crash(st, signal, addr, reason::WRITE_ABORTED);
    }
}

fn crash(st: &Mirror, signal: i32, addr: u64, why: u32) -> ! {
    let mut msg = [0u8; 24];
    msg[0..4].copy_from_slice(&protocol::CRASHED.to_le_bytes());
    msg[4..8].copy_from_slice(&(signal as u32).to_le_bytes());
    msg[8..16].copy_from_slice(&addr.to_le_bytes());
    msg[16..20].copy_from_slice(&why.to_le_bytes());
    send_all(st.fd, &msg);
    // Keep what debug code printed so far, unless another thread holds the
    // stream (the faulting thread, when the userfaultfd thread gives up):
    // flushing would then wait forever.
    // SAFETY: glibc's standard streams; best effort before exiting.
    unsafe {
        for stream in [stdout, stderr] {
            if ftrylockfile(stream) == 0 {
                libc::fflush(stream);
                funlockfile(stream);
            }
        }
        libc::_exit(128 + signal)
    }
}

extern "C" {
    static stdout: *mut libc::FILE;
    static stderr: *mut libc::FILE;
    fn ftrylockfile(stream: *mut libc::FILE) -> libc::c_int;
    fn funlockfile(stream: *mut libc::FILE);
}

/// Runs the host's threads with `rdtsc` disabled, as the replayer and the
/// program: when they share a CPU, switching between them then needs no
/// control-register write (which the hypervisor traps). Clock reads in debug
/// code are emulated by rdb-runtime's SIGSEGV handler (a few µs each), which
/// hands every other fault on to [`on_fault`]: call after [`install_handlers`].
pub(crate) fn disable_tsc() -> std::io::Result<()> {
    // Never re-enabled: the host runs this way until it exits.
    std::mem::forget(rdb_tracee::this_process::disable_tsc_for_this_thread()?);
    Ok(())
}

extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes valid siginfo/ucontext pointers for SA_SIGINFO handlers.
    let (addr, error_code, sp) = unsafe {
        let uc = &*(context as *const libc::ucontext_t);
        let gregs = &uc.uc_mcontext.gregs;
        ((*info).si_addr() as u64, gregs[libc::REG_ERR as usize] as u64, gregs[libc::REG_RSP as usize] as u64)
    };
    // SAFETY: the handler interrupts the host's only thread while it runs debug code.
    let st = unsafe { state() };
    if signal != libc::SIGSEGV || !st.in_call {
        crash(st, signal, addr, reason::SIGNAL);
    }
    let write = error_code & 2 != 0;
    let fetch = error_code & 0x10 != 0;
    let mut index = st.find(addr);
    if index.is_none() && refresh_maps(st) {
        index = st.find(addr);
        if index.is_some() {
            // Newly mirrored: retry the access, which faults again the way
            // this range is served.
            return;
        }
    }
    let Some(i) = index else {
        // A fault within a few pages around the stack pointer is the host's
        // stack guard page, not a bad pointer.
        let why = if addr.abs_diff(sp) < 16 * PAGE { reason::STACK_OVERFLOW } else { reason::UNMAPPED };
        crash(st, signal, addr, why)
    };
    let range = st.ranges()[i];
    if range.collided {
        crash(st, signal, addr, reason::COLLISION);
    }
    if range.prot & libc::PROT_READ as u32 == 0 || (fetch && range.prot & libc::PROT_EXEC as u32 == 0) {
        crash(st, signal, addr, reason::NOT_READABLE);
    }
    let page = addr & !(PAGE - 1);
    let cur = st.current;
    if write && range.uffd {
        note_write(st, signal, addr);
        // Let the write land in a private copy (filled by the server thread
        // if the page is missing); it is discarded after the call.
        // SAFETY: a page of our own mirror mapping.
        unsafe { libc::mprotect(page as *mut libc::c_void, PAGE as usize, range.prot as i32 | libc::PROT_WRITE) };
        st.tables[cur][i].touched = true;
        st.tables[cur][i].written = true;
        return;
    }
    if range.uffd {
        // A read fault on a registered range is served by userfaultfd; a
        // SIGSEGV here means the access itself is not allowed.
        crash(st, signal, addr, reason::NOT_READABLE);
    }
    if write {
        note_write(st, signal, addr);
        // Let the write land in a private copy; it is discarded after the call.
        if !fill(st, page, PAGE, libc::PROT_READ | libc::PROT_WRITE | (range.prot as i32 & libc::PROT_EXEC)) {
            crash(st, signal, addr, reason::UNREADABLE);
        }
        st.tables[cur][i].touched = true;
        return;
    }
    let block = (addr & !(st.chunk - 1)).max(range.start);
    let end = (block + st.chunk).min(range.end);
    if !(fill(st, block, end - block, range.prot as i32) || fill(st, page, PAGE, range.prot as i32)) {
        crash(st, signal, addr, reason::UNREADABLE);
    }
    st.tables[cur][i].touched = true;
}

extern "C" fn on_fatal(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: valid siginfo from the kernel; single-threaded host.
    let (addr, st) = unsafe { ((*info).si_addr() as u64, state()) };
    let addr = if matches!(signal, libc::SIGILL | libc::SIGFPE | libc::SIGBUS) { addr } else { 0 };
    crash(st, signal, addr, reason::SIGNAL);
}

/// Installs the fault handler (on an alternate stack, so that a stack
/// overflow in debug code is reported too) and the fatal-signal reporter.
pub(crate) fn install_handlers() {
    const ALT_STACK: usize = 256 * 1024;
    // SAFETY: a fresh anonymous mapping used only as the signal stack.
    unsafe {
        let stack = libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if stack != libc::MAP_FAILED {
            let ss = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: ALT_STACK };
            libc::sigaltstack(&ss, std::ptr::null_mut());
        }
        for (signal, handler) in [
            (libc::SIGSEGV, on_fault as *const () as usize),
            (libc::SIGBUS, on_fatal as *const () as usize),
            (libc::SIGABRT, on_fatal as *const () as usize),
            (libc::SIGILL, on_fatal as *const () as usize),
            (libc::SIGFPE, on_fatal as *const () as usize),
            (libc::SIGTRAP, on_fatal as *const () as usize),
            (libc::SIGSYS, on_fatal as *const () as usize),
        ] {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(signal, &sa, std::ptr::null_mut());
        }
    }
}
