//! Trace events and their binary encoding.
//!
//! The event stream is the schedule: events appear in the global order the recorder observed
//! them, and every event names the (recorded) thread it belongs to. Within a thread group only
//! one thread runs user code at a time; a thread's events mark the points where it got its
//! turn (see the scheduling notes in the crate docs).
//!
//! Encoding: one tag byte, then the fields in declaration order, little-endian; byte strings
//! and lists are a `u32` length followed by the items. Decoding checks every length against the
//! bytes that remain, so a malformed stream is an error, never a panic or a huge allocation.

use std::fmt;

/// A recorded thread id: the id the thread had while recording. Replay maps it to whatever
/// the kernel hands out then, and the program keeps seeing the recorded value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tid(pub u32);

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Bytes the kernel wrote into the tracee during a syscall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemWrite {
    pub addr: u64,
    pub bytes: Vec<u8>,
}

/// Which of the recorder's own output streams a write went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The identity of a file mapped with `mmap`, and its contents when the file cannot be found
/// again at replay time (deleted files, memfds, shared memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedFile {
    pub path: Vec<u8>,
    pub blake3: [u8; 32],
    pub size: u64,
    /// The mapped bytes (only for files that cannot be reopened by path).
    pub snapshot: Option<Vec<u8>>,
}

/// One event of the recorded execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The first event: how the root process was started.
    Start { tid: Tid, exe: Vec<u8>, argv: Vec<Vec<u8>>, envp: Vec<Vec<u8>>, cwd: Vec<u8> },
    /// A process image was replaced (initial start included): the file `execve` opened (as an
    /// absolute path) and its hash, the executable the kernel loaded (differs for `#!` scripts:
    /// the interpreter) and its hash, and the initial stack from `sp` to the top of the stack
    /// mapping (argv, envp, auxv as the program saw them, vDSO entry already removed), and the
    /// program interpreter (dynamic loader) the kernel loaded with the image, with its hash.
    Exec {
        tid: Tid,
        exe: Vec<u8>,
        blake3: [u8; 32],
        image: Vec<u8>,
        image_blake3: [u8; 32],
        sp: u64,
        stack: Vec<u8>,
        interp: Option<(Vec<u8>, [u8; 32])>,
    },
    /// A completed syscall.
    Syscall {
        tid: Tid,
        nr: u64,
        args: [u64; 6],
        ret: i64,
        writes: Vec<MemWrite>,
        /// Bytes written to the recorder's stdout/stderr (re-emitted on replay).
        output: Option<(Stream, Vec<u8>)>,
        /// For `mmap` of a file: the file's identity.
        file: Option<MappedFile>,
    },
    /// A new process appeared (fork, vfork, clone without `CLONE_THREAD`).
    NewProcess { tid: Tid, child: Tid, flags: u64 },
    /// A signal was delivered. Asynchronous ones are delivered right after a syscall of `tid`;
    /// synchronous ones (faults) happen by themselves during replay and are only checked.
    Signal { tid: Tid, sig: i32, asynchronous: bool, siginfo: Vec<u8> },
    /// A trapped `rdtsc` (`rcx` is set for `rdtscp`).
    Rdtsc { tid: Tid, rax: u64, rdx: u64, rcx: Option<u64> },
    /// A trapped `cpuid` (only in traces whose header says `cpuid_trapped`): the leaf and
    /// subleaf the program asked for (eax, ecx) and the result it was given (eax, ebx, ecx,
    /// edx).
    Cpuid { tid: Tid, leaf: u32, subleaf: u32, result: [u32; 4] },
    /// The thread is gone: raw wait status (exit code << 8, or the killing signal).
    Exit { tid: Tid, status: i32 },
    /// A thread created with `CLONE_THREAD` gets its first turn: from here until its next
    /// syscall it is the only thread of its group running user code.
    ThreadStart { tid: Tid },
    /// The thread was interrupted in user code, at the point these registers (words of
    /// `user_regs_struct`) and this digest of its FP registers, stack window and `pages` name (see
    /// `interrupt`): from here it runs on (after a signal recorded next, or after its turn
    /// came back).
    Interrupt { tid: Tid, regs: [u64; 27], stack: Vec<u8>, pages: Vec<u64>, digest: [u8; 32] },
}

impl Event {
    /// The thread the event belongs to.
    pub fn tid(&self) -> Tid {
        match self {
            Event::Start { tid, .. }
            | Event::Exec { tid, .. }
            | Event::Syscall { tid, .. }
            | Event::NewProcess { tid, .. }
            | Event::Signal { tid, .. }
            | Event::Rdtsc { tid, .. }
            | Event::Cpuid { tid, .. }
            | Event::Exit { tid, .. }
            | Event::ThreadStart { tid }
            | Event::Interrupt { tid, .. } => *tid,
        }
    }

