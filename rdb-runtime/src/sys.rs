//! Every `unsafe` call of the engine lives here: ptrace, wait, process memory access, CPU
//! placement and the few raw instructions the recorder needs. The rest of the crate calls these
//! safe wrappers and never touches `libc` pointers itself.

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// Registers of a stopped tracee, exactly as `PTRACE_GETREGS` returns them.
pub type Regs = libc::user_regs_struct;

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3).
const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;

/// Raw `struct ptrace_syscall_info`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawSyscallInfo {
    op: u8,
    pad: [u8; 3],
    arch: u32,
    instruction_pointer: u64,
    stack_pointer: u64,
    data: [u64; 8],
}

/// What a syscall stop is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallStop {
    /// Syscall-enter-stop: number and the six argument registers.
    Entry { nr: u64, args: [u64; 6] },
    /// Syscall-exit-stop: the raw return value (negative errno on failure).
    Exit { ret: i64 },
    /// Not a syscall stop after all.
    Other,
}

/// Syscall stop details plus the program counter and stack pointer at the stop.
#[derive(Debug, Clone, Copy)]
pub struct SyscallInfo {
    pub stop: SyscallStop,
    pub pc: u64,
    pub sp: u64,
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Ignore the terminal's interrupt and quit signals in the recorder, so a Ctrl-C reaches the
/// recorded program (same process group) and the recorder lives to finish the trace.
pub fn ignore_terminal_signals() {
    // SAFETY: installing SIG_IGN has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
}

/// Called in the forked child before exec: default terminal signals (the recorder ignores
/// them, and ignored dispositions survive exec), ASLR off, and ask to be traced.
/// Async-signal-safe (a few raw syscalls), as `pre_exec` requires.
pub fn child_prepare_for_trace() -> io::Result<()> {
    // SAFETY: signal, personality and ptrace(TRACEME) take no pointers of ours and are
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGQUIT, libc::SIG_DFL);
        if libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong) == -1 {
            return Err(io::Error::last_os_error());
        }
        check(libc::ptrace(libc::PTRACE_TRACEME, 0, 0usize, 0usize))?;
    }
    Ok(())
}

/// `PTRACE_SETOPTIONS`.
pub fn set_options(pid: i32, options: i32) -> io::Result<()> {
    // SAFETY: PTRACE_SETOPTIONS reads no memory of ours; data is an integer.
    check(unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0usize, options as usize) })?;
    Ok(())
}

/// The options every tracee gets: syscall stops marked with 0x80, follow fork/vfork/clone and
/// exec, and kill the tracees if the tracer dies.
pub const TRACE_OPTIONS: i32 = libc::PTRACE_O_TRACESYSGOOD
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_EXITKILL;

/// Resume until the next syscall stop (or signal), delivering `sig` (0 = none).
pub fn resume_syscall(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::ptrace(libc::PTRACE_SYSCALL, pid, 0usize, sig as usize) })?;
    Ok(())
}

/// Execute one instruction, delivering `sig` (0 = none).
pub fn single_step(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::ptrace(libc::PTRACE_SINGLESTEP, pid, 0usize, sig as usize) })?;
    Ok(())
}

/// `PTRACE_GETREGS`.
pub fn get_regs(pid: i32) -> io::Result<Regs> {
    // SAFETY: user_regs_struct is plain integers; all-zero is a valid value.
    let mut regs: Regs = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes exactly sizeof(user_regs_struct) bytes into `regs`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, 0usize, &mut regs as *mut Regs as *mut c_void) })?;
    Ok(regs)
}

/// `PTRACE_SETREGS`.
pub fn set_regs(pid: i32, regs: &Regs) -> io::Result<()> {
    // SAFETY: the kernel only reads sizeof(user_regs_struct) bytes from `regs`.
    check(unsafe { libc::ptrace(libc::PTRACE_SETREGS, pid, 0usize, regs as *const Regs as *mut c_void) })?;
    Ok(())
}

/// Byte offset of `orig_rax` in the user area (`user_regs_struct` field 15).
pub const ORIG_RAX_OFFSET: usize = 15 * 8;

