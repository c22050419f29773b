//! Memory effects of syscalls: which tracee ranges the kernel wrote, from the table's [`Out`]
//! descriptions (irregular calls by the named functions beside the table). The recorder reads
//! these ranges after the call; the replayer writes them back.

use rdb_tracee::Memory;

pub use crate::syscalls::UnknownEffect;
use crate::syscalls::{self, Out};
use crate::trace::MemWrite;

/// Largest single range the recorder stores (a larger claim is a malformed call).
const MAX_RANGE: u64 = 1 << 30;

fn read_u64(mem: &dyn Memory, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    (mem.read_memory(addr, &mut b).ok()? == 8).then(|| u64::from_le_bytes(b))
}

fn read_u32(mem: &dyn Memory, addr: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    (mem.read_memory(addr, &mut b).ok()? == 4).then(|| u32::from_le_bytes(b))
}

/// Read an iovec array: (base, len) pairs.
pub fn read_iovecs(mem: &dyn Memory, addr: u64, count: u64) -> Vec<(u64, u64)> {
    let count = count.min(1024);
    let mut out = Vec::new();
    for i in 0..count {
        let (Some(base), Some(len)) = (read_u64(mem, addr + i * 16), read_u64(mem, addr + i * 16 + 8)) else {
            break;
        };
        out.push((base, len));
    }
    out
}

/// Split `total` bytes over iovecs, as the kernel fills them.
pub(crate) fn scatter(iov: &[(u64, u64)], mut total: u64, ranges: &mut Vec<(u64, u64)>) {
    for &(base, len) in iov {
        if total == 0 {
            break;
        }
        let n = len.min(total);
        ranges.push((base, n));
        total -= n;
    }
}

/// The iovecs of the `struct msghdr` at `h`, filled with `total` bytes.
pub(crate) fn msghdr_iovecs(mem: &dyn Memory, h: u64, total: u64, ranges: &mut Vec<(u64, u64)>) {
    if let (Some(iov), Some(count)) = (read_u64(mem, h + 16), read_u64(mem, h + 24)) {
        scatter(&read_iovecs(mem, iov, count), total, ranges);
    }
}

/// The ranges (address, length) the kernel wrote for a completed call.
pub fn written_ranges(nr: u64, args: &[u64; 6], ret: i64, mem: &dyn Memory) -> Result<Vec<(u64, u64)>, UnknownEffect> {
    let mut ranges = Vec::new();
    let Some(desc) = syscalls::lookup(nr) else { return Ok(ranges) };
    // Some calls write even when a signal interrupts them (EINTR, or a restart code the
    // program never sees), which the restarted call then goes on with.
    let interrupted = matches!(ret, -4 | -514 | -516) && desc.writes_when_interrupted;
    if ret < 0 && !interrupted {
        return Ok(ranges);
    }
    let uret = ret.max(0) as u64;
    for w in desc.writes {
        match *w {
            Out::Fixed(a, n) => ranges.push((args[a as usize], n as u64)),
            Out::Ret(a) => ranges.push((args[a as usize], uret)),
            Out::RetCount(a, size) => ranges.push((args[a as usize], uret.saturating_mul(size as u64))),
            Out::ArgCount(a, c, size) => ranges.push((args[a as usize], args[c as usize].saturating_mul(size as u64))),
            Out::LenPtr(buf, lenp) => {
                if args[lenp as usize] != 0 {
                    if let Some(len) = read_u32(mem, args[lenp as usize]) {
                        ranges.push((args[buf as usize], len as u64));
                    }
                    ranges.push((args[lenp as usize], 4));
                }
            }
            Out::Iov(a, c) => {
                let iov = read_iovecs(mem, args[a as usize], args[c as usize]);
                scatter(&iov, uret, &mut ranges);
            }
            Out::MsgHdr(a) => {
                let h = args[a as usize];
                ranges.push((h, 56));
                if let (Some(name), Some(namelen)) = (read_u64(mem, h), read_u32(mem, h + 8)) {
                    ranges.push((name, namelen as u64));
                }
                msghdr_iovecs(mem, h, uret, &mut ranges);
                if let (Some(ctl), Some(ctllen)) = (read_u64(mem, h + 32), read_u64(mem, h + 40)) {
                    ranges.push((ctl, ctllen));
                }
            }
            Out::Special(special) => ranges.extend(special(args)?),
        }
    }
    ranges.retain(|&(addr, len)| addr != 0 && len != 0);
    for &(_, len) in &ranges {
        if len > MAX_RANGE {
            return Err(UnknownEffect(format!("{} claims to write {len} bytes", desc.name())));
        }
    }
    Ok(ranges)
}

