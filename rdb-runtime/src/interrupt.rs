//! Interruption points: a thread stopped in the middle of user code, named so that replay can
//! find the same point again without counting instructions (no performance counters). How the
//! recorder chooses a point and what is compared: `docs/ARCHITECTURE.md`, "Interruption
//! points"; the decision at each arrival: [`Seek::arrival`].
//!
//! The recorder interrupts a thread that runs user code without syscalls when an asynchronous
//! signal is pending for it (delivered at the point) or when another thread of its process has
//! waited for a turn too long and the thread spins (it is switched out at the point). A point
//! is named by its state as far as replay can compare it: the general registers (the pc among
//! them), the stack around the stack pointer (the red zone below it and [`STACK_WINDOW`] bytes
//! above), and a BLAKE3 digest of the x87/SSE registers, that stack window and, where a loop
//! keeps its progress in memory, the pages it changes ([`PointKey`]).
//!
//! Replay runs the thread to the first arrival whose key matches, through a stub patched into
//! the program that compares registers and stack itself (`point_stub`), else with a hardware
//! execution breakpoint (debug register [`REPLAY_SLOT`]) compared at each arrival.
//!
//! **Ambiguity.** An earlier arrival at the same pc with the same key but other memory would
//! match too early. The recorder watches arrivals after its stop for a key that comes back
//! ([`Seek::arrival`]); when one does with other memory, the pages that changed join the key;
//! with more than [`MAX_PAGES`] of them the point is *ambiguous*: the recorder tries another
//! stop a little later, [`MAX_TRIES`] times, then gives up and says so (the signal is held until
//! the thread's next syscall, as without interruption points; a spinning thread is left to the
//! watchdog). The check looks forwards from the stop only.

use std::collections::{HashMap, HashSet};
use std::io;

use rdb_tracee::ptrace::{self, Regs};
use rdb_tracee::{mem, procfs, Pid};

/// Bytes of stack above the stack pointer in a point's digest.
pub const STACK_WINDOW: u64 = 1024;
/// The red zone below the stack pointer (leaf functions keep locals there).
const RED_ZONE: u64 = 128;
/// Bytes of `PTRACE_GETFPREGS`' image in the digest: the x87 and SSE registers and MXCSR
/// (the rest is padding and the kernel's software-reserved bytes).
const FP_BYTES: usize = 416;
/// Stops the recorder tries before it gives a point up as ambiguous.
pub const MAX_TRIES: u32 = 4;
/// The debug register the replayer uses for interruption points.
pub const REPLAY_SLOT: usize = 3;
/// The debug register the recorder uses while it chooses a point.
pub const RECORD_SLOT: usize = 0;
/// `EFLAGS` bits that differ between kinds of stops at one point: the resume flag (set by the
/// kernel at an execution breakpoint) and the trap flag.
const FLAGS_IGNORED: u64 = (1 << 16) | (1 << 8);
/// Words of `user_regs_struct`.
pub const REG_WORDS: usize = ptrace::REG_WORDS;

/// What names a point: the registers, and the digest of the FP registers, the stack window
/// and the listed pages of memory.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PointKey {
    pub regs: [u64; REG_WORDS],
    /// The stack window's bytes (from the red zone on; short where the stack ends), which
    /// the replay's point stub compares in the program itself (see `point_stub`).
    pub stack: Vec<u8>,
    pub pages: Vec<u64>,
    pub digest: [u8; 32],
}

impl PointKey {
    /// The key of stopped thread `pid` with registers `regs`, with the contents of `pages`.
    pub fn of(pid: Pid, regs: &Regs, pages: &[u64]) -> io::Result<PointKey> {
        let stack = stack_window(pid, regs);
        let digest = digest_with(pid, &stack, pages)?;
        Ok(PointKey { regs: words(regs), stack, pages: pages.to_vec(), digest })
    }

    pub fn pc(&self) -> u64 {
        self.regs[16]
    }

    pub fn sp(&self) -> u64 {
        self.regs[19]
    }

    /// Whether `regs` (masked as [`same_regs`] does) are this point's registers.
    pub fn regs_match(&self, regs: &Regs) -> bool {
        same_regs(&self.regs, &words(regs))
    }

    /// The same point with the flags [`same_regs`] ignores cleared (for comparing keys whole).
    fn normal(mut self) -> PointKey {
        self.regs[18] &= !FLAGS_IGNORED;
        self
    }
}