    /// A one-line description for divergence reports and `rdb info`.
    pub fn describe(&self) -> String {
        match self {
            Event::Start { exe, .. } => format!("start {}", String::from_utf8_lossy(exe)),
            Event::Exec { exe, .. } => format!("exec {}", String::from_utf8_lossy(exe)),
            Event::Syscall { nr, args, ret, .. } => {
                let n = crate::syscalls::nargs(*nr);
                let a: Vec<String> = args[..n].iter().map(|a| format!("{a:#x}")).collect();
                format!("{}({}) = {}", crate::syscalls::name(*nr), a.join(", "), ret)
            }
            Event::NewProcess { child, flags, .. } => {
                let what = if flags & libc::CLONE_THREAD as u64 != 0 { "thread" } else { "process" };
                format!("new {what} {child} (clone flags {flags:#x})")
            }
            Event::ThreadStart { .. } => "thread starts".into(),
            Event::Interrupt { regs, .. } => {
                format!("interrupted in user code at pc {:#x} (rsp {:#x})", regs[16], regs[19])
            }
            Event::Signal { sig, asynchronous, .. } => {
                format!("{} signal {}", if *asynchronous { "asynchronous" } else { "synchronous" }, signal_name(*sig))
            }
            Event::Rdtsc { rcx, .. } => {
                if rcx.is_some() {
                    "rdtscp".into()
                } else {
                    "rdtsc".into()
                }
            }
            Event::Cpuid { leaf, subleaf, result, .. } => {
                let [a, b, c, d] = result;
                format!("cpuid leaf {leaf:#x} subleaf {subleaf:#x} = {a:#x} {b:#x} {c:#x} {d:#x}")
            }
            Event::Exit { status, .. } => describe_status(*status),
        }
    }
}

/// "exit 3" / "killed by SIGKILL" for a raw wait status.
pub fn describe_status(status: i32) -> String {
    if status & 0x7f == 0 {
        format!("exit {}", (status >> 8) & 0xff)
    } else {
        format!("killed by {}", signal_name(status & 0x7f))
    }
}

/// `SIGSEGV` for 11, and so on.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match NAMES.get(sig as usize) {
        Some(n) if sig > 0 => n.to_string(),
        _ => format!("signal {sig}"),
    }
}

/// A malformed event encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed event at byte {offset}: {what}")]
pub struct DecodeError {
    pub offset: usize,
    pub what: &'static str,
}

const TAG_START: u8 = 1;
const TAG_EXEC: u8 = 2;
const TAG_SYSCALL: u8 = 3;
const TAG_NEW_PROCESS: u8 = 4;
const TAG_SIGNAL: u8 = 5;
const TAG_RDTSC: u8 = 6;
const TAG_EXIT: u8 = 7;
const TAG_CPUID: u8 = 8;
const TAG_THREAD_START: u8 = 16;
const TAG_INTERRUPT: u8 = 17;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

