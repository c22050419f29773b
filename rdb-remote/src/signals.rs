//! Signal numbers: the protocol uses gdb's own numbering (`GDB_SIGNAL_*`), which differs from
//! Linux's above 9 for several signals.

/// gdb's trap signal (a breakpoint or a single step).
pub const GDB_SIGTRAP: u8 = 5;
/// gdb's stop signal.
pub const GDB_SIGSTOP: u8 = 17;

/// (gdb number, Linux number) for the standard signals.
const TABLE: [(u8, i32); 31] = [
    (1, libc::SIGHUP),
    (2, libc::SIGINT),
    (3, libc::SIGQUIT),
    (4, libc::SIGILL),
    (5, libc::SIGTRAP),
    (6, libc::SIGABRT),
    (8, libc::SIGFPE),
    (9, libc::SIGKILL),
    (10, libc::SIGBUS),
    (11, libc::SIGSEGV),
    (12, libc::SIGSYS),
    (13, libc::SIGPIPE),
    (14, libc::SIGALRM),
    (15, libc::SIGTERM),
    (16, libc::SIGURG),
    (17, libc::SIGSTOP),
    (18, libc::SIGTSTP),
    (19, libc::SIGCONT),
    (20, libc::SIGCHLD),
    (21, libc::SIGTTIN),
    (22, libc::SIGTTOU),
    (23, libc::SIGIO),
    (24, libc::SIGXCPU),
    (25, libc::SIGXFSZ),
    (26, libc::SIGVTALRM),
    (27, libc::SIGPROF),
    (28, libc::SIGWINCH),
    (30, libc::SIGUSR1),
    (31, libc::SIGUSR2),
    (32, libc::SIGPWR),
    (33, libc::SIGPOLL),
];

/// The Linux number of a gdb signal number (real-time and unknown signals keep gdb's number).
pub fn to_linux(gdb: u8) -> i32 {
    TABLE.iter().find(|(g, _)| *g == gdb).map(|(_, l)| *l).unwrap_or(gdb as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdb_numbers_map_to_linux_ones() {
        assert_eq!(to_linux(5), libc::SIGTRAP);
        assert_eq!(to_linux(11), libc::SIGSEGV);
        assert_eq!(to_linux(20), libc::SIGCHLD);
        assert_eq!(to_linux(30), libc::SIGUSR1);
        assert_eq!(to_linux(10), libc::SIGBUS);
    }
}