/// `user_regs_struct` as its words, in declaration order (rip is word 16, eflags 18, rsp 19).
pub fn words(regs: &Regs) -> [u64; REG_WORDS] {
    ptrace::reg_words(regs)
}

/// Registers equal but for the flags that depend on how the thread stopped.
pub fn same_regs(a: &[u64; REG_WORDS], b: &[u64; REG_WORDS]) -> bool {
    a.iter().zip(b).enumerate().all(|(i, (x, y))| if i == 18 { (x ^ y) & !FLAGS_IGNORED == 0 } else { x == y })
}

/// BLAKE3 of the x87/SSE registers, the stack window and `pages` of stopped thread `pid`.
pub fn digest(pid: Pid, regs: &Regs, pages: &[u64]) -> io::Result<[u8; 32]> {
    digest_with(pid, &stack_window(pid, regs), pages)
}

/// The stack window of stopped thread `pid`: from the red zone below the stack pointer to
/// [`STACK_WINDOW`] bytes above it, short where the stack ends.
pub fn stack_window(pid: Pid, regs: &Regs) -> Vec<u8> {
    let mut stack = vec![0u8; (RED_ZONE + STACK_WINDOW) as usize];
    let n = mem::read(pid, regs.rsp.saturating_sub(RED_ZONE), &mut stack).unwrap_or(0);
    stack.truncate(n);
    stack
}

/// [`digest`] with the stack window already read.
fn digest_with(pid: Pid, stack: &[u8], pages: &[u64]) -> io::Result<[u8; 32]> {
    let fp = ptrace::get_fpregs(pid)?;
    let fp_bytes = ptrace::fpregs_bytes(&fp);
    let mut h = blake3::Hasher::new();
    h.update(&fp_bytes[..FP_BYTES]);
    h.update(&(stack.len() as u64).to_le_bytes());
    h.update(stack);
    let mut page = vec![0u8; PAGE as usize];
    for &p in pages {
        let n = mem::read(pid, p, &mut page).unwrap_or(0);
        h.update(&p.to_le_bytes());
        h.update(&(n as u64).to_le_bytes());
        h.update(&page[..n]);
    }
    Ok(*h.finalize().as_bytes())
}

const PAGE: u64 = 4096;

/// The BLAKE3 of every page of every private writable mapping of process `pid`.
pub fn page_hashes(pid: Pid) -> io::Result<PageHashes> {
    let mut hashes = HashMap::new();
    let shared: Vec<(u64, u64)> =
        procfs::shared_writable_mappings(pid)?.into_iter().map(|(start, end, _)| (start, end)).collect();
    let mut buf = vec![0u8; 1 << 20];
    for m in procfs::maps(pid)? {
        if !m.writable || !m.readable || shared.contains(&(m.start, m.end)) || m.name == "[vvar]" {
            continue;
        }
        let mut at = m.start;
        while at < m.end {
            let len = ((m.end - at) as usize).min(buf.len());
            let n = mem::read(pid, at, &mut buf[..len]).unwrap_or(0);
            for (i, page) in buf[..n].chunks(PAGE as usize).enumerate() {
                hashes.insert(at + i as u64 * PAGE, *blake3::hash(page).as_bytes());
            }
            if n < len {
                break;
            }
            at += len as u64;
        }
    }
    Ok(hashes)
}

/// Zeroes the signal frame that `rt_sigreturn` just consumed (stopped at its exit): from 8
/// bytes below the stack pointer at its entry (the frame's return address) up to the red zone
/// of the restored stack pointer `exit_sp`. Recording and replay both do it, so that this dead
/// memory is the same in both: the kernel writes fields into a frame that differ between them
/// (the last trap of the thread: a hardware breakpoint while recording, a point stub's `int3`
/// at replay; the last page fault's address), and a later point's stack window may cover bytes
/// of an old frame that the program never rewrote. Frames on an alternate signal stack (not
/// below `exit_sp`) and implausible ranges are left alone.
pub fn clear_signal_frame(pid: Pid, entry_sp: u64, exit_sp: u64) -> io::Result<()> {
    let (lo, hi) = (entry_sp.wrapping_sub(8), exit_sp.wrapping_sub(RED_ZONE));
    if hi <= lo || hi - lo > 64 * 1024 {
        return Ok(());
    }
    mem::write(pid, lo, &vec![0u8; (hi - lo) as usize])
}

