//! The calling process's own system interface that the tracer side needs: CPU placement, the
//! time-stamp counter switch with its emulating `SIGSEGV` handler, clocks that work without the
//! TSC, and waiting on a descriptor. (Everything about *another* process is in the other
//! modules of this crate.)

use std::ffi::c_void;
use std::io;
use std::time::Duration;

/// Ignore the terminal's interrupt and quit signals in this process, so a Ctrl-C reaches the
/// traced program (same process group) and the tracer lives to finish its work.
pub fn ignore_terminal_signals() {
    // SAFETY: installing SIG_IGN has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
}

/// Die with `SIGKILL` when the thread that started this process exits (`PR_SET_PDEATHSIG`).
pub fn die_with_parent() {
    // SAFETY: integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
}

/// Wait until `fd` is readable (or hung up), at most `timeout`; false on timeout. The kernel
/// keeps the deadline (`ppoll`), so this reads no clock in user space.
pub fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64 / 2) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    loop {
        // SAFETY: one valid pollfd; the timespec is only read; no signal mask is passed.
        let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if r == -1 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue; // at worst the wait restarts with the whole timeout
            }
            return Err(err);
        }
        return Ok(r > 0);
    }
}

/// The standard descriptors (bit `fd`) that were closed when this process started.
static CLOSED_AT_START: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Note which of the standard descriptors 0, 1 and 2 are closed. Rust's runtime opens
/// `/dev/null` on closed ones before `main`, so a binary that must tell a closed descriptor
/// from `/dev/null` (the recorder, which hands the program what it was given) registers this
/// in its `.init_array`, which runs first:
/// `#[used] #[link_section = ".init_array"] static F: extern "C" fn() = note_closed_standard_fds;`
pub extern "C" fn note_closed_standard_fds() {
    let mut closed = 0;
    for fd in 0..3 {
        // SAFETY: F_GETFD only asks about the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            closed |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// Which standard descriptors were closed when this process started (as noted by
/// [`note_closed_standard_fds`]; none when the binary does not register it).
pub fn standard_fds_closed_at_start() -> [bool; 3] {
    let closed = CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed);
    [closed & 1 != 0, closed & 2 != 0, closed & 4 != 0]
}

/// Close the standard descriptors marked in `closed`. Async-signal-safe (for `pre_exec`).
pub fn close_standard_fds(closed: [bool; 3]) {
    for (fd, closed) in closed.into_iter().enumerate() {
        if closed {
            // SAFETY: closing a descriptor of this process.
            unsafe { libc::close(fd as libc::c_int) };
        }
    }
}

/// Copy up to `len` bytes from the pipe `from` into the pipe `to` without consuming them
/// (`tee` with `SPLICE_F_NONBLOCK`): how the recorder reads bytes a tracee's pipe keeps.
pub fn tee(from: std::os::fd::BorrowedFd<'_>, to: std::os::fd::BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: two descriptors and integers; the kernel touches no memory of ours.
    let r = unsafe { libc::tee(from.as_raw_fd(), to.as_raw_fd(), len, libc::SPLICE_F_NONBLOCK) };
    if r == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// Make the pipe `fd` hold at least `len` bytes (`F_SETPIPE_SZ`); the size it got.
pub fn set_pipe_size(fd: std::os::fd::BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: integer arguments only.
    let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, len.min(i32::MAX as usize) as libc::c_int) };
    if r == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// The calling thread's CPU affinity mask, as the kernel's `sched_getaffinity` writes it
/// (`cpu_set_t` bytes, trailing zero bytes included).
pub fn affinity_mask() -> io::Result<Vec<u8>> {
    // SAFETY: cpu_set_t is a plain bitmask; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most sizeof(cpu_set_t) bytes into `set`.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: cpu_set_t is plain old data; we copy its bytes.
    let bytes = unsafe {
        std::slice::from_raw_parts(&set as *const libc::cpu_set_t as *const u8, std::mem::size_of::<libc::cpu_set_t>())
    };
    Ok(bytes.to_vec())
}

/// The CPU this thread is running on right now.
pub fn current_cpu() -> usize {
    // SAFETY: no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        0
    } else {
        cpu as usize
    }
}

/// Pin the calling thread (and children it forks later) to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bitmask; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`; `cpu` is bounds-checked by the macro.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the kernel reads sizeof(cpu_set_t) bytes from `set`.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Make this process the reaper of orphaned descendants, so replayed processes whose parents
/// never wait for them (their `wait4` is emulated) are still reaped.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Read the time-stamp counter (also in a thread with the TSC disabled, through the handler
/// [`disable_tsc_for_this_thread`] installs).
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no memory effects and is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Read the time-stamp counter and TSC_AUX.
pub fn rdtscp() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: rdtscp writes TSC_AUX into `aux`; every x86-64 CPU rdb targets has it.
    let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    (tsc, aux)
}

/// `arch_prctl` code of CPUID faulting (`asm/prctl.h`).
pub const ARCH_SET_CPUID: u64 = 0x1012;

