//! What the debug host needs from a stopped program: registers, memory and
//! mappings. The replayer implements [`TraceeView`] for its stopped tracee;
//! the tests implement it for a live process stopped under ptrace.

use crate::protocol::RangeSpec;
use std::io;

/// A stopped program, seen read-only.
///
/// The host never writes through this view and never resumes the program.
pub trait TraceeView {
    /// Thread id of the stopped thread (ptrace requests such as reading
    /// `xmm` registers go to it).
    fn pid(&self) -> i32;
    /// Process id (thread-group id) of the stopped program: the address
    /// space the host mirrors, read directly with `process_vm_readv` when
    /// the kernel allows it. Defaults to [`TraceeView::pid`].
    fn process_id(&self) -> i32 {
        self.pid()
    }
    /// The general-purpose registers at the stop.
    fn regs(&self) -> &libc::user_regs_struct;
    /// Load bias of the main binary (0 for a non-PIE executable).
    fn load_bias(&self) -> u64;
    /// Reads program memory at `addr` into `buf` (all of it, or an error).
    fn read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()>;
    /// The 16 bytes of `xmm{n}` at the stop. The default reads them with
    /// `PTRACE_GETFPREGS`, which works when the caller is the tracer.
    fn xmm(&self, n: u16) -> io::Result<[u8; 16]> {
        read_xmm_ptrace(self.pid(), n)
    }
    /// The program's mappings. The default parses `/proc/PID/maps`.
    fn mappings(&self) -> io::Result<Vec<Mapping>> {
        let text = std::fs::read_to_string(format!("/proc/{}/maps", self.process_id()))?;
        Ok(parse_maps(&text))
    }
}

/// A [`TraceeView`] of a live thread stopped under ptrace by the caller
/// (registers read with `PTRACE_GETREGS` when made, memory read with
/// `process_vm_readv`).
#[derive(Debug, Clone)]
pub struct StoppedProcess {
    tid: i32,
    tgid: i32,
    regs: libc::user_regs_struct,
    load_bias: u64,
}

impl StoppedProcess {
    /// A view of thread `tid` (of process `tgid`), which the calling thread
    /// traces and which is in a ptrace stop. The load bias is the
    /// difference between the program's entry point in memory (`AT_ENTRY`)
    /// and in its ELF header (`/proc/PID/exe`).
    pub fn new(tid: i32, tgid: i32) -> io::Result<StoppedProcess> {
        // SAFETY: user_regs_struct is plain data, filled by the kernel.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        // SAFETY: PTRACE_GETREGS writes one user_regs_struct at `&mut regs`.
        let r = unsafe {
            libc::ptrace(libc::PTRACE_GETREGS, tid, std::ptr::null_mut::<libc::c_void>(), &mut regs as *mut _)
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot read the registers of thread {tid} (is it ptrace-stopped by this thread?): {e}"),
            ));
        }
        let load_bias = load_bias(tgid)?;
        Ok(StoppedProcess { tid, tgid, regs, load_bias })
    }
}

/// `AT_ENTRY` from `/proc/PID/auxv` minus the ELF entry point of `/proc/PID/exe`.
fn load_bias(pid: i32) -> io::Result<u64> {
    use object::Object;
    let auxv = std::fs::read(format!("/proc/{pid}/auxv"))?;
    let entry = auxv
        .chunks_exact(16)
        .map(|c| (u64::from_le_bytes(c[..8].try_into().unwrap()), u64::from_le_bytes(c[8..].try_into().unwrap())))
        .find(|(key, _)| *key == libc::AT_ENTRY)
        .map(|(_, value)| value)
        .ok_or_else(|| io::Error::other(format!("process {pid} has no AT_ENTRY in its auxiliary vector")))?;
    let exe = std::fs::read(format!("/proc/{pid}/exe"))?;
    let file = object::File::parse(&*exe)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/exe is not an ELF file: {e}")))?;
    Ok(entry.wrapping_sub(file.entry()))
}