/// `PTRACE_POKEUSER`: set one register word (cheaper than a GETREGS/SETREGS pair).
pub fn poke_user(pid: i32, offset: usize, value: u64) -> io::Result<()> {
    // SAFETY: integer arguments only; the kernel validates the offset.
    check(unsafe { libc::ptrace(libc::PTRACE_POKEUSER, pid, offset, value as usize) })?;
    Ok(())
}

/// Size of a raw `siginfo_t`.
pub const SIGINFO_SIZE: usize = 128;

/// `PTRACE_GETSIGINFO` as raw bytes (fails with EINVAL for group-stops).
pub fn get_siginfo(pid: i32) -> io::Result<[u8; SIGINFO_SIZE]> {
    let mut buf = [0u8; SIGINFO_SIZE];
    // SAFETY: siginfo_t is 128 bytes; the kernel writes at most that into `buf`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, pid, 0usize, buf.as_mut_ptr() as *mut c_void) })?;
    Ok(buf)
}

/// `PTRACE_SETSIGINFO` from raw bytes.
pub fn set_siginfo(pid: i32, info: &[u8; SIGINFO_SIZE]) -> io::Result<()> {
    // SAFETY: the kernel reads 128 bytes from `info`.
    check(unsafe { libc::ptrace(libc::PTRACE_SETSIGINFO, pid, 0usize, info.as_ptr() as *mut c_void) })?;
    Ok(())
}

/// `PTRACE_GETEVENTMSG` (new pid after fork/clone events).
pub fn get_event_msg(pid: i32) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: the kernel writes one unsigned long into `msg`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, pid, 0usize, &mut msg as *mut libc::c_ulong) })?;
    Ok(msg as u64)
}

/// `PTRACE_GET_SYSCALL_INFO`: entry or exit, with number/arguments or return value.
pub fn syscall_info(pid: i32) -> io::Result<SyscallInfo> {
    let mut raw =
        RawSyscallInfo { op: 0, pad: [0; 3], arch: 0, instruction_pointer: 0, stack_pointer: 0, data: [0; 8] };
    // SAFETY: the kernel writes at most the size we pass into `raw`.
    check(unsafe {
        libc::ptrace(
            PTRACE_GET_SYSCALL_INFO,
            pid,
            std::mem::size_of::<RawSyscallInfo>(),
            &mut raw as *mut RawSyscallInfo as *mut c_void,
        )
    })?;
    let stop = match raw.op {
        1 => SyscallStop::Entry {
            nr: raw.data[0],
            args: [raw.data[1], raw.data[2], raw.data[3], raw.data[4], raw.data[5], raw.data[6]],
        },
        2 => SyscallStop::Exit { ret: raw.data[0] as i64 },
        _ => SyscallStop::Other,
    };
    Ok(SyscallInfo { stop, pc: raw.instruction_pointer, sp: raw.stack_pointer })
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

/// Outcome of `waitpid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Exited normally with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
    /// Stopped: the signal number (with 0x80 for syscall stops) and the ptrace event (status >> 16).
    Stopped { sig: i32, event: i32 },
}

impl Wait {
    /// The raw wait status this corresponds to (for exits).
    pub fn raw_exit_status(&self) -> i32 {
        match *self {
            Wait::Exited(code) => (code & 0xff) << 8,
            Wait::Signaled(sig) => sig & 0x7f,
            Wait::Stopped { sig, .. } => (sig << 8) | 0x7f,
        }
    }
}

fn decode_status(status: i32) -> Wait {
    if libc::WIFEXITED(status) {
        Wait::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Wait::Signaled(libc::WTERMSIG(status))
    } else {
        Wait::Stopped { sig: (status >> 8) & 0xff, event: (status >> 16) & 0xff }
    }
}

/// Wait for any traced child (`__WALL`). `Ok(None)` when there are no children left.
pub fn wait_any() -> io::Result<Option<(i32, Wait)>> {
    loop {
        let mut status = 0;
        // SAFETY: the kernel writes one int into `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid == -1 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(err),
            }
        }
        return Ok(Some((pid, decode_status(status))));
    }
}

