//! What `/proc` and the auxiliary vector say about another process: its mappings, its
//! executable, its files, and the load bias of its main binary. The one parser of each.

use std::io;
use std::path::{Path, PathBuf};

use crate::Pid;

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
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
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

/// The writable shared mappings (`rw-s`) of process `pid`: start, end, name. A fork of the
/// process shares them with it (writes in the copy are seen by the original).
pub fn shared_writable_mappings(pid: Pid) -> io::Result<Vec<(u64, u64, String)>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let perms = line.split_whitespace().nth(1)?.as_bytes();
            (perms.len() >= 4 && perms[1] == b'w' && perms[3] == b's').then_some(line)
        })
        .filter_map(|line| parse_maps(line).into_iter().next())
        .map(|m| (m.start, m.end, m.name))
        .collect())
}

/// The memory process `pid` holds of its own, in bytes (`Private_Clean` + `Private_Dirty` of
/// `/proc/PID/smaps_rollup`): for a fork, the pages written since it was made.
pub fn private_memory(pid: Pid) -> io::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum::<u64>()
        * 1024)
}

/// The blocked-signal mask of thread `tid` (`SigBlk:` of `/proc/TID/status`).
pub fn signal_mask(tid: Pid) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .ok_or_else(|| io::Error::other(format!("/proc/{tid}/status has no SigBlk")))
}

/// Whether thread `tid` is being killed or is gone: `SIGKILL` pending for it (what
/// `exit_group`, an `exec` or a fatal signal of another thread sends each thread), already
/// exiting (`PF_EXITING` in `/proc/TID/stat`), a zombie, or no longer there. Such a thread
/// leaves any ptrace stop, and ptrace requests on it fail with `ESRCH`.
pub fn dying(tid: Pid) -> bool {
    const PF_EXITING: u64 = 0x4;
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    let (Ok(stat), Ok(status)) =
        (std::fs::read_to_string(format!("/proc/{tid}/stat")), std::fs::read_to_string(format!("/proc/{tid}/status")))
    else {
        return true;
    };
    // After the command's closing parenthesis: state, ppid, pgrp, session, tty, tpgid, flags.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let state = fields.first().copied().unwrap_or("X");
    let flags: u64 = fields.get(6).and_then(|f| f.parse().ok()).unwrap_or(0);
    let pending = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    matches!(state, "Z" | "X" | "x")
        || flags & PF_EXITING != 0
        || (pending("SigPnd:") | pending("ShdPnd:")) & SIGKILL_BIT != 0
}

/// The thread group (process) of thread `tid` (`Tgid:` of `/proc/TID/status`).
pub fn thread_group(tid: Pid) -> io::Result<Pid> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .map(Pid)
        .ok_or_else(|| io::Error::other(format!("/proc/{tid}/status has no Tgid")))
}

/// The mappings of process `pid` (`/proc/PID/maps`).
pub fn maps(pid: Pid) -> io::Result<Vec<Mapping>> {
    Ok(parse_maps(&std::fs::read_to_string(format!("/proc/{pid}/maps"))?))
}

/// The threads of process `pid` (`/proc/PID/task`), in id order.
pub fn threads(pid: Pid) -> io::Result<Vec<Pid>> {
    let mut out: Vec<Pid> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok().map(Pid))
        .collect();
    out.sort();
    Ok(out)
}

/// The children of every thread of `pid` (`/proc/PID/task/*/children`): the processes it forked
/// that are still there, adopted orphans included when it is a subreaper.
pub fn children(pid: Pid) -> io::Result<Vec<Pid>> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{}/task", pid.0))?.flatten() {
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else { continue };
        out.extend(list.split_whitespace().filter_map(|p| p.parse().ok()).map(Pid));
    }
    Ok(out)
}

/// End address of the `[stack]` mapping.
pub fn stack_top(pid: Pid) -> io::Result<u64> {
    maps(pid)?
        .iter()
        .find(|m| m.name == "[stack]")
        .map(|m| m.end)
        .ok_or_else(|| io::Error::other(format!("pid {pid} has no [stack] mapping")))
}

/// The executable a process runs (`/proc/PID/exe`).
pub fn exe(pid: Pid) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
}

/// The working directory of a process.
pub fn cwd(pid: Pid) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd"))
}

/// The file an fd of a process refers to.
pub fn fd_path(pid: Pid, fd: u64) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
}

/// Metadata of what an fd of a process refers to (following the link).
pub fn fd_metadata(pid: Pid, fd: u64) -> io::Result<std::fs::Metadata> {
    std::fs::metadata(format!("/proc/{pid}/fd/{fd}"))
}

/// Open what an fd of a process refers to, for reading, without blocking (a FIFO with no
/// writer) and without taking the tracee's file position (a fresh open file description; read
/// it with `pread`). A pipe opened this way is the tracee's pipe: reading it consumes.
pub fn open_fd(pid: Pid, fd: u64) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/{pid}/fd/{fd}"))
}

/// The file position of an fd of a process (`pos:` in `/proc/PID/fdinfo/FD`).
pub fn fd_position(pid: Pid, fd: u64) -> io::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("pos:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no position in /proc/{pid}/fdinfo/{fd}")))
}

/// Auxiliary vector keys rdb uses.
pub const AT_NULL: u64 = 0;
pub const AT_IGNORE: u64 = 1;
pub const AT_ENTRY: u64 = 9;
pub const AT_SYSINFO_EHDR: u64 = 33;

