//! ptrace requests, waiting, and signals to other processes. Every `unsafe` call of this module
//! passes either integers or a pointer to a local of exactly the size the kernel writes.

use std::ffi::c_void;
use std::io;

use crate::Pid;

/// General-purpose registers of a stopped thread as `PTRACE_GETREGS` gives them (`fs_base`
/// and `gs_base` included).
pub type Regs = libc::user_regs_struct;

/// Floating-point and SSE state of a stopped thread (`PTRACE_GETFPREGS`).
pub type FpRegs = libc::user_fpregs_struct;

/// All-zero registers (a value to fill in, e.g. in tests).
pub fn zeroed_regs() -> Regs {
    // SAFETY: user_regs_struct is plain integers; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3; not in the libc crate).
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
    /// A 32-bit system call (`int 0x80`, or any call of an ia32 process): its number and
    /// arguments follow the i386 numbering and registers, not x86-64's.
    pub compat: bool,
}

/// `AUDIT_ARCH_I386`: the `arch` of a 32-bit system call in `PTRACE_GET_SYSCALL_INFO`.
const AUDIT_ARCH_I386: u32 = 0x4000_0003;

pub(crate) fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Called in a forked child before exec: default terminal signals (a tracer ignores them, and
/// ignored dispositions survive exec), ASLR off, and ask to be traced. Async-signal-safe (a few
/// raw syscalls), as `pre_exec` requires.
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
pub fn set_options(pid: Pid, options: i32) -> io::Result<()> {
    // SAFETY: PTRACE_SETOPTIONS reads no memory of ours; data is an integer.
    check(unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid.0, 0usize, options as usize) })?;
    Ok(())
}

/// The options every tracee of the recorder and replayer gets: syscall stops marked with 0x80,
/// follow fork/vfork/clone and exec, and kill the tracees if the tracer dies.
pub const TRACE_OPTIONS: i32 = libc::PTRACE_O_TRACESYSGOOD
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_EXITKILL;

/// Resume until the next syscall stop (or signal), delivering `sig` (0 = none).
pub fn resume_syscall(pid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::ptrace(libc::PTRACE_SYSCALL, pid.0, 0usize, sig as usize) })?;
    Ok(())
}

/// Resume until the next signal or event (no syscall stops), delivering `sig` (0 = none).
pub fn resume(pid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::ptrace(libc::PTRACE_CONT, pid.0, 0usize, sig as usize) })?;
    Ok(())
}

/// Execute one instruction, delivering `sig` (0 = none).
pub fn single_step(pid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::ptrace(libc::PTRACE_SINGLESTEP, pid.0, 0usize, sig as usize) })?;
    Ok(())
}

/// `PTRACE_GETREGS`.
pub fn get_regs(pid: Pid) -> io::Result<Regs> {
    let mut regs = zeroed_regs();
    // SAFETY: the kernel writes exactly sizeof(user_regs_struct) bytes into `regs`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid.0, 0usize, &mut regs as *mut Regs as *mut c_void) })?;
    Ok(regs)
}

/// `PTRACE_SETREGS`.
pub fn set_regs(pid: Pid, regs: &Regs) -> io::Result<()> {
    // SAFETY: the kernel only reads sizeof(user_regs_struct) bytes from `regs`.
    check(unsafe { libc::ptrace(libc::PTRACE_SETREGS, pid.0, 0usize, regs as *const Regs as *mut c_void) })?;
    Ok(())
}

/// `PTRACE_GETFPREGS`: the x87/SSE state (`xmm0`-`xmm15` in `xmm_space`).
pub fn get_fpregs(pid: Pid) -> io::Result<FpRegs> {
    // SAFETY: user_fpregs_struct is plain integers; all-zero is a valid value.
    let mut fp: FpRegs = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most sizeof(user_fpregs_struct) bytes into `fp`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETFPREGS, pid.0, 0usize, &mut fp as *mut FpRegs as *mut c_void) })?;
    Ok(fp)
}

/// `PTRACE_SETFPREGS`.
pub fn set_fpregs(pid: Pid, fp: &FpRegs) -> io::Result<()> {
    // SAFETY: the kernel only reads sizeof(user_fpregs_struct) bytes from `fp`.
    check(unsafe { libc::ptrace(libc::PTRACE_SETFPREGS, pid.0, 0usize, fp as *const FpRegs as *mut c_void) })?;
    Ok(())
}

/// `NT_X86_XSTATE`: the whole extended state (x87, SSE, AVX, ...) as `XSAVE` lays it out.
const NT_X86_XSTATE: usize = 0x202;

