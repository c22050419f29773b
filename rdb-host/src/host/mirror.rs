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
use crate::sys;
use rdb_tracee::uffd::{Copied, Userfaultfd};
use rdb_tracee::Pid;
use std::cell::UnsafeCell;
use std::sync::OnceLock;

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

/// The host's userfaultfd, when it serves faults that way (set once, before any debug code
/// runs; read by the fault handler and the server thread).
static UFFD: OnceLock<Userfaultfd> = OnceLock::new();

/// The userfaultfd, if the host uses one.
pub(crate) fn userfaultfd() -> Option<&'static Userfaultfd> {
    UFFD.get()
}

impl Mirror {
    /// Whether `[addr, addr+len)` lies in one readable mirrored mapping.
    pub fn readable(&self, addr: u64, len: u64) -> bool {
        let Some(i) = self.find(addr) else { return false };
        let r = &self.ranges()[i];
        r.prot & libc::PROT_READ as u32 != 0 && !r.collided && addr.checked_add(len).is_some_and(|end| end <= r.end)
    }

    /// [`readable`](Self::readable), asking the replayer for the current mappings first when
    /// the mirror's do not cover the bytes (a heap or mapping the program made since they were
    /// last fetched: only a fault fetches them otherwise). Debug code's thread only, inside a
    /// call.
    pub fn readable_now(&mut self, addr: u64, len: u64) -> bool {
        if !self.readable(addr, len) && self.in_call {
            refresh_maps(self, addr);
        }
        self.readable(addr, len)
    }

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
                let len = r.end - r.start;
                if r.uffd {
                    sys::discard(r.start, len);
                    if r.written {
                        sys::protect(r.start, len, r.prot as i32);
                    }
                } else {
                    sys::protect(r.start, len, libc::PROT_NONE);
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
                    let ok = match userfaultfd().filter(|_| r.uffd) {
                        Some(uffd) => {
                            bounce.resize((end - block) as usize, 0);
                            read_program(self, &mut bounce, block, end - block)
                                && copy_in(uffd, &bounce[..(end - block) as usize], block)
                        }
                        None => fill(self, block, end - block, r.prot as i32),
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
                sys::unmap(r.start, r.end - r.start);
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
                let (collided, uffd) = match reserve(spec, userfaultfd().filter(|_| readable)) {
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
fn reserve(spec: RangeSpec, uffd: Option<&Userfaultfd>) -> Reserved {
    let len = spec.end - spec.start;
    let prot = if uffd.is_some() { spec.prot as i32 } else { libc::PROT_NONE };
    if !sys::map_fixed(spec.start, len, prot) {
        return Reserved::Collision;
    }
    match uffd {
        None => Reserved::Signal,
        Some(uffd) if uffd.register(spec.start, len) => Reserved::Uffd,
        Some(_) => {
            // Fall back to the fault handler for this range.
            sys::protect(spec.start, len, libc::PROT_NONE);
            Reserved::Signal
        }
    }
}

/// Opens the host's userfaultfd (serving faults taken in the kernel too), or says why it
/// cannot. Call once, before [`serve_userfaultfd`] starts.
pub(crate) fn open_userfaultfd() -> Result<(), String> {
    let uffd = Userfaultfd::open()?;
    UFFD.set(uffd).map_err(|_| "the userfaultfd was opened twice".to_string())
}

/// The userfaultfd server: fills missing pages of mirrored ranges. Runs on
/// its own thread while debug code (or the kernel on its behalf) waits in
/// the fault.
pub(crate) fn serve_userfaultfd() {
    let Some(uffd) = userfaultfd() else { return };
    let mut bounce = vec![0u8; 256 * PAGE as usize];
    while let Some(addr) = uffd.next_fault() {
        // SAFETY: the faulting thread is blocked until we copy or wake.
        let st = unsafe { state() };
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
        let copied = (read_program(st, &mut bounce, block, end - block)
            && copy_in(uffd, &bounce[..(end - block) as usize], block))
            || (read_program(st, &mut bounce, page, PAGE) && copy_in(uffd, &bounce[..PAGE as usize], page));
        if !copied {
            crash(st, libc::SIGSEGV, addr, reason::UNREADABLE);
        }
    }
}

/// Installs `bytes` at `dst`; true once the page at `dst` is present (pages
/// already present are kept, and the waiter woken: it faults again if its own
/// page is still missing, and that page is then filled alone).
fn copy_in(uffd: &Userfaultfd, bytes: &[u8], dst: u64) -> bool {
    match uffd.copy(bytes, dst) {
        Copied::All => true,
        Copied::Partly(n) => n > 0 || bytes.len() as u64 == PAGE,
        Copied::Failed => false,
    }
}

/// Reads program bytes into `bounce`, directly or through the replayer.
fn read_program(st: &mut Mirror, bounce: &mut [u8], start: u64, len: u64) -> bool {
    let buf = &mut bounce[..len as usize];
    let ok = loop {
        if st.fill == protocol::FILL_DIRECT {
            match direct_read(st, start, buf) {
                Some(ok) => break ok,
                None => continue,
            }
        }
        break request_bytes(st.fd, buf, start);
    };
    if ok {
        st.restore_code(start, buf);
    }
    ok
}

/// Reads `buf.len()` program bytes at `start` with `process_vm_readv`: whether
/// they all came, or `None` when the kernel refuses such reads (yama, another
/// user, a remote target), after which the replayer is asked instead.
fn direct_read(st: &mut Mirror, start: u64, buf: &mut [u8]) -> Option<bool> {
    match rdb_tracee::mem::read(Pid(st.pid), start, buf) {
        Ok(n) => Some(n == buf.len()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOSYS)) => {
            st.fill = protocol::FILL_PARENT;
            None
        }
        Err(_) => Some(false),
    }
}

/// Reads program bytes into [start, start+len) of the mirror and leaves the
/// pages with protection `prot`. False when the program has no readable
/// memory there.
fn fill(st: &mut Mirror, start: u64, len: u64, prot: i32) -> bool {
    sys::protect(start, len, libc::PROT_READ | libc::PROT_WRITE);
    // SAFETY: [start, start+len) lies in a mirror mapping of this host, readable and
    // writable until the protect below; it holds program bytes, never Rust objects, and
    // nothing else refers to it while the handler or main loop fills it.
    let pages = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, len as usize) };
    let ok = loop {
        if st.fill == protocol::FILL_DIRECT {
            match direct_read(st, start, pages) {
                Some(ok) => break ok,
                None => continue,
            }
        }
        break request_bytes(st.fd, pages, start);
    };
    if ok {
        st.restore_code(start, pages);
    }
    sys::protect(start, len, if ok { prot } else { libc::PROT_NONE });
    ok
}

/// Asks the replayer for the program bytes at `start`, received into `dst`.
fn request_bytes(fd: i32, dst: &mut [u8], start: u64) -> bool {
    // One socket message must fit the socket buffer (≈200 KiB by default).
    const MOST: usize = 64 * 1024;
    dst.chunks_mut(MOST).enumerate().all(|(i, part)| request_part(fd, part, start + (i * MOST) as u64))
}

fn request_part(fd: i32, dst: &mut [u8], start: u64) -> bool {
    let len = dst.len() as u64;
    let mut req = [0u8; 24];
    req[0..4].copy_from_slice(&protocol::PAGE_REQUEST.to_le_bytes());
    req[8..16].copy_from_slice(&start.to_le_bytes());
    req[16..24].copy_from_slice(&len.to_le_bytes());
    if sys::send(fd, &req).is_err() {
        return false;
    }
    let mut header = [0u8; protocol::PAGE_DATA_HEADER];
    let n = sys::recv_split(fd, &mut header, dst);
    let tag = u32::from_le_bytes(header[0..4].try_into().unwrap());
    let err = i32::from_le_bytes(header[4..8].try_into().unwrap());
    let got = u32::from_le_bytes(header[8..12].try_into().unwrap());
    n == (protocol::PAGE_DATA_HEADER as u64 + len) as isize
        && tag == protocol::PAGE_DATA
        && err == 0
        && got as u64 == len
}

/// Asks the replayer for the program's current mappings, naming the address debug code
/// touched (a target that cannot list its mappings probes around it), and applies them.
fn refresh_maps(st: &mut Mirror, addr: u64) -> bool {
    let mut req = [0u8; 16];
    req[0..4].copy_from_slice(&protocol::MAPS_REQUEST.to_le_bytes());
    req[8..16].copy_from_slice(&addr.to_le_bytes());
    if sys::send(st.fd, &req).is_err() {
        return false;
    }
    let n = match sys::recv(st.fd, &mut st.maps_buf) {
        Ok(n) if n >= 4 && st.maps_buf[0..4] == protocol::MAPS.to_le_bytes() => n,
        _ => return false,
    };
    match parse_ranges(&mut st.incoming, &st.maps_buf[4..n]) {
        Some(count) => {
            st.apply(count);
            true
        }
        None => false,
    }
}

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
    let _ = sys::send(st.fd, &msg);
    // Keep what debug code printed so far (unless another thread holds the
    // stream: the faulting thread, when the userfaultfd thread gives up).
    sys::flush_and_exit(128 + signal)
}

/// Runs the host's threads with `rdtsc` disabled, as the replayer and the
/// program: when they share a CPU, switching between them then needs no
/// control-register write (which the hypervisor traps). Clock reads in debug
/// code are emulated by rdb-tracee's SIGSEGV handler (a few µs each), which
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
    if index.is_none() && refresh_maps(st, addr) {
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
        sys::protect(page, PAGE, range.prot as i32 | libc::PROT_WRITE);
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
    if let Some(stack) = sys::map_anonymous(ALT_STACK) {
        sys::set_signal_stack(stack, ALT_STACK);
    }
    sys::set_handler(libc::SIGSEGV, on_fault);
    for signal in [libc::SIGBUS, libc::SIGABRT, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP, libc::SIGSYS] {
        sys::set_handler(signal, on_fatal);
    }
}