/// The return address of the function stopped thread `pid` runs in, as far as the stack tells:
/// the first word above the stack pointer (within [`STACK_WINDOW`]) that points into
/// executable memory right after a call instruction. Arrivals there are once per call of the
/// function, where its own loops may come back to a pc millions of times (each arrival is a
/// stop at replay). A stale word is possible: the recorder stops waiting for it after a while.
///
/// Of the first eight such words, the first that `good` accepts is taken (the recorder's test:
/// replay can run to it without stopping at each arrival), else the first.
pub fn return_address(pid: Pid, regs: &Regs, good: impl Fn(u64) -> bool) -> Option<u64> {
    let maps = procfs::maps(pid).ok()?;
    let mut stack = vec![0u8; STACK_WINDOW as usize];
    let n = mem::read(pid, regs.rsp, &mut stack).ok()?;
    let candidates: Vec<u64> = stack
        .chunks_exact(8)
        .take(n / 8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .filter(|&v| {
            v != regs.rip
                && maps.iter().any(|m| m.executable && m.contains(v) && m.contains(v.saturating_sub(7)))
                && after_call(pid, v)
        })
        .take(8)
        .collect();
    candidates.iter().copied().find(|&c| good(c)).or(candidates.first().copied())
}

/// Whether the instruction before `addr` is a call (direct, or indirect through a register or
/// memory) that ends exactly at `addr`.
fn after_call(pid: Pid, addr: u64) -> bool {
    let mut code = [0u8; 7];
    if mem::read(pid, addr - 7, &mut code).ok() != Some(7) {
        return false;
    }
    [5usize, 2, 3, 6, 7].iter().any(|&len| crate::displace::is_call(addr - len as u64, &code[7 - len..]))
}

/// Why the recorder interrupts a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// An asynchronous signal is pending for it.
    Signal,
    /// Another thread of its process waits for a turn.
    Preempt,
}

/// Arrivals a search for a signal's point watches for a state that comes back before it takes
/// the last one.
pub const SIGNAL_ARRIVALS: u32 = 16;
/// Arrivals a search for a switch point watches for a state that comes back.
pub const SPIN_ARRIVALS: u32 = 500;
/// Most pages of memory a point's key may carry.
pub const MAX_PAGES: usize = 16;

/// The hash of each page of private writable memory (for telling which pages a loop changes).
pub type PageHashes = HashMap<u64, [u8; 32]>;

/// The recorder's search for a point in one thread (see the module docs).
#[derive(Debug, Clone)]
pub struct Seek {
    pub reason: Reason,
    /// The pc watched.
    pub pc: u64,
    /// Whether `pc` is the return address of the function the thread was stopped in.
    pub climbed: bool,
    /// Stops tried so far (each an ambiguous search but this one).
    pub tries: u32,
    /// The pages whose contents are part of the keys (found by `arrival`).
    pub pages: Vec<u64>,
    /// States seen at arrivals so far (flags normalized).
    seen: HashSet<PointKey>,
    /// The first state that came back, and the memory then: watched for once more.
    cycle: Option<(PointKey, PageHashes)>,
    arrivals: u32,
}

/// What the recorder does at an arrival during a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This arrival is the point (`fixed`: the loop came back to it with the same memory;
    /// `pages`: its key carries memory pages).
    Point { fixed: bool, pages: bool },
    /// Watch one more arrival.
    Again,
    /// The state comes back with other memory, and no key tells the iterations apart: try
    /// another stop.
    Ambiguous,
    /// A switch point: no state came back in [`SPIN_ARRIVALS`] arrivals; the thread computes
    /// rather than waits, and is left to run to its next syscall.
    NotASpin,
}

impl Seek {
    /// A search at the pc of the stop whose state is `first`.
    pub fn new(reason: Reason, first: PointKey, tries: u32) -> Seek {
        let mut seek = Seek::climbed(reason, first.pc(), tries);
        seek.climbed = false;
        seek.seen.insert(first.normal());
        seek
    }

    /// A search at the return address `pc` of the function the thread was stopped in.
    pub fn climbed(reason: Reason, pc: u64, tries: u32) -> Seek {
        Seek { reason, pc, climbed: true, tries, pages: Vec::new(), seen: HashSet::new(), cycle: None, arrivals: 0 }
    }

    /// A search at `pc`, which the thread reaches from its stop along straight-line code.
    pub fn ahead(reason: Reason, pc: u64, tries: u32) -> Seek {
        Seek { climbed: false, ..Seek::climbed(reason, pc, tries) }
    }

