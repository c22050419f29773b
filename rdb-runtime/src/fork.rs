//! Copies of a stopped replayed process, made by the process itself: its stopped thread is
//! made to run `clone(CLONE_PARENT)` (a fork that is the process's sibling and sends no exit
//! signal), then put back exactly as it was. The copy (traced by
//! this thread, as a fork of a traced process is) has one thread, with the registers the
//! original thread has, stopped at its first stop. Diversions and checkpoints start here.
//!
//! The thread may be stopped at a syscall entry (the syscall not run yet): then the fork takes
//! the syscall's place and the thread runs its `syscall` instruction again, back to the same
//! entry stop. Anywhere else (a signal or a syscall-exit stop), the fork runs from two code
//! bytes borrowed at the pc, put back in both processes.

use std::io;

use rdb_tracee::ptrace::{self, SyscallStop, Wait};
use rdb_tracee::{mem, Pid};

use crate::syscalls::Sysno;

/// Where the thread to fork from is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoppedAt {
    /// A syscall-entry stop (its syscall not run yet).
    SyscallEntry,
    /// A signal-delivery, syscall-exit or event stop.
    Elsewhere,
}

/// Resume `pid` to its next syscall stop; signals that arrive meanwhile are collected.
fn next_syscall_stop(pid: Pid, set_aside: &mut Vec<i32>, child: &mut Option<Pid>) -> io::Result<SyscallStop> {
    loop {
        ptrace::resume_syscall(pid, 0)?;
        match ptrace::wait_pid(pid)? {
            Wait::Stopped { sig, .. } if sig == libc::SIGTRAP | 0x80 => return Ok(ptrace::syscall_info(pid)?.stop),
            Wait::Stopped { sig: libc::SIGTRAP, event }
                if event == libc::PTRACE_EVENT_FORK || event == libc::PTRACE_EVENT_CLONE =>
            {
                *child = Some(ptrace::new_child(pid)?);
            }
            Wait::Stopped { sig, event: 0 } if sig != libc::SIGTRAP && set_aside.len() < 64 => set_aside.push(sig),
            other => return Err(io::Error::other(format!("unexpected stop while forking a copy: {other:?}"))),
        }
    }
}

/// Wait for a new copy's first stop.
fn first_stop(child: Pid) -> io::Result<()> {
    match ptrace::wait_pid(child)? {
        Wait::Stopped { .. } => Ok(()),
        other => Err(io::Error::other(format!("the copy did not start: {other:?}"))),
    }
}

/// Fork the process of thread `pid`, stopped `at`; returns the copy (see the module docs).
pub(crate) fn fork_stopped(pid: Pid, at: StoppedAt) -> io::Result<Pid> {
    let saved = ptrace::get_regs(pid)?;
    let mut set_aside = Vec::new();
    let mut child = None;
    // A sibling, not a child, of the process, and no exit signal: the program never sees it
    // (no SIGCHLD, no child to wait for); its parent reaps it.
    let clone = |r: &mut ptrace::Regs| {
        r.rdi = libc::CLONE_PARENT as u64;
        (r.rsi, r.rdx, r.r10, r.r8) = (0, 0, 0, 0);
    };
    let result = match at {
        StoppedAt::SyscallEntry => {
            let mut r = saved;
            r.orig_rax = Sysno::clone as u64;
            clone(&mut r);
            ptrace::set_regs(pid, &r)?;
            let exit = next_syscall_stop(pid, &mut set_aside, &mut child)?;
            // Back to the same entry stop: run the `syscall` instruction again.
            let mut back = saved;
            back.rip -= 2;
            back.rax = saved.orig_rax;
            ptrace::set_regs(pid, &back)?;
            let again = next_syscall_stop(pid, &mut set_aside, &mut child)?;
            match again {
                SyscallStop::Entry { nr, .. } if nr == saved.orig_rax => {}
                other => {
                    return Err(io::Error::other(format!("the thread did not come back to its syscall: {other:?}")))
                }
            }
            exit
        }
        StoppedAt::Elsewhere => {
            let mut orig = [0u8; 2];
            mem::read_exact(pid, saved.rip, &mut orig)?;
            mem::write(pid, saved.rip, &[0x0f, 0x05])?;
            let mut r = saved;
            r.rax = Sysno::clone as u64;
            clone(&mut r);
            ptrace::set_regs(pid, &r)?;
            let entry = next_syscall_stop(pid, &mut set_aside, &mut child);
            let exit = entry.and_then(|_| next_syscall_stop(pid, &mut set_aside, &mut child));
            mem::write(pid, saved.rip, &orig)?;
            ptrace::set_regs(pid, &saved)?;
            if let Some(c) = child {
                first_stop(c)?;
                mem::write(c, saved.rip, &orig)?;
            }
            exit?
        }
    };
    if !set_aside.is_empty() {
        let group = rdb_tracee::procfs::thread_group(pid)?;
        for sig in set_aside {
            ptrace::tgkill(group, pid, sig)?;
        }
    }
    let child = match (result, child) {
        (SyscallStop::Exit { ret }, Some(c)) if ret == c.0 as i64 => c,
        (other, c) => {
            if let Some(c) = c {
                let _ = ptrace::kill(c, libc::SIGKILL);
            }
            return Err(io::Error::other(format!("fork in the stopped process failed: {other:?}")));
        }
    };
    if at == StoppedAt::SyscallEntry {
        first_stop(child)?;
    }
    ptrace::set_regs(child, &saved)?;
    Ok(child)
}

/// Kill a copy and wait until it is gone.
pub(crate) fn discard(copy: Pid) {
    let _ = ptrace::kill(copy, libc::SIGKILL);
    while let Ok(Wait::Stopped { .. }) = ptrace::wait_pid(copy) {}
}

/// Make stopped thread `pid` (not at a syscall entry) create another thread of its process
/// (`clone` with the flags pthreads use, no stack: the caller sets the new thread's registers
/// before it runs). Returns the new thread, stopped at its first stop; `pid` is put back as it
/// was.
pub(crate) fn clone_thread(pid: Pid) -> io::Result<Pid> {
    let saved = ptrace::get_regs(pid)?;
    let mut orig = [0u8; 2];
    mem::read_exact(pid, saved.rip, &mut orig)?;
    mem::write(pid, saved.rip, &[0x0f, 0x05])?;
    let mut r = saved;
    r.rax = Sysno::clone as u64;
    r.rdi = (libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM) as u64;
    (r.rsi, r.rdx, r.r10, r.r8) = (0, 0, 0, 0);
    ptrace::set_regs(pid, &r)?;
    let mut set_aside = Vec::new();
    let mut child = None;
    let result = next_syscall_stop(pid, &mut set_aside, &mut child)
        .and_then(|_| next_syscall_stop(pid, &mut set_aside, &mut child));
    mem::write(pid, saved.rip, &orig)?;
    ptrace::set_regs(pid, &saved)?;
    if !set_aside.is_empty() {
        let group = rdb_tracee::procfs::thread_group(pid)?;
        for sig in set_aside {
            ptrace::tgkill(group, pid, sig)?;
        }
    }
    match (result?, child) {
        (SyscallStop::Exit { ret }, Some(c)) if ret == c.0 as i64 => {
            first_stop(c)?;
            Ok(c)
        }
        (other, _) => Err(io::Error::other(format!("creating a thread failed: {other:?}"))),
    }
}
