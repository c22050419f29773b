//! The syscall table: one entry per x86-64 syscall rdb supports, as data, keyed by
//! [`Sysno`] (the `syscalls` crate's names and numbers; the table holds no numbers of its own).
//!
//! Each entry says everything the recorder and replayer need to know about the call:
//! - how it is replayed ([`Policy`]): emulated from the trace, or re-executed (and then which
//!   kind: address-space calls whose result must match, new processes, exec, exit, a
//!   signal-mask wait);
//! - the memory the kernel writes for it ([`Out`], per argument), with irregular calls
//!   (`ioctl`, `fcntl`, `prctl`, `select`, `mincore`) described by named functions beside the
//!   table ([`Out::Special`]);
//! - whether it may wait for another thread or the outside world, so the thread gives its
//!   turn up at entry ([`Blocks`]);
//! - whether it changes the file-descriptor table, whether it still writes memory when a
//!   signal interrupts it, the temporary signal mask it waits under ([`Mask`]), and what it
//!   writes to a file descriptor and where those bytes come from ([`Output`], for the
//!   recorder's output capture: every way of writing is described, memory or another file).
//!
//! [`crate::effects`] turns the memory descriptions into address ranges. A call missing from
//! the table is unsupported: recording fails, naming the call.

pub use ::syscalls::Sysno;

/// How record and replay treat a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Executed while recording; on replay it is skipped and its recorded result and memory
    /// effects are injected.
    Emulate,
    /// Builds kernel state the replayed process needs (signal dispositions, thread setup):
    /// executed again on replay with the same arguments.
    ReExecute,
    /// Changes the address space (mmap family, brk, memory protection keys): re-executed, and
    /// its result must be the recorded one (else the replay diverged). File mappings become
    /// anonymous memory filled from the file or the trace.
    AddressSpace,
    /// Creates a process or thread (clone, fork, vfork, clone3): re-executed; a `NewProcess`
    /// event follows.
    NewProcess,
    /// Replaces the process image (execve, execveat): re-executed with the recorded path.
    Exec,
    /// Ends a thread or the process (exit, exit_group).
    Exit,
    /// Waits for a signal under a temporary mask (rt_sigsuspend): re-executed with the
    /// recorded waking signal already pending.
    Suspend,
    /// Not supported yet: recording stops with an error naming the call.
    Unsupported,
}

impl Policy {
    /// The call runs again at replay (anything but emulated or unsupported).
    pub fn re_executed(self) -> bool {
        !matches!(self, Policy::Emulate | Policy::Unsupported)
    }
}

/// Memory the kernel writes for a syscall, in terms of its arguments (by index) and result.
#[derive(Debug, Clone, Copy)]
pub enum Out {
    /// A fixed number of bytes at the pointer in argument `.0` (nothing when null).
    Fixed(u8, usize),
    /// As many bytes as the (non-negative) result, at argument `.0`.
    Ret(u8),
    /// Result × `.1` bytes at argument `.0` (e.g. epoll events).
    RetCount(u8, usize),
    /// Argument `.1` × `.2` bytes at argument `.0` (e.g. pollfd arrays).
    ArgCount(u8, u8, usize),
    /// A buffer at `.0` whose length is the `u32` at pointer `.1`, which the kernel updates
    /// (socket addresses, `getsockopt`).
    LenPtr(u8, u8),
    /// An iovec array at `.0` with `.1` entries, filled with result bytes in order.
    Iov(u8, u8),
    /// A `struct msghdr` at `.0` (recvmsg): name, iovecs, control data and the header itself.
    MsgHdr(u8),
    /// Irregular: the named function gives the ranges from the arguments.
    Special(Special),
}