    /// Judge an arrival whose state is `now` (keyed with [`Seek::pages`]); `memory` hashes the
    /// writable memory page by page (only called when a state comes back).
    ///
    /// A state that comes back is watched for once more, and the memory of the two times
    /// compared: unchanged, the loop is a fixed point or cycle (every time round is the same
    /// state, so the first is as good as any) and this arrival is the point. Changed, the
    /// registers and stack do not tell the iterations apart: for a signal, the pages that
    /// changed (a loop counter in a global, an interpreter's heap) join the key and the next
    /// arrival is the point; a switch point is only taken in a loop that waits (fixed), since
    /// one whose progress is in memory would cost replay a stop per iteration. A signal's
    /// search with no state coming back takes its [`SIGNAL_ARRIVALS`]-th arrival; a switch
    /// search gives up ([`Verdict::NotASpin`]): the thread computes.
    pub fn arrival(&mut self, now: PointKey, memory: impl FnOnce() -> io::Result<PageHashes>) -> io::Result<Verdict> {
        let now = now.normal();
        self.arrivals += 1;
        let limit = match self.reason {
            Reason::Signal => SIGNAL_ARRIVALS,
            Reason::Preempt => SPIN_ARRIVALS,
        };
        if let Some((k, before)) = &self.cycle {
            if *k != now {
                return Ok(match self.arrivals > 4 * limit {
                    false => Verdict::Again,
                    true if self.reason == Reason::Preempt => Verdict::NotASpin,
                    true => Verdict::Ambiguous,
                });
            }
            let after = memory()?;
            let mut changed: Vec<u64> =
                after.iter().filter(|(p, h)| before.get(p) != Some(h)).map(|(p, _)| *p).collect();
            changed.extend(before.keys().filter(|p| !after.contains_key(p)));
            changed.sort_unstable();
            if changed.is_empty() {
                return Ok(Verdict::Point { fixed: true, pages: !self.pages.is_empty() });
            }
            if self.reason == Reason::Preempt || !self.pages.is_empty() || changed.len() > MAX_PAGES {
                return Ok(Verdict::Ambiguous);
            }
            self.pages = changed;
            self.cycle = None;
            self.seen.clear();
            return Ok(Verdict::Again);
        }
        if !self.pages.is_empty() {
            // The first arrival keyed with the pages that carry the loop's progress.
            return Ok(Verdict::Point { fixed: false, pages: true });
        }
        if !self.seen.insert(now.clone()) {
            self.cycle = Some((now, memory()?));
            return Ok(Verdict::Again);
        }
        Ok(match (self.arrivals >= limit, self.reason) {
            (false, _) => Verdict::Again,
            (true, Reason::Signal) => Verdict::Point { fixed: false, pages: false },
            (true, Reason::Preempt) => Verdict::NotASpin,
        })
    }
}