/// Collect a traced child's status if one is ready (`__WALL | WNOHANG`). `Ok(Some(None))`
/// when none is ready yet, `Ok(None)` when there are no children left.
pub fn wait_any_nohang() -> io::Result<Option<Option<(i32, Wait)>>> {
    loop {
        let mut status = 0;
        // SAFETY: the kernel writes one int into `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) };
        match pid {
            -1 => {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::ECHILD) => return Ok(None),
                    _ => return Err(err),
                }
            }
            0 => return Ok(Some(None)),
            pid => return Ok(Some(Some((pid, decode_status(status))))),
        }
    }
}

/// Block until some child has a status to report, without collecting it (`WNOWAIT`).
/// Returns false when there are no children left.
pub fn wait_any_peek() -> io::Result<bool> {
    loop {
        // SAFETY: siginfo_t is plain data; all-zero is valid; the kernel fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid siginfo_t the kernel may write.
        let r = unsafe {
            libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WSTOPPED | libc::WNOWAIT | libc::__WALL)
        };
        if r == -1 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(false),
                _ => return Err(err),
            }
        }
        return Ok(true);
    }
}

/// Wait for one specific tracee (`__WALL`).
pub fn wait_pid(pid: i32) -> io::Result<Wait> {
    loop {
        let mut status = 0;
        // SAFETY: the kernel writes one int into `status`.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r == -1 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        return Ok(decode_status(status));
    }
}

/// Read tracee memory with `process_vm_readv` (one copy, no page-permission checks beyond
/// readability). Returns the number of bytes read, which may be short at an unmapped page.
pub fn read_mem(pid: i32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec { iov_base: buf.as_mut_ptr() as *mut c_void, iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut c_void, iov_len: buf.len() };
    // SAFETY: `local` describes our own writable buffer; `remote` is only interpreted in the
    // tracee's address space by the kernel.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Write tracee memory. Tries `process_vm_writev` first (fast, needs writable pages) and falls
/// back to `/proc/PID/mem`, which as the tracer may also write read-only pages (breakpoints,
/// file contents of read-only mappings).
pub fn write_mem(pid: i32, addr: u64, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: data.as_ptr() as *mut c_void, iov_len: data.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut c_void, iov_len: data.len() };
    // SAFETY: `local` describes our own readable buffer; the kernel writes only into the tracee.
    let n = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
    if n == data.len() as isize {
        return Ok(());
    }
    // Read-only pages (code: planting and lifting breakpoints). A few bytes go word by word
    // with PTRACE_POKEDATA, which writes through page protections like /proc/PID/mem does but
    // without a path lookup per write (breakpoints are lifted and re-planted at every hit).
    if data.len() <= 16 {
        return poke_bytes(pid, addr, data);
    }
    let mem = File::options().read(true).write(true).open(format!("/proc/{pid}/mem"))?;
    mem.write_all_at(data, addr)
}

/// Writes `data` at `addr` in a ptrace-stopped tracee with PEEKDATA/POKEDATA, one aligned word
/// at a time.
fn poke_bytes(pid: i32, addr: u64, data: &[u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < data.len() {
        let at = addr + done as u64;
        let word_addr = at & !7;
        let offset = (at - word_addr) as usize;
        let take = (8 - offset).min(data.len() - done);
        // SAFETY: clears errno so that a -1 word can be told from an error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: PEEKDATA reads one word of the stopped tracee; no pointers of ours are passed.
        let word = unsafe { libc::ptrace(libc::PTRACE_PEEKDATA, pid, word_addr as usize as *mut c_void, 0usize) };
        let err = io::Error::last_os_error();
        if word == -1 && err.raw_os_error().unwrap_or(0) != 0 {
            return Err(err);
        }
        let mut bytes = (word as u64).to_le_bytes();
        bytes[offset..offset + take].copy_from_slice(&data[done..done + take]);
        let new = u64::from_le_bytes(bytes);
        // SAFETY: POKEDATA writes one word of the stopped tracee; the data is passed by value.
        if unsafe {
            libc::ptrace(libc::PTRACE_POKEDATA, pid, word_addr as usize as *mut c_void, new as usize as *mut c_void)
        } == -1
        {
            return Err(io::Error::last_os_error());
        }
        done += take;
    }
    Ok(())
}

/// Deliver a signal to one thread of a process.
pub fn tgkill(tgid: i32, tid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    if unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, sig) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Deliver a signal to a process.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    if unsafe { libc::kill(pid, sig) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
        wait_pid(pid).expect("waitpid")
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