/// The ranges (address, length) an irregular call writes, from its arguments.
pub type Special = fn(&[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect>;

/// A syscall whose memory effects rdb cannot describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEffect(pub String);

/// Whether a call may wait for another thread or the outside world: then the thread gives its
/// turn up at entry and the call runs in the kernel while another thread runs user code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocks {
    Never,
    Always,
    /// `futex`: the waiting operations only ([`futex_waits`]).
    FutexWait,
}

/// Where a call finds the temporary signal mask it waits under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mask {
    /// A `sigset_t` pointer in argument `.0` and its size in argument `.1`.
    Args(u8, u8),
    /// `pselect6`: argument `.0` points to `{ const sigset_t *ss; size_t ss_len; }`.
    Pselect6(u8),
}

/// What a call writes to a file descriptor: the descriptor (an argument) and where the bytes
/// come from. The recorder uses it to capture the bytes that reach its own stdout/stderr, which
/// replay re-emits: every call that writes to a descriptor has one, so no output goes unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// The argument holding the descriptor written to.
    pub fd: u8,
    /// The argument holding a pointer to the offset written at (`splice`, `copy_file_range`;
    /// the kernel advances it), when the call has one.
    pub offset: Option<u8>,
    pub data: In,
}

/// Where the bytes a call writes come from. The length is always the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    /// A buffer at argument `.0`.
    Buf(u8),
    /// An iovec array at argument `.0` with argument `.1` entries.
    Iov(u8, u8),
    /// A `struct msghdr` at argument `.0` (`sendmsg`): its iovecs.
    MsgHdr(u8),
    /// Another descriptor (argument `fd`), read at the offset the pointer in argument `offset`
    /// points to, or at its file position when that is null; a pipe is consumed (`splice`,
    /// `sendfile`, `copy_file_range`).
    Fd { fd: u8, offset: u8 },
    /// A pipe (argument `.0`) whose bytes are copied, not consumed (`tee`).
    PipeCopy(u8),
}

/// `Output` for the table: descriptor `fd`, no offset pointer.
const fn to(fd: u8, data: In) -> Option<Output> {
    Some(Output { fd, offset: None, data })
}

/// `Output` for the table: descriptor `fd` written at the offset pointer in argument `offset`.
const fn to_at(fd: u8, offset: u8, data: In) -> Option<Output> {
    Some(Output { fd, offset: Some(offset), data })
}

/// One syscall table entry.
#[derive(Debug, Clone, Copy)]
pub struct SyscallDesc {
    pub sysno: Sysno,
    /// How many argument registers the call uses (compared during replay).
    pub nargs: u8,
    pub policy: Policy,
    pub writes: &'static [Out],
    pub blocks: Blocks,
    /// Afterwards the file-descriptor table may name different files.
    pub changes_fds: bool,
    /// Still writes its memory when a signal interrupts it (`EINTR` or a restart code): sleeps
    /// the time left, poll/ppoll every `revents`, select/pselect6/ppoll the timeout left.
    pub writes_when_interrupted: bool,
    pub mask: Option<Mask>,
    pub output: Option<Output>,
}

impl SyscallDesc {
    pub fn name(&self) -> &'static str {
        self.sysno.name()
    }

    /// Whether the call with these arguments may block (see [`Blocks`]).
    pub fn gives_turn_up(&self, args: &[u64; 6]) -> bool {
        match self.blocks {
            Blocks::Never => false,
            Blocks::Always => true,
            Blocks::FutexWait => futex_waits(args),
        }
    }
}

/// The attributes an entry has unless it says otherwise.
const PLAIN: SyscallDesc = SyscallDesc {
    sysno: Sysno::read,
    nargs: 0,
    policy: Policy::Emulate,
    writes: &[],
    blocks: Blocks::Never,
    changes_fds: false,
    writes_when_interrupted: false,
    mask: None,
    output: None,
};

use Out::*;
use Policy::*;