/// What the recorder saw of interruption points (printed with `RDB_INTERRUPT_STATS`, read by
/// `bench/interrupt_points.sh`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Points recorded.
    pub points: u64,
    /// Of which the loop was a fixed point (every arrival the same state).
    pub fixed: u64,
    /// Of which the key carries memory pages.
    pub with_pages: u64,
    /// Of which the pc's instruction can carry a replay stub (`point_stub`).
    pub patchable: u64,
    /// Searches found ambiguous (another stop was tried).
    pub ambiguous: u64,
    /// Searches given up after [`MAX_TRIES`] ambiguous ones.
    pub given_up: u64,
    /// Searches ended by a syscall or another event before a point was chosen.
    pub overtaken: u64,
    /// Searches at a return address that never came (the search went on at the stop's pc).
    pub stale_returns: u64,
    /// Switch searches that found a computation, not a spin (no switch).
    pub not_spins: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rax: u64, flags: u64, d: u8) -> PointKey {
        let mut regs = [0u64; REG_WORDS];
        regs[10] = rax;
        regs[18] = flags;
        PointKey { regs, stack: Vec::new(), pages: Vec::new(), digest: [d; 32] }
    }

    fn memory(pages: &[(u64, u8)]) -> PageHashes {
        pages.iter().map(|&(p, h)| (p, [h; 32])).collect()
    }

    #[test]
    fn resume_and_trap_flags_do_not_tell_points_apart_but_other_flags_do() {
        assert!(same_regs(&key(1, 0x246, 0).regs, &key(1, 0x246 | 1 << 16, 0).regs));
        assert!(same_regs(&key(1, 0x246, 0).regs, &key(1, 0x246 | 1 << 8, 0).regs));
        assert!(!same_regs(&key(1, 0x246, 0).regs, &key(1, 0x247, 0).regs));
        assert!(!same_regs(&key(1, 0x246, 0).regs, &key(2, 0x246, 0).regs));
    }

    #[test]
    fn a_signal_goes_to_the_last_of_its_arrivals_when_no_state_comes_back() {
        let mut s = Seek::climbed(Reason::Signal, 0x1000, 0);
        for rax in 1..SIGNAL_ARRIVALS as u64 {
            assert_eq!(s.arrival(key(rax, 0, 0), || unreachable!()).unwrap(), Verdict::Again);
        }
        let v = s.arrival(key(99, 0, 0), || unreachable!()).unwrap();
        assert_eq!(v, Verdict::Point { fixed: false, pages: false });
    }

    #[test]
    fn a_cycle_whose_progress_is_in_memory_keys_the_point_with_the_pages_it_changes() {
        // An interpreter loop: period 2 in the registers, a counter in the heap page 0x5000.
        let mut s = Seek::climbed(Reason::Signal, 0x1000, 0);
        assert_eq!(s.arrival(key(1, 0, 0), || unreachable!()).unwrap(), Verdict::Again);
        assert_eq!(s.arrival(key(2, 0, 0), || unreachable!()).unwrap(), Verdict::Again);
        let v = s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 1), (0x5000, 1)]))).unwrap();
        assert_eq!(v, Verdict::Again);
        assert_eq!(s.arrival(key(2, 0, 0), || unreachable!()).unwrap(), Verdict::Again);
        let v = s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 1), (0x5000, 2)]))).unwrap();
        assert_eq!(v, Verdict::Again);
        assert_eq!(s.pages, vec![0x5000]);
        let v = s.arrival(key(2, 0, 7), || unreachable!()).unwrap();
        assert_eq!(v, Verdict::Point { fixed: false, pages: true });
    }

    #[test]
    fn a_cycle_with_the_same_memory_is_a_fixed_point() {
        let mut s = Seek::new(Reason::Signal, key(1, 0, 0), 0);
        assert_eq!(s.arrival(key(1, 1 << 16, 0), || Ok(memory(&[(0x4000, 1)]))).unwrap(), Verdict::Again);
        let v = s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 1)]))).unwrap();
        assert_eq!(v, Verdict::Point { fixed: true, pages: false });
    }

    #[test]
    fn a_switch_point_is_only_taken_where_a_state_comes_back_with_the_same_memory() {
        // A spin with an inner pause loop of period 3 (a counter in rax).
        let mut s = Seek::new(Reason::Preempt, key(1, 0, 0), 0);
        for rax in [2, 3] {
            assert_eq!(s.arrival(key(rax, 0, 0), || unreachable!()).unwrap(), Verdict::Again, "rax {rax}");
        }
        assert_eq!(s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 1)]))).unwrap(), Verdict::Again);
        for rax in [2, 3] {
            assert_eq!(s.arrival(key(rax, 0, 0), || unreachable!()).unwrap(), Verdict::Again, "rax {rax}");
        }
        let v = s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 1)]))).unwrap();
        assert_eq!(v, Verdict::Point { fixed: true, pages: false });
        // The same spin counting in memory: ambiguous.
        let mut s = Seek::new(Reason::Preempt, key(1, 0, 0), 0);
        assert_eq!(s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 1)]))).unwrap(), Verdict::Again);
        let v = s.arrival(key(1, 0, 0), || Ok(memory(&[(0x4000, 2)]))).unwrap();
        assert_eq!(v, Verdict::Ambiguous);
        // A computation: no state comes back.
        let mut s = Seek::new(Reason::Preempt, key(0, 0, 0), 0);
        for rax in 1..SPIN_ARRIVALS as u64 {
            assert_eq!(s.arrival(key(rax, 0, 0), || unreachable!()).unwrap(), Verdict::Again);
        }
        assert_eq!(s.arrival(key(u64::MAX, 0, 0), || unreachable!()).unwrap(), Verdict::NotASpin);
    }

    #[test]
    fn register_words_follow_user_regs_struct() {
        let mut r = ptrace::zeroed_regs();
        r.rip = 0x1234;
        r.rsp = 0x7ff0;
        r.eflags = 0x246;
        let k = PointKey { regs: words(&r), stack: Vec::new(), pages: Vec::new(), digest: [0; 32] };
        assert_eq!((k.pc(), k.sp(), k.regs[18]), (0x1234, 0x7ff0, 0x246));
        assert!(k.regs_match(&r));
    }
}
