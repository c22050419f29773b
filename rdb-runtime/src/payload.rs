//! What a system call moves between the program and the outside world, for event callbacks
//! (`rdb::Syscall::data`): the bytes it sends, read from the program's memory (the table's
//! [`In`] of its [`Output`](syscalls::Output) for calls that write to a descriptor from memory), and the bytes it received
//! (the payload part of the table's [`Out`] effects: `Ret`, `Iov` and the iovecs of a
//! `msghdr`), which after a replayed call are in the program's memory as recorded.

use rdb_tracee::Memory;

use crate::effects::{msghdr_iovecs, read_iovecs, scatter};
use crate::syscalls::{self, In, Out, Sysno};

/// Most bytes of data one call reports.
pub const MAX_DATA: u64 = 16 << 20;

/// The program memory ranges holding the bytes `nr` sends (`sent`) or received, given its
/// recorded result `ret` (bytes moved). Received data exists only once the call completed;
/// pass `completed` false before it runs.
pub fn data_ranges(nr: u64, args: &[u64; 6], ret: i64, completed: bool, mem: &dyn Memory) -> Vec<(u64, u64)> {
    let mut ranges = Vec::new();
    if ret <= 0 {
        return ranges;
    }
    let len = (ret as u64).min(MAX_DATA);
    let Some(desc) = syscalls::lookup(nr) else { return ranges };
    // Calls that send the program's memory: the table says where.
    match desc.output.map(|o| o.data) {
        Some(In::Buf(buf)) => ranges.push((args[buf as usize], len)),
        Some(In::Iov(iov, count)) => {
            scatter(&read_iovecs(mem, args[iov as usize], args[count as usize]), len, &mut ranges)
        }
        Some(In::MsgHdr(h)) => msghdr_iovecs(mem, args[h as usize], len, &mut ranges),
        // Bytes moved between descriptors never pass through the program's memory.
        Some(In::Fd { .. } | In::PipeCopy(_)) => {}
        None if completed => {
            for w in desc.writes {
                match *w {
                    Out::Ret(a) => ranges.push((args[a as usize], len)),
                    Out::Iov(a, c) => scatter(&read_iovecs(mem, args[a as usize], args[c as usize]), len, &mut ranges),
                    Out::MsgHdr(a) => msghdr_iovecs(mem, args[a as usize], len, &mut ranges),
                    _ => {}
                }
            }
        }
        None => {}
    }
    ranges.retain(|&(addr, n)| addr != 0 && n != 0);
    ranges
}

/// The bytes of [`data_ranges`], read from `mem` (an unreadable tail is left out).
pub fn data(nr: u64, args: &[u64; 6], ret: i64, completed: bool, mem: &dyn Memory) -> Vec<u8> {
    let mut out = Vec::new();
    for (addr, len) in data_ranges(nr, args, ret, completed, mem) {
        let start = out.len();
        out.resize(start + len as usize, 0);
        let n = mem.read_memory(addr, &mut out[start..]).unwrap_or(0);
        out.truncate(start + n);
        if n < len as usize {
            break;
        }
    }
    out
}

/// The position of the file descriptor argument of calls that work on one (`read`, `write`,
/// `sendto`, `close`, `fstat`, ...), `None` for others (`*at` calls take a directory, not the
/// file they work on).
pub fn fd_argument(nr: u64) -> Option<usize> {
    use Sysno::*;
    let call = Sysno::new(nr as usize)?;
    matches!(
        call,
        read | write
            | pread64
            | pwrite64
            | readv
            | writev
            | preadv
            | pwritev
            | preadv2
            | pwritev2
            | close
            | fstat
            | lseek
            | ioctl
            | fcntl
            | flock
            | fsync
            | fdatasync
            | ftruncate
            | getdents
            | getdents64
            | sendto
            | recvfrom
            | sendmsg
            | recvmsg
            | sendmmsg
            | recvmmsg
            | shutdown
            | bind
            | listen
            | accept
            | accept4
            | connect
            | getsockname
            | getpeername
            | setsockopt
            | getsockopt
            | fchmod
            | fchown
            | fstatfs
            | sendfile
            | splice
            | tee
            | dup
            | dup2
            | dup3
            | epoll_wait
            | epoll_pwait
            | epoll_ctl
            | fadvise64
            | fallocate
            | sync_file_range
            | readahead
            | copy_file_range
    )
    .then_some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::tests::Fake;

    #[test]
    fn write_sends_as_many_bytes_as_it_took() {
        let m = Fake(b"hello world".to_vec(), 0x1000);
        let args = [1, 0x1000, 11, 0, 0, 0];
        assert_eq!(data(Sysno::write as u64, &args, 5, false, &m), b"hello");
        assert_eq!(data(Sysno::sendto as u64, &args, 11, true, &m), b"hello world");
        assert!(data(Sysno::write as u64, &args, -9, true, &m).is_empty());
        assert_eq!(fd_argument(Sysno::write as u64), Some(0));
        assert_eq!(fd_argument(Sysno::openat as u64), None);
    }

    #[test]
    fn read_received_only_once_completed() {
        let m = Fake(b"abc".to_vec(), 0x2000);
        let args = [0, 0x2000, 100, 0, 0, 0];
        assert_eq!(data(Sysno::read as u64, &args, 3, true, &m), b"abc");
        assert!(data(Sysno::read as u64, &args, 3, false, &m).is_empty());
        // Nothing moved by calls without a payload.
        assert!(data(Sysno::fstat as u64, &args, 0, true, &m).is_empty());
    }

    #[test]
    fn writev_gathers_its_iovecs() {
        let mut img = vec![0u8; 0x40];
        for (i, (b, l)) in [(0x1020u64, 2u64), (0x1030, 3)].into_iter().enumerate() {
            img[i * 16..i * 16 + 8].copy_from_slice(&b.to_le_bytes());
            img[i * 16 + 8..i * 16 + 16].copy_from_slice(&l.to_le_bytes());
        }
        img[0x20..0x22].copy_from_slice(b"hi");
        img[0x30..0x33].copy_from_slice(b"!!\n");
        let m = Fake(img, 0x1000);
        assert_eq!(data(Sysno::writev as u64, &[1, 0x1000, 2, 0, 0, 0], 5, false, &m), b"hi!!\n");
    }
}
