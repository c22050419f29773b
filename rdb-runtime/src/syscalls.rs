//! The syscall table: one entry per x86-64 syscall number, as data.
//!
//! Each entry says how the recorder and replayer treat the call ([`Policy`]) and which memory
//! the kernel writes for it ([`Out`]). Regular calls are recorded and replayed generically from
//! this table; irregular ones (`ioctl`, `fcntl`, `prctl`, `select`, `mmap`, `clone`, ...) are
//! marked [`Out::Special`] and handled by hand in [`crate::effects`]. A number missing from the
//! table is unsupported: recording fails, naming the call.

/// What record and replay do with a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Executed while recording; on replay it is skipped and its recorded result and memory
    /// effects are injected.
    Emulate,
    /// Builds kernel state the replayed process needs (address space, processes, signal
    /// dispositions): executed again on replay with the same arguments, result checked.
    ReExecute,
    /// Not supported yet: recording stops with an error naming the call.
    Unsupported,
}

/// Memory the kernel writes for a syscall, in terms of its arguments (by index) and result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Irregular: handled by name in [`crate::effects`].
    Special,
}

/// One syscall table entry.
#[derive(Debug, Clone, Copy)]
pub struct SyscallDesc {
    pub nr: u64,
    pub name: &'static str,
    /// How many argument registers the call uses (compared during replay).
    pub nargs: u8,
    pub policy: Policy,
    pub writes: &'static [Out],
}

use Out::*;
use Policy::*;

