//! A live thread under [`rdb_tracee::Thread`]: breakpoints, single-steps and hardware
//! watchpoints on a forked copy of this test process (same addresses, no exec), which runs
//! `victim` below.

use std::sync::atomic::{AtomicU64, Ordering};

use rdb_tracee::{ptrace, Control, Memory, Pid, Stop, Target, Thread, WatchKind, Watchpoint};

static COUNTER: AtomicU64 = AtomicU64::new(0);
static READS: AtomicU64 = AtomicU64::new(0);

#[inline(never)]
extern "C" fn marker(i: u64) -> u64 {
    std::hint::black_box(i)
}

/// Runs in the forked child: raw syscalls and plain memory accesses only.
fn victim() -> ! {
    ptrace::child_prepare_for_trace().expect("traceme");
    // SAFETY: raw syscalls in the forked child.
    unsafe { libc::raise(libc::SIGSTOP) };
    for i in 0..3 {
        marker(i);
        COUNTER.store(i + 1, Ordering::SeqCst);
        std::hint::black_box(READS.load(Ordering::SeqCst));
    }
    // SAFETY: leaving the forked child without running the parent's exit handlers.
    unsafe { libc::_exit(7) }
}

fn start() -> Thread {
    // SAFETY: the child only runs `victim`, which allocates nothing and takes no locks.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        victim();
    }
    let pid = Pid(pid);
    assert_eq!(ptrace::wait_pid(pid).unwrap(), ptrace::Wait::Stopped { sig: libc::SIGSTOP, event: 0 });
    ptrace::set_options(pid, libc::PTRACE_O_EXITKILL).unwrap();
    let mut t = Thread::new(pid, pid).unwrap();
    // The SIGSTOP that stopped it is not for the program.
    assert_eq!(t.step().unwrap(), Stop::Stepped);
    t
}

fn read_u64(t: &Thread, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    t.read_exact(addr, &mut b).unwrap();
    u64::from_le_bytes(b)
}

#[test]
fn breakpoints_stop_before_the_instruction_and_show_the_programs_bytes() {
    let mut t = start();
    let at = marker as *const () as u64;
    let mut orig = [0u8; 1];
    t.read_exact(at, &mut orig).unwrap();
    t.set_breakpoint(at).unwrap();
    let mut seen = [0u8; 1];
    t.read_exact(at, &mut seen).unwrap();
    assert_eq!(seen, orig, "reads show the program's byte, not the int3");
    for i in 0..3 {
        assert_eq!(t.resume().unwrap(), Stop::Breakpoint { addr: at });
        assert_eq!(t.regs().rip, at);
        assert_eq!(t.regs().rdi, i, "marker's argument");
        assert_eq!(read_u64(&t, &COUNTER as *const _ as u64), i);
    }
    t.remove_breakpoint(at).unwrap();
    assert_eq!(t.resume().unwrap(), Stop::Exited(7 << 8));
    assert!(t.resume().is_err());
}

#[test]
fn single_steps_advance_one_instruction() {
    let mut t = start();
    let at = marker as *const () as u64;
    t.set_breakpoint(at).unwrap();
    assert_eq!(t.resume().unwrap(), Stop::Breakpoint { addr: at });
    let sp = t.regs().rsp;
    assert_eq!(t.step().unwrap(), Stop::Stepped);
    assert_ne!(t.regs().rip, at);
    assert!(t.regs().rip > at && t.regs().rip < at + 16, "{:#x} after {at:#x}", t.regs().rip);
    assert!(t.regs().rsp <= sp);
    t.remove_breakpoint(at).unwrap();
    assert_eq!(t.resume().unwrap(), Stop::Exited(7 << 8));
}

#[test]
fn hardware_watchpoints_fire_on_writes_and_reads() {
    let mut t = start();
    let counter = &COUNTER as *const _ as u64;
    let reads = &READS as *const _ as u64;
    t.set_watchpoint(0, Watchpoint { addr: counter, len: 8, kind: WatchKind::Write }).unwrap();
    t.set_watchpoint(3, Watchpoint { addr: reads, len: 4, kind: WatchKind::ReadWrite }).unwrap();
    assert_eq!(rdb_tracee::debugreg::watchpoint(t.tid(), 3).unwrap().map(|w| w.len), Some(4));
    for i in 0..3 {
        // Data watchpoints stop after the access: the new value is there.
        assert_eq!(t.resume().unwrap(), Stop::Watchpoint { slots: 0b0001 });
        assert_eq!(read_u64(&t, counter), i + 1);
        assert_eq!(t.resume().unwrap(), Stop::Watchpoint { slots: 0b1000 });
    }
    t.remove_watchpoint(3).unwrap();
    t.remove_watchpoint(0).unwrap();
    assert_eq!(t.resume().unwrap(), Stop::Exited(7 << 8));
}

#[test]
fn misaligned_or_oversized_watchpoints_are_refused() {
    let mut t = start();
    let counter = &COUNTER as *const _ as u64;
    let err = t.set_watchpoint(0, Watchpoint { addr: counter + 1, len: 8, kind: WatchKind::Write }).unwrap_err();
    assert!(err.to_string().contains("aligned"), "{err}");
    let err = t.set_watchpoint(0, Watchpoint { addr: counter, len: 16, kind: WatchKind::Write }).unwrap_err();
    assert!(err.to_string().contains("1, 2, 4 or 8"), "{err}");
    assert!(t.set_watchpoint(4, Watchpoint { addr: counter, len: 8, kind: WatchKind::Write }).is_err());
    assert_eq!(t.threads().unwrap(), vec![t.pid()]);
    assert_eq!(t.resume().unwrap(), Stop::Exited(7 << 8));
}