/// The thread's extended register state (`PTRACE_GETREGSET`, `NT_X86_XSTATE`): everything the
/// CPU keeps beyond the general-purpose registers, as the kernel's `XSAVE` image.
pub fn get_xstate(pid: Pid) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 16 << 10];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut c_void, iov_len: buf.len() };
    // SAFETY: the kernel writes at most `iov_len` bytes at `iov_base`, which `buf` holds, and
    // sets `iov_len` to what it wrote.
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGSET, pid.0, NT_X86_XSTATE, &mut iov as *mut libc::iovec) })?;
    buf.truncate(iov.iov_len);
    Ok(buf)
}

/// Set the thread's extended register state from an image [`get_xstate`] gave.
pub fn set_xstate(pid: Pid, xstate: &[u8]) -> io::Result<()> {
    let mut iov = libc::iovec { iov_base: xstate.as_ptr() as *mut c_void, iov_len: xstate.len() };
    // SAFETY: the kernel reads at most `iov_len` bytes from `iov_base` (`xstate`).
    check(unsafe { libc::ptrace(libc::PTRACE_SETREGSET, pid.0, NT_X86_XSTATE, &mut iov as *mut libc::iovec) })?;
    Ok(())
}

/// The robust futex list of thread `tid` (`get_robust_list`): head and length (0, 0 when none
/// was set).
pub fn robust_list(tid: Pid) -> io::Result<(u64, u64)> {
    let (mut head, mut len): (u64, usize) = (0, 0);
    // SAFETY: the kernel writes one pointer into `head` and one size_t into `len`.
    check(unsafe { libc::syscall(libc::SYS_get_robust_list, tid.0, &mut head as *mut u64, &mut len as *mut usize) })?;
    Ok((head, len as u64))
}

/// Words in `user_regs_struct`.
pub const REG_WORDS: usize = 27;

/// `user_regs_struct` as its words, in declaration order (rip is word 16, eflags 18, rsp 19).
pub fn reg_words(regs: &Regs) -> [u64; REG_WORDS] {
    const _: () = assert!(std::mem::size_of::<Regs>() == REG_WORDS * 8);
    // SAFETY: `user_regs_struct` is 27 `c_ulonglong`s without padding (checked above).
    unsafe { std::mem::transmute_copy::<Regs, [u64; REG_WORDS]>(regs) }
}

/// An FP state (`user_fpregs_struct`, the FXSAVE area) as its bytes.
pub fn fpregs_bytes(fp: &FpRegs) -> &[u8] {
    // SAFETY: `user_fpregs_struct` is plain data (integers only) of 512 bytes; the slice
    // borrows `fp`.
    unsafe { std::slice::from_raw_parts(fp as *const FpRegs as *const u8, std::mem::size_of::<FpRegs>()) }
}

/// The 16 bytes of `xmm{n}` in an FP state.
pub fn xmm(fp: &FpRegs, n: u16) -> io::Result<[u8; 16]> {
    if n > 15 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no register xmm{n} on x86-64")));
    }
    let mut out = [0u8; 16];
    for (i, w) in fp.xmm_space[n as usize * 4..n as usize * 4 + 4].iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    Ok(out)
}

/// Byte offset of `orig_rax` in the user area (`user_regs_struct` field 15).
pub const ORIG_RAX_OFFSET: usize = 15 * 8;

/// `PTRACE_POKEUSER`: set one word of the user area (a register, or a debug register).
pub fn poke_user(pid: Pid, offset: usize, value: u64) -> io::Result<()> {
    // SAFETY: integer arguments only; the kernel validates the offset.
    check(unsafe { libc::ptrace(libc::PTRACE_POKEUSER, pid.0, offset, value as usize) })?;
    Ok(())
}

/// `PTRACE_PEEKUSER`: read one word of the user area.
pub fn peek_user(pid: Pid, offset: usize) -> io::Result<u64> {
    // SAFETY: clears errno so that a -1 word can be told from an error.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: integer arguments only; the word is the return value.
    let word = unsafe { libc::ptrace(libc::PTRACE_PEEKUSER, pid.0, offset, 0usize) };
    let err = io::Error::last_os_error();
    if word == -1 && err.raw_os_error().unwrap_or(0) != 0 {
        return Err(err);
    }
    Ok(word as u64)
}

/// Size of a raw `siginfo_t`.
pub const SIGINFO_SIZE: usize = 128;

/// A raw `siginfo_t`, as ptrace and the trace carry it.
pub type SigInfo = [u8; SIGINFO_SIZE];

/// `si_signo` of a raw siginfo.
pub fn si_signo(info: &SigInfo) -> i32 {
    i32::from_le_bytes([info[0], info[1], info[2], info[3]])
}