/// Append the encoding of `ev` to `out`.
pub fn encode(ev: &Event, out: &mut Vec<u8>) {
    match ev {
        Event::Start { tid, exe, argv, envp, cwd } => {
            out.push(TAG_START);
            put_u32(out, tid.0);
            put_bytes(out, exe);
            put_u32(out, argv.len() as u32);
            argv.iter().for_each(|a| put_bytes(out, a));
            put_u32(out, envp.len() as u32);
            envp.iter().for_each(|e| put_bytes(out, e));
            put_bytes(out, cwd);
        }
        Event::Exec { tid, exe, blake3, image, image_blake3, sp, stack, interp } => {
            out.push(TAG_EXEC);
            put_u32(out, tid.0);
            put_bytes(out, exe);
            out.extend_from_slice(blake3);
            put_bytes(out, image);
            out.extend_from_slice(image_blake3);
            put_u64(out, *sp);
            put_bytes(out, stack);
            match interp {
                None => out.push(0),
                Some((path, hash)) => {
                    out.push(1);
                    put_bytes(out, path);
                    out.extend_from_slice(hash);
                }
            }
        }
        Event::Syscall { tid, nr, args, ret, writes, output, file } => {
            out.push(TAG_SYSCALL);
            put_u32(out, tid.0);
            put_u64(out, *nr);
            args.iter().for_each(|a| put_u64(out, *a));
            put_u64(out, *ret as u64);
            put_u32(out, writes.len() as u32);
            for w in writes {
                put_u64(out, w.addr);
                put_bytes(out, &w.bytes);
            }
            match output {
                None => out.push(0),
                Some((s, bytes)) => {
                    out.push(if *s == Stream::Stdout { 1 } else { 2 });
                    put_bytes(out, bytes);
                }
            }
            match file {
                None => out.push(0),
                Some(f) => {
                    out.push(1);
                    put_bytes(out, &f.path);
                    out.extend_from_slice(&f.blake3);
                    put_u64(out, f.size);
                    match &f.snapshot {
                        None => out.push(0),
                        Some(s) => {
                            out.push(1);
                            put_bytes(out, s);
                        }
                    }
                }
            }
        }
        Event::NewProcess { tid, child, flags } => {
            out.push(TAG_NEW_PROCESS);
            put_u32(out, tid.0);
            put_u32(out, child.0);
            put_u64(out, *flags);
        }
        Event::Signal { tid, sig, asynchronous, siginfo } => {
            out.push(TAG_SIGNAL);
            put_u32(out, tid.0);
            put_u32(out, *sig as u32);
            out.push(*asynchronous as u8);
            put_bytes(out, siginfo);
        }
        Event::Rdtsc { tid, rax, rdx, rcx } => {
            out.push(TAG_RDTSC);
            put_u32(out, tid.0);
            put_u64(out, *rax);
            put_u64(out, *rdx);
            match rcx {
                None => out.push(0),
                Some(c) => {
                    out.push(1);
                    put_u64(out, *c);
                }
            }
        }
        Event::Cpuid { tid, leaf, subleaf, result } => {
            out.push(TAG_CPUID);
            put_u32(out, tid.0);
            put_u32(out, *leaf);
            put_u32(out, *subleaf);
            result.iter().for_each(|r| put_u32(out, *r));
        }
        Event::Exit { tid, status } => {
            out.push(TAG_EXIT);
            put_u32(out, tid.0);
            put_u32(out, *status as u32);
        }
        Event::ThreadStart { tid } => {
            out.push(TAG_THREAD_START);
            put_u32(out, tid.0);
        }
        Event::Interrupt { tid, regs, stack, pages, digest } => {
            out.push(TAG_INTERRUPT);
            put_u32(out, tid.0);
            for r in regs {
                put_u64(out, *r);
            }
            put_bytes(out, stack);
            put_u32(out, pages.len() as u32);
            for p in pages {
                put_u64(out, *p);
            }
            out.extend_from_slice(digest);
        }
    }
}