/// Execute `cpuid` for `leaf` and `subleaf` (eax, ecx) on this thread: eax, ebx, ecx, edx.
pub fn cpuid(leaf: u32, subleaf: u32) -> [u32; 4] {
    let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
    [r.eax, r.ebx, r.ecx, r.edx]
}

/// Whether this machine offers CPUID faulting (`arch_prctl(ARCH_SET_CPUID, 0)` works; Intel
/// CPUs and hypervisors that expose it, never AMD today). The flag is per thread, so the probe
/// runs in a short-lived thread of its own that turns faulting on and off again without
/// executing `cpuid` in between: the calling thread is never affected.
pub fn cpuid_faulting_available() -> bool {
    std::thread::spawn(|| {
        // SAFETY: integer arguments only.
        let on = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_CPUID, 0u64) } == 0;
        if on {
            // SAFETY: integer arguments only; cannot fail once turning it on worked.
            unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_CPUID, 1u64) };
        }
        on
    })
    .join()
    .unwrap_or(false)
}

// The recorder thread runs with the time-stamp counter disabled, like its tracees.
//
// Why: `PR_SET_TSC` is a per-thread flag the kernel applies by toggling CR4.TSD whenever it
// switches between a thread that has it and one that does not. Under a hypervisor that write
// is trapped, and a pinned recording switches between tracer and tracee twice per ptrace stop:
// measured here, the toggling alone made a traced `read`/`write` loop 30-40% slower. With the
// flag on both sides nothing is toggled. The price: the recorder thread must not read the TSC
// itself, and the vDSO clocks (`Instant::now`, `SystemTime::now`) do. The hot path uses
// [`monotonic_ns`] and [`monotonic_coarse_ns`] instead; anything else that reads the TSC on
// that thread (std's timed channel waits, a library) takes the SIGSEGV that
// [`TscDisabled`] installs a handler for, which executes the instruction with the TSC
// enabled for a moment: correct, only slower.

const PR_GET_TSC: libc::c_int = 25;
const PR_SET_TSC: libc::c_int = 26;
const PR_TSC_ENABLE: libc::c_ulong = 1;
const PR_TSC_SIGSEGV: libc::c_ulong = 2;

/// The calling thread has `rdtsc` disabled (`PR_TSC_SIGSEGV`) until this is dropped. Not
/// `Send`: the flag belongs to the thread that set it.
pub struct TscDisabled {
    _thread_bound: std::marker::PhantomData<*const ()>,
}

/// Disable `rdtsc`/`rdtscp` for the calling thread (see the section comment above).
pub fn disable_tsc_for_this_thread() -> io::Result<TscDisabled> {
    install_tsc_handler()?;
    // SAFETY: integer arguments only.
    if unsafe { libc::prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(TscDisabled { _thread_bound: std::marker::PhantomData })
}

impl TscDisabled {
    /// Run `f` with the TSC readable: two `prctl` calls (about 1 µs here), where each read the
    /// handler emulates costs about 9 µs (signal delivery and return).
    pub fn enabled_for<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: integer arguments only.
        unsafe { libc::prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0) };
        let r = f();
        // SAFETY: integer arguments only.
        unsafe { libc::prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) };
        r
    }
}

impl Drop for TscDisabled {
    fn drop(&mut self) {
        // SAFETY: integer arguments only. Cannot fail for PR_TSC_ENABLE.
        unsafe { libc::prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0) };
    }
}

/// Whether the calling thread has `rdtsc` disabled (async-signal-safe: one syscall).
pub fn tsc_disabled() -> bool {
    let mut mode: libc::c_int = 0;
    // SAFETY: the kernel writes one int into `mode`.
    let r = unsafe { libc::prctl(PR_GET_TSC, &mut mode as *mut libc::c_int, 0, 0, 0) };
    r == 0 && mode as libc::c_ulong == PR_TSC_SIGSEGV
}

/// The SIGSEGV disposition found when the handler was installed, to chain to.
static PREV_SEGV: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

fn install_tsc_handler() -> io::Result<()> {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if PREV_SEGV.get().is_some() {
        return Ok(());
    }
    let _guard = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if PREV_SEGV.get().is_some() {
        return Ok(());
    }
    // SAFETY: sigaction is plain data; all-zero is a valid (default) value.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = on_segv as *const () as usize;
    // SA_ONSTACK: a stack overflow must still reach std's handler (chained below) on the
    // alternate stack.
    new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: `new.sa_mask` is ours; sigemptyset only writes it.
    unsafe { libc::sigemptyset(&mut new.sa_mask) };
    // SAFETY: both pointers are valid sigaction structs; the handler is async-signal-safe.
    if unsafe { libc::sigaction(libc::SIGSEGV, &new, &mut old) } == -1 {
        return Err(io::Error::last_os_error());
    }
    let _ = PREV_SEGV.set(old);
    Ok(())
}