/// `si_code` of a raw siginfo.
pub fn si_code(info: &SigInfo) -> i32 {
    i32::from_le_bytes([info[8], info[9], info[10], info[11]])
}

/// `si_addr` of a raw siginfo (the faulting address of `SIGSEGV`/`SIGBUS`).
pub fn si_addr(info: &SigInfo) -> u64 {
    u64::from_le_bytes(info[16..24].try_into().expect("8 bytes"))
}

/// Synchronous signals are caused by the instruction the thread executes (a fault, a trap), so
/// a replay reproduces them by itself.
pub fn is_synchronous(sig: i32, code: i32) -> bool {
    code > 0 && matches!(sig, libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP | libc::SIGSYS)
}

/// `PTRACE_GETSIGINFO` as raw bytes (fails with EINVAL for group-stops).
pub fn get_siginfo(pid: Pid) -> io::Result<SigInfo> {
    let mut buf = [0u8; SIGINFO_SIZE];
    // SAFETY: siginfo_t is 128 bytes; the kernel writes at most that into `buf`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, pid.0, 0usize, buf.as_mut_ptr() as *mut c_void) })?;
    Ok(buf)
}

/// `PTRACE_SETSIGINFO` from raw bytes.
pub fn set_siginfo(pid: Pid, info: &SigInfo) -> io::Result<()> {
    // SAFETY: the kernel reads 128 bytes from `info`.
    check(unsafe { libc::ptrace(libc::PTRACE_SETSIGINFO, pid.0, 0usize, info.as_ptr() as *mut c_void) })?;
    Ok(())
}

/// `PTRACE_GETEVENTMSG`: the new thread after a fork/clone event.
pub fn new_child(pid: Pid) -> io::Result<Pid> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: the kernel writes one unsigned long into `msg`.
    check(unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, pid.0, 0usize, &mut msg as *mut libc::c_ulong) })?;
    Ok(Pid(msg as i32))
}

/// `PTRACE_GET_SYSCALL_INFO`: entry or exit, with number/arguments or return value.
pub fn syscall_info(pid: Pid) -> io::Result<SyscallInfo> {
    let mut raw =
        RawSyscallInfo { op: 0, pad: [0; 3], arch: 0, instruction_pointer: 0, stack_pointer: 0, data: [0; 8] };
    // SAFETY: the kernel writes at most the size we pass into `raw`.
    check(unsafe {
        libc::ptrace(
            PTRACE_GET_SYSCALL_INFO,
            pid.0,
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
    Ok(SyscallInfo { stop, pc: raw.instruction_pointer, sp: raw.stack_pointer, compat: raw.arch == AUDIT_ARCH_I386 })
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

/// `waitpid(pid, __WALL | flags)`, retried on EINTR: `Ok(None)` on ECHILD, `Ok(Some((0, _)))`
/// when WNOHANG found nothing.
fn waitpid(pid: i32, flags: i32) -> io::Result<Option<(i32, i32)>> {
    loop {
        let mut status = 0;
        // SAFETY: the kernel writes one int into `status`.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL | flags) };
        if r == -1 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(err),
            }
        }
        return Ok(Some((r, status)));
    }
}

/// Wait for any traced child (`__WALL`). `Ok(None)` when there are no children left.
pub fn wait_any() -> io::Result<Option<(Pid, Wait)>> {
    Ok(waitpid(-1, 0)?.map(|(pid, status)| (Pid(pid), decode_status(status))))
}

/// Collect a traced child's status if one is ready (`__WALL | WNOHANG`). `Ok(Some(None))`
/// when none is ready yet, `Ok(None)` when there are no children left.
pub fn wait_any_nohang() -> io::Result<Option<Option<(Pid, Wait)>>> {
    Ok(waitpid(-1, libc::WNOHANG)?.map(|(pid, status)| (pid != 0).then(|| (Pid(pid), decode_status(status)))))
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
pub fn wait_pid(pid: Pid) -> io::Result<Wait> {
    match waitpid(pid.0, 0)? {
        Some((_, status)) => Ok(decode_status(status)),
        None => Err(io::Error::from_raw_os_error(libc::ECHILD)),
    }
}

/// Deliver a signal to one thread of a process.
pub fn tgkill(tgid: Pid, tid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::syscall(libc::SYS_tgkill, tgid.0, tid.0, sig) })?;
    Ok(())
}

/// Deliver a signal to a process.
pub fn kill(pid: Pid, sig: i32) -> io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::kill(pid.0, sig) } as libc::c_long)?;
    Ok(())
}
