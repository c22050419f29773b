//! Memory of another process: `process_vm_readv`/`writev`, with `PTRACE_POKEDATA` and
//! `/proc/PID/mem` for pages the tracee cannot write itself (code).

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::ptrace::check;
use crate::Pid;

/// Read memory of `pid` with `process_vm_readv` (one copy, no page-permission checks beyond
/// readability). Returns the number of bytes read, which may be short at an unmapped page.
/// Needs ptrace-attach rights on `pid` (being its tracer, or root).
pub fn read(pid: Pid, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec { iov_base: buf.as_mut_ptr() as *mut c_void, iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut c_void, iov_len: buf.len() };
    // SAFETY: `local` describes our own writable buffer; `remote` is only interpreted in the
    // other process's address space by the kernel.
    let n = unsafe { libc::process_vm_readv(pid.0, &local, 1, &remote, 1, 0) };
    if n == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Read exactly `buf.len()` bytes, or fail naming how many were readable.
pub fn read_exact(pid: Pid, addr: u64, buf: &mut [u8]) -> io::Result<()> {
    let n = read(pid, addr, buf)?;
    if n != buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("only {n} of {} bytes readable at {addr:#x} in pid {pid}", buf.len()),
        ));
    }
    Ok(())
}

/// Write memory of a stopped tracee. Tries `process_vm_writev` first (fast, needs writable
/// pages) and falls back to ptrace, which as the tracer may also write read-only pages
/// (breakpoints, file contents of read-only mappings).
pub fn write(pid: Pid, addr: u64, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec { iov_base: data.as_ptr() as *mut c_void, iov_len: data.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut c_void, iov_len: data.len() };
    // SAFETY: `local` describes our own readable buffer; the kernel writes only into the tracee.
    let n = unsafe { libc::process_vm_writev(pid.0, &local, 1, &remote, 1, 0) };
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
fn poke_bytes(pid: Pid, addr: u64, data: &[u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < data.len() {
        let at = addr + done as u64;
        let word_addr = at & !7;
        let offset = (at - word_addr) as usize;
        let take = (8 - offset).min(data.len() - done);
        // SAFETY: clears errno so that a -1 word can be told from an error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: PEEKDATA reads one word of the stopped tracee; no pointers of ours are passed.
        let word = unsafe { libc::ptrace(libc::PTRACE_PEEKDATA, pid.0, word_addr as usize as *mut c_void, 0usize) };
        let err = io::Error::last_os_error();
        if word == -1 && err.raw_os_error().unwrap_or(0) != 0 {
            return Err(err);
        }
        let mut bytes = (word as u64).to_le_bytes();
        bytes[offset..offset + take].copy_from_slice(&data[done..done + take]);
        let new = u64::from_le_bytes(bytes);
        // SAFETY: POKEDATA writes one word of the stopped tracee; the data is passed by value.
        check(unsafe {
            libc::ptrace(libc::PTRACE_POKEDATA, pid.0, word_addr as usize as *mut c_void, new as usize as *mut c_void)
        })?;
        done += take;
    }
    Ok(())
}

/// Read a NUL-terminated string (at most 4096 bytes).
pub fn read_cstring(pid: Pid, addr: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 256];
    while out.len() < 4096 {
        // Stay within the page so a string near the end of a mapping still reads.
        let room = 4096 - ((addr as usize + out.len()) % 4096);
        let want = room.min(chunk.len());
        let n = read(pid, addr + out.len() as u64, &mut chunk[..want])?;
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
