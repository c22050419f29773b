//! Operations on one stopped tracee shared by recorder and replayer: memory access, syscall
//! injection, the initial stack and auxv after exec, `rdtsc` emulation, file hashing.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::effects::TargetMemory;
use crate::sys::{self, Regs, SyscallStop, Wait};

/// A tracee's memory, by real pid.
#[derive(Debug, Clone, Copy)]
pub struct Mem(pub i32);

impl TargetMemory for Mem {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        sys::read_mem(self.0, addr, buf)
    }
}

/// Read a NUL-terminated string (at most 4096 bytes).
pub fn read_cstring(pid: i32, addr: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    while out.len() < 4096 {
        // Stay within the page so a string near the end of a mapping still reads.
        let room = 4096 - ((addr as usize + out.len()) % 4096);
        let want = room.min(chunk.len());
        let n = sys::read_mem(pid, addr + out.len() as u64, &mut chunk[..want])?;
        if n == 0 {
            break;
        }
        if let Some(z) = chunk[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..z]);
            return Ok(out);
        }
        out.extend_from_slice(&chunk[..n]);
    }
    Ok(out)
}

/// `prctl` option that makes `rdtsc` fault (`PR_SET_TSC`, `PR_TSC_SIGSEGV`).
pub const PR_SET_TSC: u64 = 26;
pub const PR_TSC_SIGSEGV: u64 = 2;

/// Make the tracee run one syscall of our choosing, then restore its registers and the two
/// code bytes we borrowed. The tracee must be in a stop where its registers may be changed
/// and that is not a syscall-entry stop (a syscall-exit stop or a signal stop).
pub fn inject_syscall(pid: i32, nr: u64, args: [u64; 6]) -> io::Result<i64> {
    let saved = sys::get_regs(pid)?;
    let pc = saved.rip;
    let mut orig = [0u8; 2];
    if sys::read_mem(pid, pc, &mut orig)? != 2 {
        return Err(io::Error::other("cannot read code at the stop address"));
    }
    sys::write_mem(pid, pc, &[0x0f, 0x05])?;
    let mut r = saved;
    r.rax = nr;
    r.orig_rax = u64::MAX;
    r.rdi = args[0];
    r.rsi = args[1];
    r.rdx = args[2];
    r.r10 = args[3];
    r.r8 = args[4];
    r.r9 = args[5];
    sys::set_regs(pid, &r)?;
    let mut result = None;
    // Signals that arrive meanwhile (Ctrl-C to the process group...) are set aside and sent
    // again afterwards, so the recorder sees them as ordinary asynchronous signals.
    let mut set_aside = Vec::new();
    // Entry stop, then exit stop.
    let mut syscall_stops = 0;
    while syscall_stops < 2 {
        sys::resume_syscall(pid, 0)?;
        match sys::wait_pid(pid)? {
            Wait::Stopped { sig, .. } if sig == (libc::SIGTRAP | 0x80) => {
                syscall_stops += 1;
                if let SyscallStop::Exit { ret } = sys::syscall_info(pid)?.stop {
                    result = Some(ret);
                }
            }
            Wait::Stopped { sig, event: 0 } if sig != libc::SIGTRAP && set_aside.len() < 64 => set_aside.push(sig),
            other => return Err(io::Error::other(format!("unexpected stop while injecting a syscall: {other:?}"))),
        }
    }
    sys::write_mem(pid, pc, &orig)?;
    sys::set_regs(pid, &saved)?;
    for sig in set_aside {
        sys::tgkill(pid, pid, sig)?;
    }
    result.ok_or_else(|| io::Error::other("injected syscall did not complete"))
}

/// Turn on `rdtsc` trapping in the tracee (it does not survive `execve` reliably, so it is
/// re-armed after every exec).
pub fn trap_rdtsc(pid: i32) -> io::Result<()> {
    let r = inject_syscall(pid, 157, [PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0, 0])?;
    if r != 0 {
        return Err(io::Error::other(format!("prctl(PR_SET_TSC) failed in the tracee: {r}")));
    }
    Ok(())
}

/// End address of the `[stack]` mapping.
pub fn stack_top(pid: i32) -> io::Result<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    for line in maps.lines() {
        if line.ends_with("[stack]") {
            let range = line.split_whitespace().next().unwrap_or("");
            let (lo, hi) = range.split_once('-').unwrap_or(("", ""));
            let _ = lo;
            return u64::from_str_radix(hi, 16).map_err(|_| io::Error::other("bad /proc/PID/maps"));
        }
    }
    Err(io::Error::other("no [stack] mapping"))
}

/// Start address of the mapping that contains `addr`, if any.
pub fn mapping_start(pid: i32, addr: u64) -> io::Result<Option<u64>> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    for line in maps.lines() {
        let range = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = range.split_once('-') {
            let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else { continue };
            if lo <= addr && addr < hi {
                return Ok(Some(lo));
            }
        }
    }
    Ok(None)
}

const AT_NULL: u64 = 0;
const AT_IGNORE: u64 = 1;
const AT_ENTRY: u64 = 9;
const AT_SYSINFO_EHDR: u64 = 33;