/// Length of the TSC-reading instruction at `pc` (2 for `rdtsc`, 3 for `rdtscp`), else 0.
///
/// # Safety
/// `pc` must be the address of an instruction that just faulted in this process (its first
/// byte is mapped and readable).
unsafe fn tsc_instruction_len(pc: *const u8) -> usize {
    // SAFETY: the caller vouches for pc[0]; pc[1] and pc[2] are only read while the bytes so
    // far are a prefix of the instruction, so they belong to it and are mapped too.
    unsafe {
        if std::ptr::read_volatile(pc) != 0x0f {
            return 0;
        }
        match std::ptr::read_volatile(pc.add(1)) {
            0x31 => 2,
            0x01 if std::ptr::read_volatile(pc.add(2)) == 0xf9 => 3,
            _ => 0,
        }
    }
}

/// SIGSEGV handler: an `rdtsc`/`rdtscp` in a thread with the TSC disabled is executed with it
/// enabled for a moment; any other fault goes to the previous disposition.
extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo and ucontext for SA_SIGINFO handlers; the
    // general-protection fault of a disabled `rdtsc` is reported with si_code SI_KERNEL and the
    // pc at the faulting instruction, which is readable code. Only raw syscalls are made.
    unsafe {
        let uc = &mut *(ctx as *mut libc::ucontext_t);
        let regs = &mut uc.uc_mcontext.gregs;
        if (*info).si_code == libc::SI_KERNEL {
            let len = tsc_instruction_len(regs[libc::REG_RIP as usize] as usize as *const u8);
            if len != 0 && tsc_disabled() {
                libc::prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
                let mut aux = 0u32;
                let tsc = if len == 3 { core::arch::x86_64::__rdtscp(&mut aux) } else { core::arch::x86_64::_rdtsc() };
                libc::prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
                regs[libc::REG_RAX as usize] = (tsc & 0xffff_ffff) as i64;
                regs[libc::REG_RDX as usize] = (tsc >> 32) as i64;
                if len == 3 {
                    regs[libc::REG_RCX as usize] = aux as i64;
                }
                regs[libc::REG_RIP as usize] += len as i64;
                return;
            }
        }
        match PREV_SEGV.get() {
            Some(prev) if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN => {
                if prev.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                        std::mem::transmute(prev.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                    f(sig);
                }
            }
            // Default: restore it and return; the fault happens again and ends the process as
            // it would have without us.
            _ => {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            }
        }
    }
}

fn clock_ns(clock: libc::clockid_t, raw_syscall: bool) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the kernel (or the vDSO) writes one timespec into `ts`.
    let r = unsafe {
        if raw_syscall {
            libc::syscall(libc::SYS_clock_gettime, clock, &mut ts as *mut libc::timespec) as libc::c_int
        } else {
            libc::clock_gettime(clock, &mut ts)
        }
    };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` (the clock of `std::time::Instant`) in nanoseconds, read with a real
/// syscall so that it works with the TSC disabled (about 0.5 µs here; the vDSO would fault).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC, true)
}

/// `CLOCK_MONOTONIC_COARSE` in nanoseconds: the same clock as of the last timer tick (up to
/// one tick, 1-10 ms, behind), read through the vDSO without the TSC or a syscall.
pub fn monotonic_coarse_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptrace::{wait_pid, Wait};
    use crate::Pid;

    /// In a forked child with the TSC disabled, run `fault` (which must fault) and return how
    /// the child ended.
    fn child_with_tsc_disabled(fault: fn()) -> Wait {
        drop(disable_tsc_for_this_thread().expect("install")); // installed before forking
                                                               // SAFETY: the child only makes raw syscalls and executes `fault`, then exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: raw syscalls in the child; alarm bounds a handler that would loop.
            unsafe {
                libc::alarm(10);
                libc::prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
            }
            fault();
            // SAFETY: leaving the forked child without running the parent's exit handlers.
            unsafe { libc::_exit(0) };
        }
        wait_pid(Pid(pid)).expect("waitpid")
    }

    #[test]
    fn other_faults_still_end_the_process() {
        // SAFETY: a load from address 8 faults (page fault, SEGV_MAPERR).
        let null_load = || unsafe { core::arch::asm!("mov {0}, qword ptr [8]", out(reg) _) };
        assert_eq!(child_with_tsc_disabled(null_load), Wait::Signaled(libc::SIGSEGV));
        // SAFETY: hlt in user mode raises #GP, reported like a disabled rdtsc (SI_KERNEL).
        let privileged = || unsafe { core::arch::asm!("hlt") };
        assert_eq!(child_with_tsc_disabled(privileged), Wait::Signaled(libc::SIGSEGV));
    }

    #[test]
    fn rdtsc_in_a_tsc_disabled_child_is_emulated() {
        let read = || {
            let a = rdtsc();
            let b = rdtscp().0;
            if !(tsc_disabled() && a > 0 && b >= a) {
                // SAFETY: exit with a code the parent tells apart from success.
                unsafe { libc::_exit(3) };
            }
        };
        assert_eq!(child_with_tsc_disabled(read), Wait::Exited(0));
    }
}