/// Read the ranges from the tracee (unreadable tails are dropped).
pub fn capture(mem: &dyn Memory, ranges: &[(u64, u64)]) -> Vec<MemWrite> {
    let mut out = Vec::with_capacity(ranges.len());
    for &(addr, len) in ranges {
        let mut bytes = vec![0u8; len as usize];
        let n = mem.read_memory(addr, &mut bytes).unwrap_or(0);
        bytes.truncate(n);
        if !bytes.is_empty() {
            out.push(MemWrite { addr, bytes });
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::syscalls::Sysno;

    /// Program memory for tests: `bytes` at address `base`, nothing elsewhere.
    pub(crate) struct Fake(pub(crate) Vec<u8>, pub(crate) u64);
    impl Memory for Fake {
        fn read_memory(&self, addr: u64, buf: &mut [u8]) -> std::io::Result<usize> {
            let off = addr.checked_sub(self.1).unwrap_or(u64::MAX) as usize;
            if off >= self.0.len() {
                return Ok(0);
            }
            let n = buf.len().min(self.0.len() - off);
            buf[..n].copy_from_slice(&self.0[off..off + n]);
            Ok(n)
        }
    }

    #[test]
    fn read_writes_the_result_count() {
        let m = Fake(vec![], 0);
        let r = written_ranges(Sysno::read as u64, &[3, 0x1000, 4096, 0, 0, 0], 10, &m).unwrap();
        assert_eq!(r, vec![(0x1000, 10)]);
        assert!(written_ranges(Sysno::read as u64, &[3, 0x1000, 4096, 0, 0, 0], -9, &m).unwrap().is_empty());
    }

    #[test]
    fn readv_scatters_over_iovecs() {
        let mut img = Vec::new();
        for (b, l) in [(0x5000u64, 4u64), (0x6000, 100)] {
            img.extend_from_slice(&b.to_le_bytes());
            img.extend_from_slice(&l.to_le_bytes());
        }
        let m = Fake(img, 0x100);
        let r = written_ranges(Sysno::readv as u64, &[3, 0x100, 2, 0, 0, 0], 10, &m).unwrap();
        assert_eq!(r, vec![(0x5000, 4), (0x6000, 6)]);
    }

    #[test]
    fn interrupted_polls_and_sleeps_still_write() {
        let m = Fake(vec![], 0);
        // poll interrupted (-ERESTART_RESTARTBLOCK): every revents was written.
        assert_eq!(
            written_ranges(Sysno::poll as u64, &[0x800, 2, u64::MAX, 0, 0, 0], -516, &m).unwrap(),
            vec![(0x800, 16)]
        );
        // clock_nanosleep interrupted: the time left.
        assert_eq!(
            written_ranges(Sysno::clock_nanosleep as u64, &[1, 0, 0x900, 0xa00, 0, 0], -4, &m).unwrap(),
            vec![(0xa00, 16)]
        );
        // ppoll interrupted (-ERESTARTNOHAND): revents and the timeout left.
        assert_eq!(
            written_ranges(Sysno::ppoll as u64, &[0x800, 1, 0xb00, 0, 8, 0], -514, &m).unwrap(),
            vec![(0x800, 8), (0xb00, 16)]
        );
        // Other failures write nothing.
        assert!(written_ranges(Sysno::poll as u64, &[0x800, 2, u64::MAX, 0, 0, 0], -14, &m).unwrap().is_empty());
    }

    #[test]
    fn ioctl_sizes_come_from_the_request() {
        let m = Fake(vec![], 0);
        assert_eq!(written_ranges(Sysno::ioctl as u64, &[1, 0x5413, 0x700, 0, 0, 0], 0, &m).unwrap(), vec![(0x700, 8)]);
        // _IOR('T', 0x30, u32) = TIOCGPTN
        assert_eq!(
            written_ranges(Sysno::ioctl as u64, &[1, 0x80045430, 0x700, 0, 0, 0], 0, &m).unwrap(),
            vec![(0x700, 4)]
        );
        assert!(written_ranges(Sysno::ioctl as u64, &[1, 0x1234, 0x700, 0, 0, 0], 0, &m).is_err());
    }
}
