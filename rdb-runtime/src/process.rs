//! Operations on one stopped tracee shared by recorder and replayer: syscall injection, the
//! initial stack after exec, `rdtsc` emulation, file hashing. (The system interface itself is
//! `rdb_tracee`.)

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rdb_tracee::ptrace::{self, Regs, SyscallStop, Wait};
use rdb_tracee::{mem, procfs, Pid};

use crate::syscalls::{self, Sysno};

/// `prctl(PR_SET_TSC)` argument that makes `rdtsc` fault.
const PR_TSC_SIGSEGV: u64 = 2;

/// Make the tracee run one syscall of our choosing, then restore its registers and the two
/// code bytes we borrowed. The tracee must be in a stop where its registers may be changed
/// and that is not a syscall-entry stop (a syscall-exit stop or a signal stop).
pub fn inject_syscall(pid: Pid, nr: u64, args: [u64; 6]) -> io::Result<i64> {
    let saved = ptrace::get_regs(pid)?;
    let pc = saved.rip;
    let mut orig = [0u8; 2];
    if mem::read(pid, pc, &mut orig)? != 2 {
        return Err(io::Error::other("cannot read code at the stop address"));
    }
    mem::write(pid, pc, &[0x0f, 0x05])?;
    let mut r = saved;
    r.rax = nr;
    r.orig_rax = u64::MAX;
    r.rdi = args[0];
    r.rsi = args[1];
    r.rdx = args[2];
    r.r10 = args[3];
    r.r8 = args[4];
    r.r9 = args[5];
    ptrace::set_regs(pid, &r)?;
    let mut result = None;
    // Signals that arrive meanwhile (Ctrl-C to the process group...) are set aside and sent
    // again afterwards, so the recorder sees them as ordinary asynchronous signals.
    let mut set_aside = Vec::new();
    // Entry stop, then exit stop.
    let mut syscall_stops = 0;
    while syscall_stops < 2 {
        ptrace::resume_syscall(pid, 0)?;
        match ptrace::wait_pid(pid)? {
            Wait::Stopped { sig, .. } if sig == (libc::SIGTRAP | 0x80) => {
                syscall_stops += 1;
                if let SyscallStop::Exit { ret } = ptrace::syscall_info(pid)?.stop {
                    result = Some(ret);
                }
            }
            Wait::Stopped { sig, event: 0 } if sig != libc::SIGTRAP && set_aside.len() < 64 => set_aside.push(sig),
            other => return Err(io::Error::other(format!("unexpected stop while injecting a syscall: {other:?}"))),
        }
    }
    mem::write(pid, pc, &orig)?;
    ptrace::set_regs(pid, &saved)?;
    for sig in set_aside {
        ptrace::tgkill(pid, pid, sig)?;
    }
    result.ok_or_else(|| io::Error::other("injected syscall did not complete"))
}

/// Turn on `rdtsc` trapping in the tracee (it does not survive `execve` reliably, so it is
/// re-armed after every exec).
pub fn trap_rdtsc(pid: Pid) -> io::Result<()> {
    let r = inject_syscall(pid, Sysno::prctl as u64, [syscalls::PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0, 0])?;
    if r != 0 {
        return Err(io::Error::other(format!("prctl(PR_SET_TSC) failed in the tracee: {r}")));
    }
    Ok(())
}

/// Read the initial stack of a just-exec'ed tracee: from the stack pointer to the top.
pub fn read_initial_stack(pid: Pid, sp: u64) -> io::Result<Vec<u8>> {
    let top = procfs::stack_top(pid)?;
    if sp >= top || top - sp > (8 << 20) {
        return Err(io::Error::other(format!("stack pointer {sp:#x} is outside the stack (top {top:#x})")));
    }
    let mut buf = vec![0u8; (top - sp) as usize];
    let n = mem::read(pid, sp, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// The load bias of an executable from its initial stack (`AT_ENTRY` minus the ELF entry);
/// 0 when either cannot be read.
pub fn load_bias(exe: &Path, stack: &[u8]) -> u64 {
    procfs::stack_auxv_get(stack, procfs::AT_ENTRY).and_then(|entry| procfs::load_bias(exe, entry).ok()).unwrap_or(0)
}

/// Length of a TSC-reading instruction at the stop address: `rdtsc` (2) or `rdtscp` (3).
pub fn tsc_instruction(pid: Pid, pc: u64) -> Option<(usize, bool)> {
    let mut b = [0u8; 3];
    let n = mem::read(pid, pc, &mut b).ok()?;
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