/// The value of `key` in a raw auxiliary vector (pairs of little-endian words up to `AT_NULL`).
pub fn auxv_get(auxv: &[u8], key: u64) -> Option<u64> {
    auxv_find(auxv, key).and_then(|off| word(auxv, off + 8))
}

/// Offset of the entry for `key` in a raw auxiliary vector.
fn auxv_find(auxv: &[u8], key: u64) -> Option<usize> {
    let mut off = 0;
    loop {
        let k = word(auxv, off)?;
        if k == AT_NULL {
            return None;
        }
        if k == key {
            return Some(off);
        }
        off += 16;
    }
}

fn word(bytes: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(off..off.checked_add(8)?)?.try_into().ok()?))
}

/// The auxiliary vector of a running process (`/proc/PID/auxv`).
pub fn auxv(pid: Pid) -> io::Result<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/auxv"))
}

/// Offset of the auxiliary vector in an initial stack image (which starts at the stack pointer
/// a process has right after exec: argc, argv, NULL, envp, NULL, auxv).
pub fn auxv_offset_in_stack(stack: &[u8]) -> Option<usize> {
    let argc = usize::try_from(word(stack, 0)?).ok().filter(|&a| a < stack.len())?;
    let mut i = 1 + argc + 1; // argv pointers and their NULL
    if word(stack, (i - 1) * 8)? != 0 {
        return None;
    }
    while word(stack, i * 8)? != 0 {
        i += 1; // envp
    }
    Some((i + 1) * 8)
}

/// The value of an auxv entry in an initial stack image.
pub fn stack_auxv_get(stack: &[u8], key: u64) -> Option<u64> {
    auxv_get(&stack[auxv_offset_in_stack(stack)?..], key)
}

/// Hide the vDSO in an initial stack image: `AT_SYSINFO_EHDR` becomes `AT_IGNORE`, so libc
/// makes real syscalls for time. Returns the patched offset, if any.
pub fn hide_vdso(stack: &mut [u8]) -> Option<usize> {
    let off = auxv_offset_in_stack(stack)?;
    let at = off + auxv_find(&stack[off..], AT_SYSINFO_EHDR)?;
    stack[at..at + 8].copy_from_slice(&AT_IGNORE.to_le_bytes());
    Some(at)
}

/// Load bias of an executable loaded with entry point `at_entry` (`AT_ENTRY`): run-time address
/// minus link-time address; 0 for a non-PIE executable.
pub fn load_bias(exe: &Path, at_entry: u64) -> io::Result<u64> {
    use object::Object;
    let data = std::fs::read(exe)?;
    let file = object::File::parse(&*data).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{} is not an ELF file: {e}", exe.display()))
    })?;
    Ok(at_entry.wrapping_sub(file.entry()))
}

/// Load bias of the main binary of a running process (`AT_ENTRY` of `/proc/PID/auxv` against
/// the entry point of `/proc/PID/exe`).
pub fn process_load_bias(pid: Pid) -> io::Result<u64> {
    let entry = auxv_get(&auxv(pid)?, AT_ENTRY)
        .ok_or_else(|| io::Error::other(format!("process {pid} has no AT_ENTRY in its auxiliary vector")))?;
    load_bias(Path::new(&format!("/proc/{pid}/exe")), entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_process_is_dying_until_gone() {
        let mut child = std::process::Command::new("sleep").arg("100").spawn().expect("start sleep");
        let pid = Pid(child.id() as i32);
        assert!(!dying(pid), "a sleeping process");
        // Killed and not reaped: a zombie.
        child.kill().expect("kill");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ") {
            assert!(std::time::Instant::now() < deadline, "never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(dying(pid), "a zombie");
        child.wait().expect("reap");
        assert!(dying(pid), "gone");
    }

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
        assert!(maps[3].executable && maps[3].contains(0x7ffff7fc5000) && !maps[3].contains(0x7ffff7fc7000));
        assert_eq!(maps[4].name, "");
        assert!(!maps[4].readable);
    }

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
        assert_eq!(stack_auxv_get(&s, AT_ENTRY), Some(0x5555_5555_6040));
        assert_eq!(stack_auxv_get(&s, AT_SYSINFO_EHDR), Some(0x7fff_f000));
        assert!(hide_vdso(&mut s).is_some());
        assert_eq!(stack_auxv_get(&s, AT_SYSINFO_EHDR), None);
        assert_eq!(stack_auxv_get(&s, AT_ENTRY), Some(0x5555_5555_6040));
    }

    #[test]
    fn malformed_stack_images_give_none() {
        assert_eq!(stack_auxv_get(&[], AT_ENTRY), None);
        assert_eq!(stack_auxv_get(&[0xff; 16], AT_ENTRY), None);
    }

    #[test]
    fn this_process_has_a_load_bias_and_a_stack() {
        let me = Pid(std::process::id() as i32);
        let bias = process_load_bias(me).unwrap();
        let main = this_function as *const () as u64;
        let exe = std::fs::canonicalize(exe(me).unwrap()).unwrap();
        let text = maps(me).unwrap().into_iter().find(|m| m.contains(main)).unwrap();
        assert_eq!(Path::new(&text.name), exe);
        assert!(bias <= main);
        assert!(stack_top(me).unwrap() > 0);
    }

    fn this_function() {}
}