impl TraceeView for StoppedProcess {
    fn pid(&self) -> i32 {
        self.tid
    }
    fn process_id(&self) -> i32 {
        self.tgid
    }
    fn regs(&self) -> &libc::user_regs_struct {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.load_bias
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` is our buffer; the kernel checks the remote range.
        let n = unsafe { libc::process_vm_readv(self.tgid, &local, 1, &remote, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("only {n} of {} bytes readable at {addr:#x}", buf.len()),
            ));
        }
        Ok(())
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub readable: bool,
    pub writable: bool,
    pub executable: bool,
    /// File path or pseudo name (`[heap]`, `[stack]`), empty for anonymous memory.
    pub name: String,
}

impl Mapping {
    /// Whether the host mirrors this mapping. Kernel pseudo mappings that
    /// are either unreadable (`[vvar]`) or identical in every process at a
    /// fixed address (`[vsyscall]`) are left out.
    pub fn mirrored(&self) -> bool {
        !(self.name.starts_with("[vvar") || self.name == "[vsyscall]")
    }

    pub(crate) fn spec(&self) -> RangeSpec {
        let mut prot = 0;
        if self.readable {
            prot |= libc::PROT_READ as u32;
            if self.executable {
                prot |= libc::PROT_EXEC as u32;
            }
        }
        RangeSpec { start: self.start, end: self.end, prot }
    }
}

/// Parses the text of `/proc/PID/maps`; malformed lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let perms = fields.next()?.as_bytes();
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            if perms.len() < 3 || end <= start {
                return None;
            }
            // The path is everything after the inode field, spaces included.
            let name = skip_fields(line, 5).trim().to_string();
            Some(Mapping {
                start,
                end,
                readable: perms[0] == b'r',
                writable: perms[1] == b'w',
                executable: perms[2] == b'x',
                name,
            })
        })
        .collect()
}

/// `line` without its first `n` whitespace-separated fields.
fn skip_fields(line: &str, n: usize) -> &str {
    let mut rest = line;
    for _ in 0..n {
        rest = rest.trim_start();
        match rest.find(char::is_whitespace) {
            Some(i) => rest = &rest[i..],
            None => return "",
        }
    }
    rest
}

fn read_xmm_ptrace(pid: i32, n: u16) -> io::Result<[u8; 16]> {
    if n > 15 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no register xmm{n} on x86-64")));
    }
    // SAFETY: user_fpregs_struct is plain data; PTRACE_GETFPREGS fills it
    // or fails without touching it.
    let mut fp: libc::user_fpregs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most size_of::<user_fpregs_struct>() bytes at `&mut fp`.
    let r =
        unsafe { libc::ptrace(libc::PTRACE_GETFPREGS, pid, std::ptr::null_mut::<libc::c_void>(), &mut fp as *mut _) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let words = &fp.xmm_space[n as usize * 4..n as usize * 4 + 4];
    let mut out = [0u8; 16];
    for (i, w) in words.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_maps_lines() {
        let text = "\
555555554000-555555555000 r--p 00000000 fe:01 1234    /tmp/a b/prog
555555559000-55555557a000 rw-p 00000000 00:00 0       [heap]
7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0       [vvar]
7ffff7fc5000-7ffff7fc7000 r-xp 00000000 00:00 0       [vdso]
7ffff7fc7000-7ffff7fc8000 ---p 00000000 00:00 0
garbage
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 6);
        assert_eq!(maps[0].name, "/tmp/a b/prog");
        assert_eq!(maps[0].start, 0x555555554000);
        assert!(maps[1].writable && maps[1].readable && !maps[1].executable);
        assert!(!maps[2].mirrored());
        assert!(maps[3].mirrored() && maps[3].executable);
        assert_eq!(maps[4].name, "");
        assert_eq!(maps[4].spec().prot, 0);
        assert!(!maps[5].mirrored());
        assert_eq!(maps[3].spec().prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
    }
}