/// Offset (in `stack`, which starts at the initial stack pointer) of the auxv array.
fn auxv_offset(stack: &[u8]) -> Option<usize> {
    let word = |i: usize| -> Option<u64> {
        stack.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let argc = usize::try_from(word(0)?).ok().filter(|&a| a < stack.len())?;
    let mut i = 1 + argc + 1; // argv pointers and their NULL
    if word(i - 1)? != 0 {
        return None;
    }
    while word(i)? != 0 {
        i += 1; // envp
    }
    Some((i + 1) * 8)
}

/// The value of an auxv entry in an initial stack image.
pub fn auxv_get(stack: &[u8], key: u64) -> Option<u64> {
    let mut off = auxv_offset(stack)?;
    loop {
        let k = u64::from_le_bytes(stack.get(off..off + 8)?.try_into().ok()?);
        let v = u64::from_le_bytes(stack.get(off + 8..off + 16)?.try_into().ok()?);
        if k == AT_NULL {
            return None;
        }
        if k == key {
            return Some(v);
        }
        off += 16;
    }
}

/// Hide the vDSO from the program: `AT_SYSINFO_EHDR` becomes `AT_IGNORE`, so libc makes real
/// syscalls for time and the recorder sees them. Returns the patched offset, if any.
pub fn hide_vdso(stack: &mut [u8]) -> Option<usize> {
    let mut off = auxv_offset(stack)?;
    loop {
        let k = u64::from_le_bytes(stack.get(off..off + 8)?.try_into().ok()?);
        if k == AT_NULL {
            return None;
        }
        if k == AT_SYSINFO_EHDR {
            stack[off..off + 8].copy_from_slice(&AT_IGNORE.to_le_bytes());
            return Some(off);
        }
        off += 16;
    }
}

/// Read the initial stack of a just-exec'ed tracee: from the stack pointer to the top.
pub fn read_initial_stack(pid: i32, sp: u64) -> io::Result<Vec<u8>> {
    let top = stack_top(pid)?;
    if sp >= top || top - sp > (8 << 20) {
        return Err(io::Error::other(format!("stack pointer {sp:#x} is outside the stack (top {top:#x})")));
    }
    let mut buf = vec![0u8; (top - sp) as usize];
    let n = sys::read_mem(pid, sp, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// The load bias of an executable from its initial stack (`AT_ENTRY` minus the ELF entry).
pub fn load_bias(exe: &Path, stack: &[u8]) -> u64 {
    let Some(at_entry) = auxv_get(stack, AT_ENTRY) else { return 0 };
    let Ok(data) = std::fs::read(exe) else { return 0 };
    if data.len() < 32 || &data[..4] != b"\x7fELF" {
        return 0;
    }
    let e_type = u16::from_le_bytes([data[16], data[17]]);
    let e_entry = u64::from_le_bytes(data[24..32].try_into().expect("8 bytes"));
    if e_type == 3 {
        at_entry.wrapping_sub(e_entry)
    } else {
        0
    }
}

/// Length of a TSC-reading instruction at the stop address: `rdtsc` (2) or `rdtscp` (3).
pub fn tsc_instruction(pid: i32, pc: u64) -> Option<(usize, bool)> {
    let mut b = [0u8; 3];
    let n = sys::read_mem(pid, pc, &mut b).ok()?;
    if n >= 2 && b[0] == 0x0f && b[1] == 0x31 {
        Some((2, false))
    } else if n == 3 && b == [0x0f, 0x01, 0xf9] {
        Some((3, true))
    } else {
        None
    }
}

/// Set the registers an emulated `rdtsc`/`rdtscp` produces and step past it.
pub fn finish_tsc(regs: &mut Regs, len: usize, rax: u64, rdx: u64, rcx: Option<u64>) {
    regs.rax = rax;
    regs.rdx = rdx;
    if let Some(c) = rcx {
        regs.rcx = c;
    }
    regs.rip += len as u64;
}

/// blake3 of files, cached by identity (device, inode, size, mtime).
#[derive(Default)]
pub struct FileHashes {
    cache: HashMap<(u64, u64, u64, i64, i64), [u8; 32]>,
}

impl FileHashes {
    /// Hash the file at `path` (following symlinks).
    pub fn hash(&mut self, path: &Path) -> io::Result<([u8; 32], u64)> {
        let md = std::fs::metadata(path)?;
        let key = (md.dev(), md.ino(), md.size(), md.mtime(), md.mtime_nsec());
        if let Some(h) = self.cache.get(&key) {
            return Ok((*h, md.size()));
        }
        let mut hasher = blake3::Hasher::new();
        let mut f = std::fs::File::open(path)?;
        std::io::copy(&mut f, &mut hasher)?;
        let h: [u8; 32] = *hasher.finalize().as_bytes();
        self.cache.insert(key, h);
        Ok((h, md.size()))
    }
}

/// The file an fd of a tracee refers to.
pub fn fd_path(pid: i32, fd: u64) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack_image() -> Vec<u8> {
        let words: [u64; 12] = [
            1,
            0x7fff_0000,
            0,
            0x7fff_0010,
            0,
            AT_SYSINFO_EHDR,
            0x7fff_f000,
            AT_ENTRY,
            0x5555_5555_6040,
            AT_NULL,
            0,
            0,
        ];
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn auxv_is_found_and_vdso_hidden() {
        let mut s = stack_image();
        assert_eq!(auxv_get(&s, AT_ENTRY), Some(0x5555_5555_6040));
        assert_eq!(auxv_get(&s, AT_SYSINFO_EHDR), Some(0x7fff_f000));
        assert!(hide_vdso(&mut s).is_some());
        assert_eq!(auxv_get(&s, AT_SYSINFO_EHDR), None);
        assert_eq!(auxv_get(&s, AT_ENTRY), Some(0x5555_5555_6040));
    }

    #[test]
    fn malformed_stack_images_give_none() {
        assert_eq!(auxv_get(&[], AT_ENTRY), None);
        assert_eq!(auxv_get(&[0xff; 16], AT_ENTRY), None);
    }
}