macro_rules! table {
    ($( $name:ident $nargs:literal $pol:ident [$($w:expr),*] $({ $($field:ident: $val:expr),* })? ;)*) => {
        /// The table, sorted by number.
        pub static TABLE: &[SyscallDesc] = &[
            $( SyscallDesc {
                sysno: Sysno::$name, nargs: $nargs, policy: $pol, writes: &[$($w),*],
                $($($field: $val,)*)?
                ..PLAIN
            }, )*
        ];
    };
}

// Sizes of kernel structures on x86-64.
const STAT: usize = 144;
const STATFS: usize = 120;
const RUSAGE: usize = 144;
const TIMESPEC: usize = 16;
const TIMEVAL: usize = 16;
const ITIMERVAL: usize = 32;
const ITIMERSPEC: usize = 32;
const SIGINFO: usize = 128;
const RLIMIT: usize = 16;
const EPOLL_EVENT: usize = 12;
const POLLFD: usize = 8;

table! {
    read 3 Emulate [Ret(1)] { blocks: Blocks::Always };
    write 3 Emulate [] { output: to(0, In::Buf(1)) };
    open 3 Emulate [];
    close 1 Emulate [] { changes_fds: true };
    stat 2 Emulate [Fixed(1, STAT)];
    fstat 2 Emulate [Fixed(1, STAT)];
    lstat 2 Emulate [Fixed(1, STAT)];
    poll 3 Emulate [ArgCount(0, 1, POLLFD)] { blocks: Blocks::Always, writes_when_interrupted: true };
    lseek 3 Emulate [];
    mmap 6 AddressSpace [];
    mprotect 3 AddressSpace [];
    munmap 2 AddressSpace [];
    brk 1 AddressSpace [];
    rt_sigaction 4 ReExecute [];
    rt_sigprocmask 4 ReExecute [];
    rt_sigreturn 0 ReExecute [];
    ioctl 3 Emulate [Special(ioctl_writes)];
    pread64 4 Emulate [Ret(1)];
    pwrite64 4 Emulate [] { output: to(0, In::Buf(1)) };
    readv 3 Emulate [Iov(1, 2)] { blocks: Blocks::Always };
    writev 3 Emulate [] { output: to(0, In::Iov(1, 2)) };
    access 2 Emulate [];
    pipe 1 Emulate [Fixed(0, 8)];
    select 5 Emulate [Special(select_writes)] { blocks: Blocks::Always, writes_when_interrupted: true };
    sched_yield 0 Emulate [] { blocks: Blocks::Always };
    mremap 5 AddressSpace [];
    msync 3 Emulate [];
    mincore 3 Emulate [Special(mincore_writes)];
    madvise 3 ReExecute [];
    dup 1 Emulate [] { changes_fds: true };
    dup2 2 Emulate [] { changes_fds: true };
    pause 0 Emulate [] { blocks: Blocks::Always };
    nanosleep 2 Emulate [Fixed(1, TIMESPEC)] { blocks: Blocks::Always, writes_when_interrupted: true };
    getitimer 2 Emulate [Fixed(1, ITIMERVAL)];
    alarm 1 Emulate [];
    setitimer 3 Emulate [Fixed(2, ITIMERVAL)];
    getpid 0 Emulate [];
    sendfile 4 Emulate [Fixed(2, 8)] { blocks: Blocks::Always, output: to(0, In::Fd { fd: 1, offset: 2 }) };
    socket 3 Emulate [];
    connect 3 Emulate [] { blocks: Blocks::Always };
    accept 3 Emulate [LenPtr(1, 2)] { blocks: Blocks::Always };
    sendto 6 Emulate [] { output: to(0, In::Buf(1)) };
    recvfrom 6 Emulate [Ret(1), LenPtr(4, 5)] { blocks: Blocks::Always };
    sendmsg 3 Emulate [] { output: to(0, In::MsgHdr(1)) };
    recvmsg 3 Emulate [MsgHdr(1)] { blocks: Blocks::Always };
    shutdown 2 Emulate [];
    bind 3 Emulate [];
    listen 2 Emulate [];
    getsockname 3 Emulate [LenPtr(1, 2)];
    getpeername 3 Emulate [LenPtr(1, 2)];
    socketpair 4 Emulate [Fixed(3, 8)];
    setsockopt 5 Emulate [];
    getsockopt 5 Emulate [LenPtr(3, 4)];
    clone 5 NewProcess [];
    fork 0 NewProcess [];
    vfork 0 NewProcess [];
    execve 3 Exec [] { changes_fds: true };
    exit 1 Exit [];
    wait4 4 Emulate [Fixed(1, 4), Fixed(3, RUSAGE)] { blocks: Blocks::Always };
    kill 2 Emulate [];
    uname 1 Emulate [Fixed(0, 390)];
    fcntl 3 Emulate [Special(fcntl_writes)] { changes_fds: true };
    flock 2 Emulate [] { blocks: Blocks::Always };
    fsync 1 Emulate [];
    fdatasync 1 Emulate [];
    truncate 2 Emulate [];
    ftruncate 2 Emulate [];
    getdents 3 Emulate [Ret(1)];
    getcwd 2 Emulate [Ret(0)];
    chdir 1 Emulate [];
    fchdir 1 Emulate [];
    rename 2 Emulate [];
    mkdir 2 Emulate [];
    rmdir 1 Emulate [];
    creat 2 Emulate [];
    link 2 Emulate [];
    unlink 1 Emulate [];
    symlink 2 Emulate [];
    readlink 3 Emulate [Ret(1)];
    chmod 2 Emulate [];
    fchmod 2 Emulate [];
    chown 3 Emulate [];
    fchown 3 Emulate [];
    lchown 3 Emulate [];
    umask 1 Emulate [];
    gettimeofday 2 Emulate [Fixed(0, TIMEVAL), Fixed(1, 8)];
    getrlimit 2 Emulate [Fixed(1, RLIMIT)];
    getrusage 2 Emulate [Fixed(1, RUSAGE)];
    sysinfo 1 Emulate [Fixed(0, 112)];
    times 1 Emulate [Fixed(0, 32)];
    getuid 0 Emulate [];
    getgid 0 Emulate [];
    setuid 1 Emulate [];
    setgid 1 Emulate [];
    geteuid 0 Emulate [];
    getegid 0 Emulate [];
    setpgid 2 Emulate [];
    getppid 0 Emulate [];
    getpgrp 0 Emulate [];
    setsid 0 Emulate [];
    setreuid 2 Emulate [];
    setregid 2 Emulate [];
    getgroups 2 Emulate [RetCount(1, 4)];
    setgroups 2 Emulate [];
    setresuid 3 Emulate [];
    getresuid 3 Emulate [Fixed(0, 4), Fixed(1, 4), Fixed(2, 4)];
    setresgid 3 Emulate [];
    getresgid 3 Emulate [Fixed(0, 4), Fixed(1, 4), Fixed(2, 4)];
    getpgid 1 Emulate [];
    setfsuid 1 Emulate [];
    setfsgid 1 Emulate [];
    getsid 1 Emulate [];
    capget 2 Emulate [Fixed(0, 8), Fixed(1, 24)];
    capset 2 Emulate [];
    rt_sigpending 2 Emulate [ArgCount(0, 1, 1)];
    rt_sigtimedwait 4 Emulate [Fixed(1, SIGINFO)] { blocks: Blocks::Always };
    rt_sigqueueinfo 3 Emulate [];
    rt_sigsuspend 2 Suspend [] { blocks: Blocks::Always };
    sigaltstack 2 ReExecute [];
    utime 2 Emulate [];
    mknod 3 Emulate [];
    personality 1 Emulate [];
    statfs 2 Emulate [Fixed(1, STATFS)];
    fstatfs 2 Emulate [Fixed(1, STATFS)];
    getpriority 2 Emulate [];
    setpriority 3 Emulate [];
    sched_getparam 2 Emulate [Fixed(1, 4)];
    sched_setscheduler 3 Emulate [];
    sched_getscheduler 1 Emulate [];
    sched_get_priority_max 1 Emulate [];
    sched_get_priority_min 1 Emulate [];
    sched_rr_get_interval 2 Emulate [Fixed(1, TIMESPEC)];
    mlock 2 Emulate [];
    munlock 2 Emulate [];
    mlockall 1 Emulate [];
    munlockall 0 Emulate [];
    prctl 5 Emulate [Special(prctl_writes)];
    arch_prctl 2 ReExecute [];
    setrlimit 2 Emulate [];
    chroot 1 Emulate [];
    sync 0 Emulate [];
    gettid 0 Emulate [];
    readahead 3 Emulate [];
    setxattr 5 Emulate [];
    lsetxattr 5 Emulate [];
    fsetxattr 5 Emulate [];
    getxattr 4 Emulate [Ret(2)];
    lgetxattr 4 Emulate [Ret(2)];
    fgetxattr 4 Emulate [Ret(2)];
    listxattr 3 Emulate [Ret(1)];
    llistxattr 3 Emulate [Ret(1)];
    flistxattr 3 Emulate [Ret(1)];
    removexattr 2 Emulate [];
    lremovexattr 2 Emulate [];
    fremovexattr 2 Emulate [];
    tkill 2 Emulate [];
    time 1 Emulate [Fixed(0, 8)];
    futex 6 Emulate [] { blocks: Blocks::FutexWait };
    sched_setaffinity 3 Emulate [];
    sched_getaffinity 3 Emulate [Ret(2)];
    epoll_create 1 Emulate [];
    getdents64 3 Emulate [Ret(1)];
    set_tid_address 1 ReExecute [];
    restart_syscall 0 Emulate [];
    fadvise64 4 Emulate [];
    timer_create 3 Emulate [Fixed(2, 4)];
    timer_settime 4 Emulate [Fixed(3, ITIMERSPEC)];
    timer_gettime 2 Emulate [Fixed(1, ITIMERSPEC)];
    timer_getoverrun 1 Emulate [];
    timer_delete 1 Emulate [];
    clock_gettime 2 Emulate [Fixed(1, TIMESPEC)];
    clock_getres 2 Emulate [Fixed(1, TIMESPEC)];
    clock_nanosleep 4 Emulate [Fixed(3, TIMESPEC)] { blocks: Blocks::Always, writes_when_interrupted: true };
    exit_group 1 Exit [];
    epoll_wait 4 Emulate [RetCount(1, EPOLL_EVENT)] { blocks: Blocks::Always };
    epoll_ctl 4 Emulate [];
    tgkill 3 Emulate [];
    utimes 2 Emulate [];
    mbind 6 Emulate [];
    set_mempolicy 3 Emulate [];
    get_mempolicy 5 Emulate [Fixed(0, 4), Special(nodemask_writes)];
    waitid 5 Emulate [Fixed(2, SIGINFO), Fixed(4, RUSAGE)] { blocks: Blocks::Always };
    inotify_init 0 Emulate [];
    inotify_add_watch 3 Emulate [];
    inotify_rm_watch 2 Emulate [];
    openat 4 Emulate [];
    mkdirat 3 Emulate [];
    mknodat 4 Emulate [];
    fchownat 5 Emulate [];
    futimesat 3 Emulate [];
    newfstatat 4 Emulate [Fixed(2, STAT)];
    unlinkat 3 Emulate [];
    renameat 4 Emulate [];
    linkat 5 Emulate [];
    symlinkat 3 Emulate [];
    readlinkat 4 Emulate [Ret(2)];
    fchmodat 3 Emulate [];
    faccessat 3 Emulate [];
    pselect6 6 Emulate [Special(select_writes)] { blocks: Blocks::Always, writes_when_interrupted: true, mask: Some(Mask::Pselect6(5)) };
    ppoll 5 Emulate [ArgCount(0, 1, POLLFD), Fixed(2, TIMESPEC)] { blocks: Blocks::Always, writes_when_interrupted: true, mask: Some(Mask::Args(3, 4)) };
    set_robust_list 2 ReExecute [];
    get_robust_list 3 Emulate [Fixed(1, 8), Fixed(2, 8)];
    splice 6 Emulate [Fixed(1, 8), Fixed(3, 8)] { blocks: Blocks::Always, output: to_at(2, 3, In::Fd { fd: 0, offset: 1 }) };
    tee 4 Emulate [] { blocks: Blocks::Always, output: to(1, In::PipeCopy(0)) };
    sync_file_range 4 Emulate [];
    // vmsplice on a pipe's read end copies into the iovecs (like readv); on a write end the
    // bytes recorded as written are the program's own, already there at replay.
    vmsplice 4 Emulate [Iov(1, 2)] { blocks: Blocks::Always, output: to(0, In::Iov(1, 2)) };
    utimensat 4 Emulate [];
    epoll_pwait 6 Emulate [RetCount(1, EPOLL_EVENT)] { blocks: Blocks::Always, mask: Some(Mask::Args(4, 5)) };
    signalfd 3 Emulate [];
    timerfd_create 2 Emulate [];
    eventfd 1 Emulate [];
    fallocate 4 Emulate [];
    timerfd_settime 4 Emulate [Fixed(3, ITIMERSPEC)];
    timerfd_gettime 2 Emulate [Fixed(1, ITIMERSPEC)];
    accept4 4 Emulate [LenPtr(1, 2)] { blocks: Blocks::Always };
    signalfd4 4 Emulate [];
    eventfd2 2 Emulate [];
    epoll_create1 1 Emulate [];
    dup3 3 Emulate [] { changes_fds: true };
    pipe2 2 Emulate [Fixed(0, 8)];
    inotify_init1 1 Emulate [];
    preadv 5 Emulate [Iov(1, 2)];
    pwritev 5 Emulate [] { output: to(0, In::Iov(1, 2)) };
    rt_tgsigqueueinfo 4 Emulate [];
    prlimit64 4 Emulate [Fixed(3, RLIMIT)];
    syncfs 1 Emulate [];
    getcpu 3 Emulate [Fixed(0, 4), Fixed(1, 4)];
    renameat2 5 Emulate [];
    getrandom 3 Emulate [Ret(0)];
    memfd_create 2 Emulate [];
    execveat 5 Exec [] { changes_fds: true };
    membarrier 3 Emulate [];
    mlock2 3 Emulate [];
    copy_file_range 6 Emulate [Fixed(1, 8), Fixed(3, 8)] { output: to_at(2, 3, In::Fd { fd: 0, offset: 1 }) };
    preadv2 6 Emulate [Iov(1, 2)];
    pwritev2 6 Emulate [] { output: to(0, In::Iov(1, 2)) };
    pkey_mprotect 4 AddressSpace [];
    pkey_alloc 2 AddressSpace [];
    pkey_free 1 AddressSpace [];
    statx 5 Emulate [Fixed(4, 256)];
    rseq 4 Emulate [];
    pidfd_send_signal 4 Emulate [];
    pidfd_open 2 Emulate [];
    clone3 2 NewProcess [];
    close_range 3 Emulate [] { changes_fds: true };
    openat2 4 Emulate [];
    faccessat2 4 Emulate [];
    epoll_pwait2 6 Emulate [RetCount(1, EPOLL_EVENT)] { blocks: Blocks::Always, mask: Some(Mask::Args(4, 5)) };
}