macro_rules! table {
    ($( $nr:literal $name:ident $nargs:literal $pol:ident [$($w:expr),*] ;)*) => {
        /// The table, sorted by number.
        pub static TABLE: &[SyscallDesc] = &[
            $( SyscallDesc { nr: $nr, name: stringify!($name), nargs: $nargs, policy: $pol,
                             writes: &[$($w),*] }, )*
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
    0 read 3 Emulate [Ret(1)];
    1 write 3 Emulate [];
    2 open 3 Emulate [];
    3 close 1 Emulate [];
    4 stat 2 Emulate [Fixed(1, STAT)];
    5 fstat 2 Emulate [Fixed(1, STAT)];
    6 lstat 2 Emulate [Fixed(1, STAT)];
    7 poll 3 Emulate [ArgCount(0, 1, POLLFD)];
    8 lseek 3 Emulate [];
    9 mmap 6 ReExecute [Special];
    10 mprotect 3 ReExecute [];
    11 munmap 2 ReExecute [];
    12 brk 1 ReExecute [];
    13 rt_sigaction 4 ReExecute [];
    14 rt_sigprocmask 4 ReExecute [];
    15 rt_sigreturn 0 ReExecute [];
    16 ioctl 3 Emulate [Special];
    17 pread64 4 Emulate [Ret(1)];
    18 pwrite64 4 Emulate [];
    19 readv 3 Emulate [Iov(1, 2)];
    20 writev 3 Emulate [];
    21 access 2 Emulate [];
    22 pipe 1 Emulate [Fixed(0, 8)];
    23 select 5 Emulate [Special];
    24 sched_yield 0 Emulate [];
    25 mremap 5 ReExecute [];
    26 msync 3 Emulate [];
    27 mincore 3 Emulate [Special];
    28 madvise 3 ReExecute [];
    32 dup 1 Emulate [];
    33 dup2 2 Emulate [];
    34 pause 0 Emulate [];
    35 nanosleep 2 Emulate [Fixed(1, TIMESPEC)];
    36 getitimer 2 Emulate [Fixed(1, ITIMERVAL)];
    37 alarm 1 Emulate [];
    38 setitimer 3 Emulate [Fixed(2, ITIMERVAL)];
    39 getpid 0 Emulate [];
    40 sendfile 4 Emulate [Fixed(2, 8)];
    41 socket 3 Emulate [];
    42 connect 3 Emulate [];
    43 accept 3 Emulate [LenPtr(1, 2)];
    44 sendto 6 Emulate [];
    45 recvfrom 6 Emulate [Ret(1), LenPtr(4, 5)];
    46 sendmsg 3 Emulate [];
    47 recvmsg 3 Emulate [MsgHdr(1)];
    48 shutdown 2 Emulate [];
    49 bind 3 Emulate [];
    50 listen 2 Emulate [];
    51 getsockname 3 Emulate [LenPtr(1, 2)];
    52 getpeername 3 Emulate [LenPtr(1, 2)];
    53 socketpair 4 Emulate [Fixed(3, 8)];
    54 setsockopt 5 Emulate [];
    55 getsockopt 5 Emulate [LenPtr(3, 4)];
    56 clone 5 ReExecute [Special];
    57 fork 0 ReExecute [];
    58 vfork 0 ReExecute [];
    59 execve 3 ReExecute [];
    60 exit 1 ReExecute [];
    61 wait4 4 Emulate [Fixed(1, 4), Fixed(3, RUSAGE)];
    62 kill 2 Emulate [];
    63 uname 1 Emulate [Fixed(0, 390)];
    72 fcntl 3 Emulate [Special];
    73 flock 2 Emulate [];
    74 fsync 1 Emulate [];
    75 fdatasync 1 Emulate [];
    76 truncate 2 Emulate [];
    77 ftruncate 2 Emulate [];
    78 getdents 3 Emulate [Ret(1)];
    79 getcwd 2 Emulate [Ret(0)];
    80 chdir 1 Emulate [];
    81 fchdir 1 Emulate [];
    82 rename 2 Emulate [];
    83 mkdir 2 Emulate [];
    84 rmdir 1 Emulate [];
    85 creat 2 Emulate [];
    86 link 2 Emulate [];
    87 unlink 1 Emulate [];
    88 symlink 2 Emulate [];
    89 readlink 3 Emulate [Ret(1)];
    90 chmod 2 Emulate [];
    91 fchmod 2 Emulate [];
    92 chown 3 Emulate [];
    93 fchown 3 Emulate [];
    94 lchown 3 Emulate [];
    95 umask 1 Emulate [];
    96 gettimeofday 2 Emulate [Fixed(0, TIMEVAL), Fixed(1, 8)];
    97 getrlimit 2 Emulate [Fixed(1, RLIMIT)];
    98 getrusage 2 Emulate [Fixed(1, RUSAGE)];
    99 sysinfo 1 Emulate [Fixed(0, 112)];
    100 times 1 Emulate [Fixed(0, 32)];
    102 getuid 0 Emulate [];
    104 getgid 0 Emulate [];
    105 setuid 1 Emulate [];
    106 setgid 1 Emulate [];
    107 geteuid 0 Emulate [];
    108 getegid 0 Emulate [];
    109 setpgid 2 Emulate [];
    110 getppid 0 Emulate [];
    111 getpgrp 0 Emulate [];
    112 setsid 0 Emulate [];
    113 setreuid 2 Emulate [];
    114 setregid 2 Emulate [];
    115 getgroups 2 Emulate [RetCount(1, 4)];
    116 setgroups 2 Emulate [];
    117 setresuid 3 Emulate [];
    118 getresuid 3 Emulate [Fixed(0, 4), Fixed(1, 4), Fixed(2, 4)];
    119 setresgid 3 Emulate [];
    120 getresgid 3 Emulate [Fixed(0, 4), Fixed(1, 4), Fixed(2, 4)];
    121 getpgid 1 Emulate [];
    122 setfsuid 1 Emulate [];
    123 setfsgid 1 Emulate [];
    124 getsid 1 Emulate [];
    125 capget 2 Emulate [Fixed(0, 8), Fixed(1, 24)];
    126 capset 2 Emulate [];
    127 rt_sigpending 2 Emulate [ArgCount(0, 1, 1)];
    128 rt_sigtimedwait 4 Emulate [Fixed(1, SIGINFO)];
    129 rt_sigqueueinfo 3 Emulate [];
    130 rt_sigsuspend 2 ReExecute [];
    131 sigaltstack 2 ReExecute [];
    132 utime 2 Emulate [];
    133 mknod 3 Emulate [];
    135 personality 1 Emulate [];
    137 statfs 2 Emulate [Fixed(1, STATFS)];
    138 fstatfs 2 Emulate [Fixed(1, STATFS)];
    140 getpriority 2 Emulate [];
    141 setpriority 3 Emulate [];
    143 sched_getparam 2 Emulate [Fixed(1, 4)];
    144 sched_setscheduler 3 Emulate [];
    145 sched_getscheduler 1 Emulate [];
    146 sched_get_priority_max 1 Emulate [];
    147 sched_get_priority_min 1 Emulate [];
    148 sched_rr_get_interval 2 Emulate [Fixed(1, TIMESPEC)];
    149 mlock 2 Emulate [];
    150 munlock 2 Emulate [];
    151 mlockall 1 Emulate [];
    152 munlockall 0 Emulate [];
    157 prctl 5 Emulate [Special];
    158 arch_prctl 2 ReExecute [Special];
    160 setrlimit 2 Emulate [];
    161 chroot 1 Emulate [];
    162 sync 0 Emulate [];
    186 gettid 0 Emulate [];
    187 readahead 3 Emulate [];
    188 setxattr 5 Emulate [];
    189 lsetxattr 5 Emulate [];
    190 fsetxattr 5 Emulate [];
    191 getxattr 4 Emulate [Ret(2)];
    192 lgetxattr 4 Emulate [Ret(2)];
    193 fgetxattr 4 Emulate [Ret(2)];
    194 listxattr 3 Emulate [Ret(1)];
    195 llistxattr 3 Emulate [Ret(1)];
    196 flistxattr 3 Emulate [Ret(1)];
    197 removexattr 2 Emulate [];
    198 lremovexattr 2 Emulate [];
    199 fremovexattr 2 Emulate [];
    200 tkill 2 Emulate [];
    201 time 1 Emulate [Fixed(0, 8)];
    202 futex 6 Emulate [];
    203 sched_setaffinity 3 Emulate [];
    204 sched_getaffinity 3 Emulate [Ret(2)];
    213 epoll_create 1 Emulate [];
    217 getdents64 3 Emulate [Ret(1)];
    218 set_tid_address 1 ReExecute [];
    219 restart_syscall 0 Emulate [];
    221 fadvise64 4 Emulate [];
    222 timer_create 3 Emulate [Fixed(2, 4)];
    223 timer_settime 4 Emulate [Fixed(3, ITIMERSPEC)];
    224 timer_gettime 2 Emulate [Fixed(1, ITIMERSPEC)];
    225 timer_getoverrun 1 Emulate [];
    226 timer_delete 1 Emulate [];
    228 clock_gettime 2 Emulate [Fixed(1, TIMESPEC)];
    229 clock_getres 2 Emulate [Fixed(1, TIMESPEC)];
    230 clock_nanosleep 4 Emulate [Fixed(3, TIMESPEC)];
    231 exit_group 1 ReExecute [];
    232 epoll_wait 4 Emulate [RetCount(1, EPOLL_EVENT)];
    233 epoll_ctl 4 Emulate [];
    234 tgkill 3 Emulate [];
    235 utimes 2 Emulate [];
    247 waitid 5 Emulate [Fixed(2, SIGINFO), Fixed(4, RUSAGE)];
    253 inotify_init 0 Emulate [];
    254 inotify_add_watch 3 Emulate [];
    255 inotify_rm_watch 2 Emulate [];
    257 openat 4 Emulate [];
    258 mkdirat 3 Emulate [];
    259 mknodat 4 Emulate [];
    260 fchownat 5 Emulate [];
    261 futimesat 3 Emulate [];
    262 newfstatat 4 Emulate [Fixed(2, STAT)];
    263 unlinkat 3 Emulate [];
    264 renameat 4 Emulate [];
    265 linkat 5 Emulate [];
    266 symlinkat 3 Emulate [];
    267 readlinkat 4 Emulate [Ret(2)];
    268 fchmodat 3 Emulate [];
    269 faccessat 3 Emulate [];
    270 pselect6 6 Emulate [Special];
    271 ppoll 5 Emulate [ArgCount(0, 1, POLLFD), Fixed(2, TIMESPEC)];
    273 set_robust_list 2 ReExecute [];
    274 get_robust_list 3 Emulate [Fixed(1, 8), Fixed(2, 8)];
    275 splice 6 Emulate [Fixed(1, 8), Fixed(3, 8)];
    276 tee 4 Emulate [];
    277 sync_file_range 4 Emulate [];
    280 utimensat 4 Emulate [];
    281 epoll_pwait 6 Emulate [RetCount(1, EPOLL_EVENT)];
    282 signalfd 3 Emulate [];
    283 timerfd_create 2 Emulate [];
    284 eventfd 1 Emulate [];
    285 fallocate 4 Emulate [];
    286 timerfd_settime 4 Emulate [Fixed(3, ITIMERSPEC)];
    287 timerfd_gettime 2 Emulate [Fixed(1, ITIMERSPEC)];
    288 accept4 4 Emulate [LenPtr(1, 2)];
    289 signalfd4 4 Emulate [];
    290 eventfd2 2 Emulate [];
    291 epoll_create1 1 Emulate [];
    292 dup3 3 Emulate [];
    293 pipe2 2 Emulate [Fixed(0, 8)];
    294 inotify_init1 1 Emulate [];
    295 preadv 5 Emulate [Iov(1, 2)];
    296 pwritev 5 Emulate [];
    297 rt_tgsigqueueinfo 4 Emulate [];
    302 prlimit64 4 Emulate [Fixed(3, RLIMIT)];
    306 syncfs 1 Emulate [];
    309 getcpu 3 Emulate [Fixed(0, 4), Fixed(1, 4)];
    316 renameat2 5 Emulate [];
    318 getrandom 3 Emulate [Ret(0)];
    319 memfd_create 2 Emulate [];
    322 execveat 5 ReExecute [];
    324 membarrier 3 Emulate [];
    325 mlock2 3 Emulate [];
    326 copy_file_range 6 Emulate [Fixed(1, 8), Fixed(3, 8)];
    327 preadv2 6 Emulate [Iov(1, 2)];
    328 pwritev2 6 Emulate [];
    332 statx 5 Emulate [Fixed(4, 256)];
    334 rseq 4 Emulate [];
    424 pidfd_send_signal 4 Emulate [];
    434 pidfd_open 2 Emulate [];
    435 clone3 2 ReExecute [Special];
    436 close_range 3 Emulate [];
    437 openat2 4 Emulate [];
    439 faccessat2 4 Emulate [];
    441 epoll_pwait2 6 Emulate [RetCount(1, EPOLL_EVENT)];
}

/// Syscall numbers the engine refers to by name.
pub mod nr {
    pub const RESTART_SYSCALL: u64 = 219;
    pub const READ: u64 = 0;
    pub const WRITE: u64 = 1;
    pub const CLOSE: u64 = 3;
    pub const MMAP: u64 = 9;
    pub const SCHED_GETAFFINITY: u64 = 204;
    pub const MPROTECT: u64 = 10;
    pub const MUNMAP: u64 = 11;
    pub const BRK: u64 = 12;
    pub const PWRITE64: u64 = 18;
    pub const WRITEV: u64 = 20;
    pub const MREMAP: u64 = 25;
    pub const DUP: u64 = 32;
    pub const DUP2: u64 = 33;
    pub const CLONE: u64 = 56;
    pub const FORK: u64 = 57;
    pub const VFORK: u64 = 58;
    pub const EXECVE: u64 = 59;
    pub const EXIT: u64 = 60;
    pub const FCNTL: u64 = 72;
    pub const RT_SIGSUSPEND: u64 = 130;
    pub const PRCTL: u64 = 157;
    pub const ARCH_PRCTL: u64 = 158;
    pub const EXIT_GROUP: u64 = 231;
    pub const DUP3: u64 = 292;
    pub const PWRITEV: u64 = 296;
    pub const EXECVEAT: u64 = 322;
    pub const PWRITEV2: u64 = 328;
    pub const RSEQ: u64 = 334;
    pub const CLONE3: u64 = 435;
    pub const CLOSE_RANGE: u64 = 436;
}

/// The table entry for a syscall number, or `None` when rdb does not know it.
pub fn lookup(nr: u64) -> Option<&'static SyscallDesc> {
    TABLE.binary_search_by_key(&nr, |d| d.nr).ok().map(|i| &TABLE[i])
}

/// The kernel's name for a syscall number (also for ones missing from the table).
pub fn name(nr: u64) -> String {
    if let Some(d) = lookup(nr) {
        return d.name.to_string();
    }
    match syscalls::Sysno::new(nr as usize) {
        Some(s) => s.name().to_string(),
        None => format!("syscall_{nr}"),
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

/// Syscalls after which a process's file-descriptor table may name different files.
pub fn changes_fds(nr: u64) -> bool {
    matches!(nr, nr::CLOSE | nr::DUP | nr::DUP2 | nr::DUP3 | nr::FCNTL | nr::CLOSE_RANGE | nr::EXECVE | nr::EXECVEAT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for w in TABLE.windows(2) {
            assert!(w[0].nr < w[1].nr, "{} before {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn names_agree_with_the_kernel_numbering() {
        for d in TABLE {
            let kernel = syscalls::Sysno::new(d.nr as usize).expect("known number");
            assert_eq!(kernel.name(), d.name, "number {}", d.nr);
        }
    }

    #[test]
    fn unknown_numbers_are_unsupported_and_named() {
        assert_eq!(policy(101), Policy::Unsupported);
        assert_eq!(name(101), "ptrace");
        assert_eq!(name(100_000), "syscall_100000");
        assert_eq!(lookup(0).unwrap().name, "read");
    }
}