/// Cursor over an encoded event buffer.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError { offset: self.pos, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() - self.pos < n {
            return Err(self.err("truncated field"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn hash(&mut self) -> Result<[u8; 32], DecodeError> {
        Ok(self.take(32)?.try_into().expect("32 bytes"))
    }
    /// A list count, checked against the bytes left (each item takes at least `min` bytes).
    fn count(&mut self, min: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min) > self.buf.len() - self.pos {
            return Err(self.err("list longer than the data"));
        }
        Ok(n)
    }
    fn flag(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.err("bad flag byte")),
        }
    }

    /// Decode the next event.
    pub fn next_event(&mut self) -> Result<Event, DecodeError> {
        let tag = self.u8()?;
        let tid = Tid(self.u32()?);
        Ok(match tag {
            TAG_START => {
                let exe = self.bytes()?;
                let n = self.count(4)?;
                let argv = (0..n).map(|_| self.bytes()).collect::<Result<_, _>>()?;
                let n = self.count(4)?;
                let envp = (0..n).map(|_| self.bytes()).collect::<Result<_, _>>()?;
                let cwd = self.bytes()?;
                Event::Start { tid, exe, argv, envp, cwd }
            }
            TAG_EXEC => Event::Exec {
                tid,
                exe: self.bytes()?,
                blake3: self.hash()?,
                image: self.bytes()?,
                image_blake3: self.hash()?,
                sp: self.u64()?,
                stack: self.bytes()?,
                interp: if self.flag()? { Some((self.bytes()?, self.hash()?)) } else { None },
            },
            TAG_SYSCALL => {
                let nr = self.u64()?;
                let mut args = [0u64; 6];
                for a in &mut args {
                    *a = self.u64()?;
                }
                let ret = self.u64()? as i64;
                let n = self.count(12)?;
                let mut writes = Vec::with_capacity(n);
                for _ in 0..n {
                    writes.push(MemWrite { addr: self.u64()?, bytes: self.bytes()? });
                }
                let output = match self.u8()? {
                    0 => None,
                    1 => Some((Stream::Stdout, self.bytes()?)),
                    2 => Some((Stream::Stderr, self.bytes()?)),
                    _ => return Err(self.err("bad output stream")),
                };
                let file = if self.flag()? {
                    let path = self.bytes()?;
                    let blake3 = self.hash()?;
                    let size = self.u64()?;
                    let snapshot = if self.flag()? { Some(self.bytes()?) } else { None };
                    Some(MappedFile { path, blake3, size, snapshot })
                } else {
                    None
                };
                Event::Syscall { tid, nr, args, ret, writes, output, file }
            }
            TAG_NEW_PROCESS => Event::NewProcess { tid, child: Tid(self.u32()?), flags: self.u64()? },
            TAG_SIGNAL => {
                Event::Signal { tid, sig: self.u32()? as i32, asynchronous: self.flag()?, siginfo: self.bytes()? }
            }
            TAG_RDTSC => {
                let rax = self.u64()?;
                let rdx = self.u64()?;
                let rcx = if self.flag()? { Some(self.u64()?) } else { None };
                Event::Rdtsc { tid, rax, rdx, rcx }
            }
            TAG_CPUID => Event::Cpuid {
                tid,
                leaf: self.u32()?,
                subleaf: self.u32()?,
                result: [self.u32()?, self.u32()?, self.u32()?, self.u32()?],
            },
            TAG_EXIT => Event::Exit { tid, status: self.u32()? as i32 },
            TAG_THREAD_START => Event::ThreadStart { tid },
            TAG_INTERRUPT => {
                let mut regs = [0u64; 27];
                for r in &mut regs {
                    *r = self.u64()?;
                }
                let stack = self.bytes()?;
                let n = self.count(8)?;
                let pages = (0..n).map(|_| self.u64()).collect::<Result<_, _>>()?;
                Event::Interrupt { tid, regs, stack, pages, digest: self.hash()? }
            }
            _ => return Err(DecodeError { offset: self.pos - 5, what: "unknown event tag" }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Event> {
        vec![
            Event::Start {
                tid: Tid(7),
                exe: b"/bin/true".to_vec(),
                argv: vec![b"true".to_vec()],
                envp: vec![b"A=1".to_vec(), b"B=\xff".to_vec()],
                cwd: b"/tmp".to_vec(),
            },
            Event::Exec {
                tid: Tid(7),
                exe: b"/bin/true".to_vec(),
                blake3: [3; 32],
                image: b"/bin/true".to_vec(),
                image_blake3: [3; 32],
                sp: 0x7ff0,
                stack: vec![1, 2, 3],
                interp: Some((b"/lib64/ld-linux-x86-64.so.2".to_vec(), [4; 32])),
            },
            Event::Syscall {
                tid: Tid(7),
                nr: 0,
                args: [1, 2, 3, 4, 5, 6],
                ret: -2,
                writes: vec![MemWrite { addr: 0x1000, bytes: b"hi".to_vec() }],
                output: Some((Stream::Stderr, b"out".to_vec())),
                file: Some(MappedFile {
                    path: b"/lib/x".to_vec(),
                    blake3: [9; 32],
                    size: 10,
                    snapshot: Some(vec![0; 4]),
                }),
            },
            Event::NewProcess { tid: Tid(7), child: Tid(8), flags: 0x11 },
            Event::Signal { tid: Tid(8), sig: 17, asynchronous: true, siginfo: vec![0; 128] },
            Event::Rdtsc { tid: Tid(8), rax: 5, rdx: 6, rcx: Some(7) },
            Event::Cpuid { tid: Tid(8), leaf: 7, subleaf: 0, result: [1, 2, 3, 0xffff_ffff] },
            Event::Exit { tid: Tid(8), status: 0x100 },
            Event::ThreadStart { tid: Tid(9) },
            Event::Interrupt { tid: Tid(9), regs: [3; 27], stack: vec![1; 16], pages: vec![0x5000], digest: [5; 32] },
        ]
    }

    #[test]
    fn every_event_round_trips() {
        let mut buf = Vec::new();
        for e in samples() {
            encode(&e, &mut buf);
        }
        let mut d = Decoder::new(&buf);
        for e in samples() {
            assert_eq!(d.next_event().unwrap(), e);
        }
        assert!(d.is_empty());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let mut buf = Vec::new();
        for e in samples() {
            encode(&e, &mut buf);
        }
        for cut in 0..buf.len() {
            let mut d = Decoder::new(&buf[..cut]);
            let mut ok = 0;
            while !d.is_empty() {
                match d.next_event() {
                    Ok(_) => ok += 1,
                    Err(_) => break,
                }
            }
            assert!(ok < samples().len(), "cut at {cut} decoded everything");
        }
    }

    #[test]
    fn huge_lengths_are_refused() {
        let mut buf = vec![TAG_START, 1, 0, 0, 0];
        buf.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Decoder::new(&buf).next_event().is_err());
    }
}