/// `futex` operations that wait (the thread gives its turn up for them).
pub fn futex_waits(args: &[u64; 6]) -> bool {
    const FUTEX_WAIT: u64 = 0;
    const FUTEX_LOCK_PI: u64 = 6;
    const FUTEX_WAIT_BITSET: u64 = 9;
    const FUTEX_WAIT_REQUEUE_PI: u64 = 11;
    const FUTEX_LOCK_PI2: u64 = 13;
    matches!(args[1] & 0x7f, FUTEX_WAIT | FUTEX_LOCK_PI | FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2)
}

/// `ioctl`: the request encodes direction and size, except for the old tty requests.
fn ioctl_writes(args: &[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    let req = args[1] as u32;
    let dir = req >> 30;
    let size = ((req >> 16) & 0x3fff) as u64;
    let legacy = match req {
        0x5401 => Some(36),                  // TCGETS: struct termios
        0x5413 => Some(8),                   // TIOCGWINSZ
        0x540f | 0x5429 | 0x541b => Some(4), // TIOCGPGRP, TIOCGSID, FIONREAD
        0x5402..=0x5404 | 0x5410 | 0x5414 | 0x540b | 0x5421 | 0x5450 | 0x5451 | 0x5409 | 0x540a | 0x540e | 0x5422 => {
            Some(0)
        }
        _ => None,
    };
    match (legacy, dir) {
        (Some(n), _) => Ok(vec![(args[2], n)]),
        (None, d) if d & 2 != 0 => Ok(vec![(args[2], size)]),
        (None, 1) => Ok(vec![]),
        (None, _) => Err(UnknownEffect(format!("ioctl request {req:#x} (its memory effects are unknown)"))),
    }
}

/// `fcntl`: `F_GETLK` / `F_OFD_GETLK` fill a `struct flock`, `F_GETOWN_EX` a `struct f_owner_ex`.
fn fcntl_writes(args: &[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    Ok(match args[1] {
        5 | 36 => vec![(args[2], 32)],
        16 => vec![(args[2], 8)],
        _ => vec![],
    })
}

/// `prctl(PR_SET_TSC)`: rdb traps `rdtsc` itself and refuses a program that changes that.
pub const PR_SET_TSC: u64 = 26;

/// `prctl`: the `PR_GET_*` options that write through their second argument.
fn prctl_writes(args: &[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    Ok(match args[0] {
        16 => vec![(args[1], 16)],                  // PR_GET_NAME
        2 | 25 | 3 | 10 | 12 => vec![(args[1], 4)], // PR_GET_PDEATHSIG, PR_GET_TSC, ...
        40 => vec![(args[1], 8)],                   // PR_GET_TID_ADDRESS
        PR_SET_TSC => return Err(UnknownEffect("prctl(PR_SET_TSC) (rdb traps rdtsc itself)".into())),
        _ => vec![],
    })
}

/// `select` / `pselect6`: three fd sets of `nfds` bits, then the timeout.
fn select_writes(args: &[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    let set = args[0].div_ceil(64) * 8;
    Ok(vec![(args[1], set), (args[2], set), (args[3], set), (args[4], 16)])
}

/// `get_mempolicy`: the node mask has `maxnode` bits (argument 2), in whole `unsigned long`s.
fn nodemask_writes(args: &[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    Ok(vec![(args[1], args[2].div_ceil(64).saturating_mul(8))])
}

/// `mincore`: one byte per page.
fn mincore_writes(args: &[u64; 6]) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    Ok(vec![(args[2], args[1].div_ceil(4096))])
}

/// The argument that names the file an exec call runs (`execveat` has a directory fd first).
pub fn exec_path_arg(sysno: Sysno) -> usize {
    if sysno == Sysno::execveat {
        1
    } else {
        0
    }
}

/// A file-backed `mmap` (not `MAP_ANONYMOUS`).
pub fn maps_a_file(sysno: Sysno, args: &[u64; 6]) -> bool {
    sysno == Sysno::mmap && args[3] & libc::MAP_ANONYMOUS as u64 == 0
}

/// The table entry for a syscall number, or `None` when rdb does not know it.
pub fn lookup(nr: u64) -> Option<&'static SyscallDesc> {
    TABLE.binary_search_by_key(&nr, |d| d.sysno as u64).ok().map(|i| &TABLE[i])
}

/// The kernel's name for a syscall number (also for ones missing from the table).
pub fn name(nr: u64) -> String {
    match Sysno::new(nr as usize) {
        Some(s) => s.name().to_string(),
        None => format!("syscall_{nr}"),
    }
}

/// Why a call missing from the table is refused (the end of the recorder's error message).
pub fn refusal(nr: u64) -> &'static str {
    match Sysno::new(nr as usize) {
        Some(Sysno::ptrace) => {
            "a tracer (strace, gdb) cannot run under rdb, which is the program's tracer already: record the \
             program without it, and debug the replay instead (`rdb gdb`)"
        }
        Some(Sysno::io_uring_setup | Sysno::io_uring_enter | Sysno::io_uring_register) => {
            "the kernel performs io_uring's operations outside system calls, where a ptrace recorder cannot see \
             them: run the program without io_uring"
        }
        _ => "rdb cannot record it yet",
    }
}

/// The policy for a number: unknown numbers are [`Policy::Unsupported`].
pub fn policy(nr: u64) -> Policy {
    lookup(nr).map_or(Policy::Unsupported, |d| d.policy)
}

/// How many arguments a call uses (6 for unknown ones).
pub fn nargs(nr: u64) -> usize {
    lookup(nr).map_or(6, |d| d.nargs as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for w in TABLE.windows(2) {
            assert!((w[0].sysno as u64) < (w[1].sysno as u64), "{} before {}", w[0].name(), w[1].name());
        }
    }

    #[test]
    fn lookups_find_each_entry_by_its_kernel_number() {
        for d in TABLE {
            assert_eq!(lookup(d.sysno as u64).map(|e| e.sysno), Some(d.sysno));
            assert_eq!(name(d.sysno as u64), d.name());
        }
    }

    #[test]
    fn unknown_numbers_are_unsupported_and_named() {
        assert_eq!(policy(101), Policy::Unsupported);
        assert_eq!(name(101), "ptrace");
        assert_eq!(name(100_000), "syscall_100000");
        assert!(refusal(101).contains("tracer") && refusal(425).contains("io_uring"));
        assert_eq!(refusal(100_000), "rdb cannot record it yet");
        assert_eq!(lookup(0).unwrap().name(), "read");
    }

    #[test]
    fn every_call_is_described_beyond_its_memory_effects() {
        let d = |s: Sysno| lookup(s as u64).unwrap();
        assert!(d(Sysno::read).gives_turn_up(&[0; 6]) && !d(Sysno::write).gives_turn_up(&[0; 6]));
        assert!(d(Sysno::futex).gives_turn_up(&[0, 0x80, 0, 0, 0, 0])); // FUTEX_WAIT_PRIVATE
        assert!(!d(Sysno::futex).gives_turn_up(&[0, 0x81, 0, 0, 0, 0])); // FUTEX_WAKE_PRIVATE
        assert!(d(Sysno::dup2).changes_fds && d(Sysno::execveat).changes_fds && !d(Sysno::open).changes_fds);
        assert!(d(Sysno::ppoll).writes_when_interrupted && !d(Sysno::epoll_wait).writes_when_interrupted);
        assert_eq!(d(Sysno::pselect6).mask, Some(Mask::Pselect6(5)));
        assert_eq!(d(Sysno::writev).output, to(0, In::Iov(1, 2)));
        assert_eq!(d(Sysno::splice).output.map(|o| (o.fd, o.offset)), Some((2, Some(3))));
        assert_eq!(d(Sysno::brk).policy, Policy::AddressSpace);
        assert!(d(Sysno::clone3).policy.re_executed() && !d(Sysno::read).policy.re_executed());
    }
}
