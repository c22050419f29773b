//! [`RemoteTarget`]: a program stopped in a GDB stub, as a [`Target`] and a [`Control`].

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rdb_tracee::procfs::{self, Mapping};
use rdb_tracee::{Control, Memory, Pid, Regs, Stop, Target, WatchKind, Watchpoint};

use crate::conn::Connection;
use crate::packet::{hex, parse_hex, unhex_registers};
use crate::signals::{self, GDB_SIGSTOP, GDB_SIGTRAP};
use crate::stop::{self, StopReply, Stopped, ThreadId};
use crate::tdesc::{self, Layout};
use crate::RemoteError;

/// Memory is read and cached a page at a time.
const PAGE: u64 = 4096;
/// Largest object rdb reads with `qXfer` or `vFile` (a target description, `/proc/PID/maps`).
const MAX_OBJECT: usize = 16 << 20;
/// Pages probed up and down from an address when the stub cannot list mappings (a larger
/// mapping is extended by the next probe beyond its end).
const PROBE_PAGES: u64 = 1024;

/// How to reach a stub.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// `HOST:PORT`.
    pub address: String,
    /// How long one reply may take (the program running until its next stop may take as long
    /// as it takes; the connection closing ends the wait at once).
    pub timeout: Duration,
    /// A local copy of the main binary the stub runs: its ELF entry point and the stub's
    /// `AT_ENTRY` give the load bias; its segments stand in for mappings the stub cannot list.
    pub binary: PathBuf,
}

/// What the stub said it supports (`qSupported`, `vCont?`).
#[derive(Debug, Default, Clone)]
struct Features {
    packet_size: usize,
    no_ack: bool,
    target_xml: bool,
    auxv: bool,
    exec_file: bool,
    pass_signals: bool,
    multiprocess: bool,
    fork_events: bool,
    vcont: bool,
    vcont_step: bool,
    vcont_signal: bool,
}

/// How a breakpoint is planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planted {
    /// By the stub (`Z0`): it hides the breakpoint from memory reads and steps over it.
    Stub,
    /// By rdb writing `int3` (the stub has no `Z0`): the original byte.
    Written(u8),
}

/// The connection and what is cached for the current stop (reads take `&self`).
struct Link {
    conn: Connection,
    /// Page address -> the readable bytes from its start (shorter than a page at a hole).
    pages: HashMap<u64, Vec<u8>>,
    /// The thread `Hg` last selected.
    general: Option<ThreadId>,
    /// The stub answers `vFile` (`None`: not asked yet).
    vfile: Option<bool>,
    /// Without `vFile`: ranges found readable by probing around addresses debug code touched.
    probed: Vec<Mapping>,
}

/// A program stopped in a GDB stub (all-stop mode). See the crate docs.
pub struct RemoteTarget {
    link: RefCell<Link>,
    features: Features,
    layout: Layout,
    /// Bytes of memory one `m` packet reads.
    read_unit: usize,
    /// The thread of the current stop.
    thread: ThreadId,
    regs: Regs,
    /// The `g` reply of the current stop (`None` for bytes the stub marked unavailable).
    raw_registers: Vec<Option<u8>>,
    load_bias: u64,
    binary: PathBuf,
    exec_file: Option<PathBuf>,
    breakpoints: BTreeMap<u64, Planted>,
    watchpoints: BTreeMap<usize, Watchpoint>,
    /// A (gdb-numbered) signal that stopped the program, delivered when it is resumed.
    pending: Option<u8>,
    exited: Option<i32>,
    /// Notes for the user (a forked child the stub was told to let go, ...).
    notes: Vec<String>,
    stops: u64,
}

impl RemoteTarget {
    /// Connects to a stub and reads the stopped program's state: features, registers layout,
    /// the thread it stopped in, its executable and its load bias.
    pub fn connect(options: &RemoteOptions) -> Result<RemoteTarget, RemoteError> {
        let mut conn = Connection::connect(&options.address, options.timeout)?;
        let supported = conn.request(
            b"qSupported:multiprocess+;swbreak+;hwbreak+;fork-events+;vfork-events+;vContSupported+;xmlRegisters=i386",
        )?;
        let mut features = parse_supported(&supported);
        if features.no_ack && conn.request(b"QStartNoAckMode")? == b"OK" {
            conn.set_no_ack();
        }
        let vcont = conn.request(b"vCont?")?;
        if let Some(actions) = vcont.strip_prefix(b"vCont") {
            let has = |a: &[u8]| actions.split(|&b| b == b';').any(|x| x == a);
            features.vcont = has(b"c");
            features.vcont_step = has(b"s");
            features.vcont_signal = has(b"C") && has(b"S");
        }
        let read_unit = (features.packet_size.saturating_sub(32) / 2).clamp(256, PAGE as usize);
        let mut target = RemoteTarget {
            link: RefCell::new(Link { conn, pages: HashMap::new(), general: None, vfile: None, probed: Vec::new() }),
            features,
            layout: Layout::amd64_default(),
            read_unit,
            thread: ThreadId::ANY,
            regs: rdb_tracee::ptrace::zeroed_regs(),
            raw_registers: Vec::new(),
            load_bias: 0,
            binary: options.binary.clone(),
            exec_file: None,
            breakpoints: BTreeMap::new(),
            watchpoints: BTreeMap::new(),
            pending: None,
            exited: None,
            notes: Vec::new(),
            stops: 0,
        };
        let status = target.request(b"?")?;
        match stop::parse(&status).map_err(RemoteError::Protocol)? {
            StopReply::Stopped(s) => {
                target.thread = match s.thread {
                    Some(t) => t,
                    None => target.current_thread()?,
                };
                // The stub holds the program at a signal of its own (SIGTRAP after exec,
                // SIGSTOP/SIGINT on attach): not one to pass on.
                if ![0, GDB_SIGTRAP, GDB_SIGSTOP, 2].contains(&s.signal) {
                    target.pending = Some(s.signal);
                }
            }
            StopReply::Exited { .. } | StopReply::Killed { .. } => {
                return Err(RemoteError::Target("the stub's program has already exited".into()))
            }
            other => return Err(RemoteError::Protocol(format!("unexpected answer to `?`: {other:?}"))),
        }
        if target.features.target_xml {
            target.layout = target.read_target_description()?;
        }
        if target.features.pass_signals {
            // Every signal but the ones rdb stops for goes to the program without a stop.
            let list: Vec<String> =
                (1u8..=150).filter(|s| ![GDB_SIGTRAP, GDB_SIGSTOP].contains(s)).map(|s| format!("{s:x}")).collect();
            target.request(format!("QPassSignals:{}", list.join(";")).as_bytes())?;
        }
        if target.features.exec_file {
            let annex = target.thread.pid.map(|p| format!("{p:x}")).unwrap_or_default();
            if let Some(path) = target.read_object("exec-file", &annex)? {
                target.exec_file = Some(PathBuf::from(String::from_utf8_lossy(&path).into_owned()));
            }
        }
        target.load_bias = target.find_load_bias()?;
        target.fetch_registers()?;
        Ok(target)
    }

    /// The executable the stub runs, as the stub names it (`qXfer:exec-file`), if it can tell.
    pub fn exec_file(&self) -> Option<&Path> {
        self.exec_file.as_deref()
    }

    /// The thread of the current stop.
    pub fn thread(&self) -> ThreadId {
        self.thread
    }

    /// Stops reported by the stub so far.
    pub fn stops(&self) -> u64 {
        self.stops
    }

    /// Notes gathered while running (e.g. a child process the stub was told to let go of);
    /// each is returned once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Ends the session: removes rdb's breakpoints and lets the program run on (`D`), unless it
    /// has exited. Errors are ignored: the stub may be gone.
    pub fn detach(&mut self) {
        if self.exited.is_some() {
            return;
        }
        let addrs: Vec<u64> = self.breakpoints.keys().copied().collect();
        for a in addrs {
            let _ = self.remove_breakpoint(a);
        }
        let _ = self.request(b"D");
        self.exited = Some(0);
    }

    fn request(&self, data: &[u8]) -> Result<Vec<u8>, RemoteError> {
        self.link.borrow_mut().conn.request(data)
    }

    /// A request that must be answered `OK`.
    fn request_ok(&self, data: &[u8]) -> Result<(), RemoteError> {
        let reply = self.request(data)?;
        if reply == b"OK" {
            return Ok(());
        }
        Err(refused(data, &reply))
    }

    /// `qC`: the current thread, for stubs whose stop replies name none.
    fn current_thread(&self) -> Result<ThreadId, RemoteError> {
        let reply = self.request(b"qC")?;
        Ok(reply.strip_prefix(b"QC").and_then(ThreadId::parse).unwrap_or(ThreadId::ANY))
    }

    /// Reads a `qXfer` object whole; `None` when the stub does not have it.
    fn read_object(&self, object: &str, annex: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let mut out = Vec::new();
        let chunk = self.features.packet_size.saturating_sub(32).max(256);
        loop {
            let request = format!("qXfer:{object}:read:{annex}:{:x},{chunk:x}", out.len());
            let reply = self.request(request.as_bytes())?;
            match reply.split_first() {
                Some((b'm', data)) if !data.is_empty() => out.extend_from_slice(data),
                Some((b'l', data)) | Some((b'm', data)) => {
                    out.extend_from_slice(data);
                    return Ok(Some(out));
                }
                None => return Ok(None),
                Some((b'E', _)) => return Ok(None),
                _ => return Err(RemoteError::Protocol(format!("unexpected reply to `{request}`"))),
            }
            if out.len() > MAX_OBJECT {
                return Err(RemoteError::Protocol(format!("qXfer object {object} {annex} is larger than 16 MiB")));
            }
        }
    }

    /// The register layout from `target.xml` and the files it includes.
    fn read_target_description(&self) -> Result<Layout, RemoteError> {
        let mut tags = Vec::new();
        let mut files = 0;
        self.expand_description("target.xml", &mut tags, &mut files)?;
        Layout::from_tags(&tags).map_err(|e| RemoteError::Protocol(format!("target description: {e}")))
    }

    /// The tags of one description file with its `xi:include`s expanded in place (registers
    /// are numbered in document order).
    fn expand_description(&self, name: &str, out: &mut Vec<tdesc::Tag>, files: &mut u32) -> Result<(), RemoteError> {
        *files += 1;
        if *files > 64 {
            return Err(RemoteError::Protocol("the target description includes more than 64 files".into()));
        }
        let xml = self.read_object("features", name)?.ok_or_else(|| {
            RemoteError::Protocol(format!("the stub's target description names {name}, which it cannot send"))
        })?;
        for t in tdesc::tags(&String::from_utf8_lossy(&xml)) {
            match (t.name.rsplit(':').next() == Some("include"), t.get("href")) {
                (true, Some(href)) => self.expand_description(href, out, files)?,
                _ => out.push(t),
            }
        }
        Ok(())
    }

    /// Load bias of the main binary: `AT_ENTRY` of the stub's auxiliary vector against the
    /// binary's entry point, else the text offset of `qOffsets`, else 0 for a non-PIE binary.
    fn find_load_bias(&self) -> Result<u64, RemoteError> {
        if self.features.auxv {
            if let Some(auxv) = self.read_object("auxv", "")? {
                if let Some(entry) = procfs::auxv_get(&auxv, procfs::AT_ENTRY) {
                    return procfs::load_bias(&self.binary, entry)
                        .map_err(|e| RemoteError::Target(format!("cannot read {}: {e}", self.binary.display())));
                }
            }
        }
        let offsets = self.request(b"qOffsets")?;
        let text = offsets
            .split(|&b| b == b';')
            .find_map(|f| f.strip_prefix(b"Text=").or_else(|| f.strip_prefix(b"TextSeg=")))
            .and_then(parse_hex);
        if let Some(text) = text {
            return Ok(text);
        }
        let data = std::fs::read(&self.binary)
            .map_err(|e| RemoteError::Target(format!("cannot read {}: {e}", self.binary.display())))?;
        if is_fixed_address_executable(&data) {
            return Ok(0);
        }
        Err(RemoteError::Unsupported {
            what: "qXfer:auxv:read or qOffsets".into(),
            consequence: format!(
                "rdb cannot tell where {} is loaded (it is position-independent)",
                self.binary.display()
            ),
        })
    }

    /// Selects `thread` for register and memory requests (`Hg`), unless it already is.
    fn select(&self, thread: ThreadId) -> Result<(), RemoteError> {
        if self.link.borrow().general == Some(thread) || thread == ThreadId::ANY {
            return Ok(());
        }
        self.request_ok(format!("Hg{}", thread.encode(self.features.multiprocess)).as_bytes())?;
        self.link.borrow_mut().general = Some(thread);
        Ok(())
    }

    /// Reads the registers of the current thread (`g`, and `p` for those it does not hold).
    fn fetch_registers(&mut self) -> Result<(), RemoteError> {
        self.select(self.thread)?;
        let reply = self.request(b"g")?;
        if reply.first() == Some(&b'E') {
            return Err(refused(b"g", &reply));
        }
        self.raw_registers =
            unhex_registers(&reply).ok_or_else(|| RemoteError::Protocol("a `g` reply that is not hex".into()))?;
        let mut regs = rdb_tracee::ptrace::zeroed_regs();
        for name in tdesc::GENERAL {
            let Some((reg, offset)) = self.layout.find(name).cloned() else { continue };
            let size = reg.size.min(8);
            let bytes: Option<Vec<u8>> = match self.raw_registers.get(offset..offset + reg.size) {
                Some(b) => b[..size].iter().copied().collect(),
                None => self.read_register(reg.number)?.map(|b| b[..size.min(b.len())].to_vec()),
            };
            if let Some(bytes) = bytes {
                let mut word = [0u8; 8];
                word[..bytes.len()].copy_from_slice(&bytes);
                tdesc::set_general(&mut regs, name, u64::from_le_bytes(word));
            }
        }
        self.regs = regs;
        Ok(())
    }

    /// `p`: one register's bytes; `None` when the stub has it unavailable.
    fn read_register(&self, number: u32) -> Result<Option<Vec<u8>>, RemoteError> {
        let request = format!("p{number:x}");
        let reply = self.request(request.as_bytes())?;
        if reply.is_empty() || reply.first() == Some(&b'E') {
            return Ok(None);
        }
        let bytes = unhex_registers(&reply)
            .ok_or_else(|| RemoteError::Protocol(format!("a `{request}` reply that is not hex")))?;
        Ok(bytes.into_iter().collect())
    }

    /// Writes the program counter of the current thread (after a written `int3` fired).
    fn write_pc(&mut self, pc: u64) -> Result<(), RemoteError> {
        let (reg, _) = self
            .layout
            .find("rip")
            .cloned()
            .ok_or_else(|| RemoteError::Protocol("the target description has no rip".into()))?;
        self.select(self.thread)?;
        let request = format!("P{:x}={}", reg.number, hex(&pc.to_le_bytes()));
        self.request_ok(request.as_bytes())?;
        self.regs.rip = pc;
        Ok(())
    }

    /// The cached bytes of the page at `page` (read on first use in this stop).
    fn page(&self, page: u64) -> Result<Vec<u8>, RemoteError> {
        if let Some(p) = self.link.borrow().pages.get(&page) {
            return Ok(p.clone());
        }
        let mut bytes = Vec::with_capacity(PAGE as usize);
        while (bytes.len() as u64) < PAGE {
            let at = page + bytes.len() as u64;
            let len = (PAGE as usize - bytes.len()).min(self.read_unit);
            let reply = self.request(format!("m{at:x},{len:x}").as_bytes())?;
            if reply.first() == Some(&b'E') || reply.is_empty() {
                break;
            }
            let got = crate::packet::unhex(&reply)
                .ok_or_else(|| RemoteError::Protocol(format!("an `m{at:x},{len:x}` reply that is not hex")))?;
            let short = got.len() < len;
            bytes.extend_from_slice(&got[..got.len().min(len)]);
            if short || got.is_empty() {
                break;
            }
        }
        self.link.borrow_mut().pages.insert(page, bytes.clone());
        Ok(bytes)
    }

    /// Memory straight from the stub (no cache, no hiding of written breakpoints).
    fn read_uncached(&self, addr: u64, len: usize) -> Result<Vec<u8>, RemoteError> {
        let reply = self.request(format!("m{addr:x},{len:x}").as_bytes())?;
        let bytes = crate::packet::unhex(&reply).filter(|b| b.len() == len);
        bytes.ok_or_else(|| refused(format!("m{addr:x},{len:x}").as_bytes(), &reply))
    }

    /// Reads `/proc/PID/maps` through the stub's file access (`vFile`); `None` without it.
    fn maps_via_vfile(&self) -> Result<Option<Vec<Mapping>>, RemoteError> {
        if self.link.borrow().vfile == Some(false) {
            return Ok(None);
        }
        let Some(pid) = self.thread.pid.filter(|&p| p > 0).or((self.thread.tid > 0).then_some(self.thread.tid)) else {
            return Ok(None);
        };
        let path = format!("/proc/{pid}/maps");
        let reply = self.request(format!("vFile:open:{},0,0", hex(path.as_bytes())).as_bytes())?;
        let fd = match file_result(&reply) {
            Some(Ok(fd)) => fd,
            other => {
                // No vFile at all, or no such file on the stub's side (not a Linux /proc).
                self.link.borrow_mut().vfile = Some(false);
                if let Some(Err(errno)) = other {
                    return Err(RemoteError::Target(format!("the stub cannot open {path} (errno {errno})")));
                }
                return Ok(None);
            }
        };
        self.link.borrow_mut().vfile = Some(true);
        let mut text = Vec::new();
        let chunk = self.read_unit * 2;
        let result = loop {
            let request = format!("vFile:pread:{fd:x},{chunk:x},{:x}", text.len());
            let reply = self.request(request.as_bytes())?;
            match file_result(&reply) {
                Some(Ok(0)) => break Ok(()),
                Some(Ok(n)) => {
                    let data = reply.iter().position(|&b| b == b';').map(|i| &reply[i + 1..]).unwrap_or(&[]);
                    if data.len() as u64 != n {
                        break Err(RemoteError::Protocol(format!(
                            "`{request}` says {n} bytes but carries {}",
                            data.len()
                        )));
                    }
                    text.extend_from_slice(data);
                    if text.len() > MAX_OBJECT {
                        break Err(RemoteError::Protocol(format!("{path} is larger than 16 MiB")));
                    }
                }
                _ => break Err(refused(request.as_bytes(), &reply)),
            }
        };
        let _ = self.request(format!("vFile:close:{fd:x}").as_bytes());
        result?;
        Ok(Some(procfs::parse_maps(&String::from_utf8_lossy(&text))))
    }

    /// Mappings for a stub without file access: the main binary's segments at the load bias,
    /// the stack around the stack pointer, and what probing around addresses debug code
    /// touched found readable ([`Target::mapping_at`]).
    fn synthesized_maps(&self) -> Result<Vec<Mapping>, RemoteError> {
        let mut out = Vec::new();
        if let Ok(data) = std::fs::read(&self.binary) {
            out.extend(segments(&data).into_iter().map(|(start, end, executable, writable)| Mapping {
                start: (start + self.load_bias) & !(PAGE - 1),
                end: (end + self.load_bias).div_ceil(PAGE) * PAGE,
                readable: true,
                writable,
                executable,
                name: self.binary.display().to_string(),
            }));
        }
        let sp = self.regs.rsp & !(PAGE - 1);
        if sp != 0 && !out.iter().any(|m| m.contains(sp)) {
            if let Some(stack) = self.probe(sp, &out, "[stack]")? {
                out.push(stack);
            }
        }
        for m in &self.link.borrow().probed {
            if !out.iter().any(|o| o.start < m.end && m.start < o.end) {
                out.push(m.clone());
            }
        }
        out.sort_by_key(|m| m.start);
        Ok(out)
    }

    /// The readable range around `addr` (page-aligned), stopping at ranges of `known`; `None`
    /// when `addr` itself is not readable.
    fn probe(&self, addr: u64, known: &[Mapping], name: &str) -> Result<Option<Mapping>, RemoteError> {
        let page = addr & !(PAGE - 1);
        let free = |p: u64| !known.iter().any(|m| m.contains(p));
        if !self.readable(page)? {
            return Ok(None);
        }
        let mut end = page + PAGE;
        for _ in 0..PROBE_PAGES {
            if end == 0 || !free(end) || !self.readable(end)? {
                break;
            }
            end += PAGE;
        }
        let mut start = page;
        for _ in 0..PROBE_PAGES {
            if start < PAGE || !free(start - PAGE) || !self.readable(start - PAGE)? {
                break;
            }
            start -= PAGE;
        }
        // Nothing says whether it holds code: mirror it executable, as debug code may call
        // program functions through pointers.
        Ok(Some(Mapping { start, end, readable: true, writable: true, executable: true, name: name.into() }))
    }

    /// Whether the page at `page` can be read (one byte through `m`, or the page cache).
    fn readable(&self, page: u64) -> Result<bool, RemoteError> {
        if let Some(p) = self.link.borrow().pages.get(&page) {
            return Ok(!p.is_empty());
        }
        let reply = self.request(format!("m{page:x},1").as_bytes())?;
        Ok(reply.len() == 2 && crate::packet::unhex(&reply).is_some())
    }

    fn alive(&self) -> io::Result<()> {
        match self.exited {
            Some(status) => Err(io::Error::other(format!("the program has exited (status {status:#x})"))),
            None => Ok(()),
        }
    }

    /// The stop that just happened is stale: forget what was cached for it.
    fn forget_stop(&mut self) {
        let link = self.link.get_mut();
        link.pages.clear();
        link.general = None;
    }

    /// Sends a resume packet: `step` the current thread only, else continue every thread;
    /// `signal` is delivered to the current thread.
    fn send_resume(&mut self, step: bool, signal: Option<u8>) -> Result<(), RemoteError> {
        self.forget_stop();
        let thread = self.thread.encode(self.features.multiprocess);
        let packet = if self.features.vcont && (!step || self.features.vcont_step) {
            match (step, signal) {
                (true, None) => format!("vCont;s:{thread}"),
                (true, Some(s)) if self.features.vcont_signal => format!("vCont;S{s:02x}:{thread}"),
                (false, None) => "vCont;c".to_string(),
                (false, Some(s)) if self.features.vcont_signal => format!("vCont;C{s:02x}:{thread};c"),
                (_, Some(s)) => format!("{}{s:02x}", if step { 'S' } else { 'C' }),
            }
        } else {
            // No vCont: `Hc` selects the thread that `s`/`c` resume.
            self.request_ok(format!("Hc{thread}").as_bytes())?;
            match signal {
                Some(s) => format!("{}{s:02x}", if step { 'S' } else { 'C' }),
                None => (if step { "s" } else { "c" }).to_string(),
            }
        };
        self.link.get_mut().conn.send(packet.as_bytes())
    }

    /// Waits for the stop reply after a resume and turns it into a [`Stop`]. Forked children
    /// are let go (with a note) and the program resumed again. `internal`: a step of rdb's own
    /// (off a breakpoint) whose registers nobody reads: the pc the stub sends with the stop
    /// reply is enough, when it sends one.
    fn wait_stop(&mut self, stepping: bool, internal: bool) -> Result<Stop, RemoteError> {
        loop {
            let reply = self.link.get_mut().conn.receive(None, "while the program ran")?;
            let parsed = stop::parse(&reply).map_err(RemoteError::Protocol)?;
            self.stops += 1;
            let s = match parsed {
                StopReply::Output(bytes) => {
                    // The program's output, relayed by the stub: it goes where rdb's goes.
                    self.stops -= 1;
                    let mut out = io::stdout().lock();
                    let _ = out.write_all(&bytes);
                    let _ = out.flush();
                    continue;
                }
                StopReply::Exited { code, .. } => {
                    self.exited = Some((code as i32) << 8);
                    return Ok(Stop::Exited((code as i32) << 8));
                }
                StopReply::Killed { signal, .. } => {
                    let sig = signals::to_linux(signal);
                    self.exited = Some(sig);
                    return Ok(Stop::Exited(sig));
                }
                StopReply::NoResumed => {
                    return Err(RemoteError::Target("the stub has no thread left to resume".into()));
                }
                StopReply::Stopped(s) => s,
            };
            if let Some(t) = s.thread {
                self.thread = t;
            }
            // A stub selects the thread it reports for register and memory requests (gdb
            // assumes so too): no `Hg` unless rdb wants another thread.
            self.link.get_mut().general = s.thread;
            if let Some((child, vfork)) = s.forked {
                self.let_child_go(child, vfork)?;
                self.send_resume(stepping, None)?;
                continue;
            }
            if s.vfork_done {
                self.send_resume(stepping, None)?;
                continue;
            }
            let rip = self.layout.find("rip").map(|(r, _)| r.number);
            let expedited_pc = s.registers.iter().find(|(n, v)| Some(*n) == rip && v.len() == 8);
            match expedited_pc {
                Some((_, v)) if internal && s.signal == GDB_SIGTRAP => {
                    self.regs.rip = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
                    self.raw_registers.clear();
                }
                _ => self.fetch_registers()?,
            }
            return self.classify(s, stepping);
        }
    }

    /// What a `T`/`S` stop means for rdb.
    fn classify(&mut self, s: Stopped, stepping: bool) -> Result<Stop, RemoteError> {
        if s.signal != GDB_SIGTRAP {
            self.pending = Some(s.signal);
            return Ok(Stop::Signal(signals::to_linux(s.signal)));
        }
        if let Some(addr) = s.watch {
            let slots = self
                .watchpoints
                .iter()
                .filter(|(_, w)| w.addr <= addr && addr < w.addr + w.len as u64)
                .fold(0u8, |m, (slot, _)| m | 1 << slot);
            return Ok(Stop::Watchpoint { slots });
        }
        let pc = self.regs.rip;
        if self.breakpoints.get(&pc) == Some(&Planted::Stub) && !stepping {
            return Ok(Stop::Breakpoint { addr: pc });
        }
        let after = pc.wrapping_sub(1);
        if matches!(self.breakpoints.get(&after), Some(Planted::Written(_))) && !stepping {
            self.write_pc(after)?;
            return Ok(Stop::Breakpoint { addr: after });
        }
        if stepping {
            return Ok(Stop::Stepped);
        }
        if s.hwbreak && self.watchpoints.values().any(|w| w.kind == WatchKind::Execute && w.addr == pc) {
            let slots = self.watchpoints.iter().filter(|(_, w)| w.addr == pc).fold(0u8, |m, (slot, _)| m | 1 << slot);
            return Ok(Stop::Watchpoint { slots });
        }
        // A trap rdb did not cause (the program's own int3): the program gets it.
        self.pending = Some(GDB_SIGTRAP);
        Ok(Stop::Signal(libc::SIGTRAP))
    }

    /// Tells the stub to let a forked child run on its own (`D;PID`): the stub removes the
    /// breakpoints the child inherited. Regions do not run in it; a note says so.
    fn let_child_go(&mut self, child: ThreadId, vfork: bool) -> Result<(), RemoteError> {
        let pid = child.pid.unwrap_or(child.tid);
        let request = format!("D;{pid:x}");
        self.request_ok(request.as_bytes())?;
        let how = if vfork { "vfork" } else { "fork" };
        self.notes.push(format!(
            "process {} started process {pid} ({how}); regions do not run in it over the remote protocol (the stub lets it run on its own)",
            self.thread.pid.unwrap_or(self.thread.tid)
        ));
        Ok(())
    }

    /// At a breakpoint: runs its instruction with the breakpoint lifted (stubs step over only
    /// breakpoints of their own, never a client's `Z0`, as gdb does), then plants it again.
    fn step_off_breakpoint(&mut self) -> Result<Option<Stop>, RemoteError> {
        let pc = self.regs.rip;
        let Some(planted) = self.breakpoints.get(&pc).copied() else { return Ok(None) };
        // Lift, step, plant again: each request goes out without waiting for its `OK`, which
        // is checked before the next stop reply is read.
        let conn = &mut self.link.get_mut().conn;
        match planted {
            Planted::Stub => conn.send_deferred(format!("z0,{pc:x},1").as_bytes())?,
            Planted::Written(orig) => conn.send_deferred(format!("M{pc:x},1:{orig:02x}").as_bytes())?,
        }
        let signal = self.pending.take();
        self.send_resume(true, signal)?;
        let stop = self.wait_stop(true, true)?;
        if self.exited.is_none() {
            let conn = &mut self.link.get_mut().conn;
            match planted {
                Planted::Stub => conn.send_deferred(format!("Z0,{pc:x},1").as_bytes())?,
                Planted::Written(_) => conn.send_deferred(format!("M{pc:x},1:cc").as_bytes())?,
            }
            if stop != Stop::Stepped && self.raw_registers.is_empty() {
                // The caller sees this stop: it gets all registers.
                self.fetch_registers()?;
            }
        }
        Ok(Some(stop))
    }
}

impl Drop for RemoteTarget {
    fn drop(&mut self) {
        // Leave a program that still runs without rdb's breakpoints.
        self.detach();
    }
}

fn refused(request: &[u8], reply: &[u8]) -> RemoteError {
    let request = String::from_utf8_lossy(&request[..request.len().min(60)]).into_owned();
    let code = if reply.is_empty() {
        "(empty: not supported)".to_string()
    } else {
        String::from_utf8_lossy(&reply[..reply.len().min(40)]).into_owned()
    };
    RemoteError::Refused { request, code }
}

/// `Fresult[,errno][;data]` of a `vFile` reply: `Ok(result)` or `Err(errno)`; `None` when the
/// reply is not one (an empty reply: no `vFile`).
fn file_result(reply: &[u8]) -> Option<Result<u64, u64>> {
    let body = reply.strip_prefix(b"F")?;
    let head = body.split(|&b| b == b';').next()?;
    let mut parts = head.split(|&b| b == b',');
    let result = parts.next()?;
    if result.starts_with(b"-") {
        return Some(Err(parts.next().and_then(parse_hex).unwrap_or(0)));
    }
    parse_hex(result).map(Ok)
}

fn parse_supported(reply: &[u8]) -> Features {
    let mut f = Features { packet_size: 400, ..Features::default() };
    for item in reply.split(|&b| b == b';') {
        match item {
            b"QStartNoAckMode+" => f.no_ack = true,
            b"qXfer:features:read+" => f.target_xml = true,
            b"qXfer:auxv:read+" => f.auxv = true,
            b"qXfer:exec-file:read+" => f.exec_file = true,
            b"QPassSignals+" => f.pass_signals = true,
            b"multiprocess+" => f.multiprocess = true,
            b"fork-events+" | b"vfork-events+" => f.fork_events = true,
            _ => {
                if let Some(size) = item.strip_prefix(b"PacketSize=").and_then(parse_hex) {
                    f.packet_size = (size as usize).clamp(64, 1 << 20);
                }
            }
        }
    }
    f
}

/// Whether an ELF file is a fixed-address executable (`ET_EXEC`): its load bias is 0.
fn is_fixed_address_executable(data: &[u8]) -> bool {
    use object::Object;
    object::File::parse(data).map(|f| f.kind() == object::ObjectKind::Executable).unwrap_or(false)
}

/// Loadable segments of an ELF file: (start, end, executable, writable), link-time addresses.
fn segments(data: &[u8]) -> Vec<(u64, u64, bool, bool)> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let Ok(file) = ElfFile64::<object::Endianness>::parse(data) else { return Vec::new() };
    let endian = file.endian();
    file.elf_program_headers()
        .iter()
        .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
        .map(|p| {
            let flags = p.p_flags(endian);
            let start = p.p_vaddr(endian);
            (start, start + p.p_memsz(endian), flags & object::elf::PF_X != 0, flags & object::elf::PF_W != 0)
        })
        .collect()
}

impl Memory for RemoteTarget {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0usize;
        while done < buf.len() {
            let at = addr.wrapping_add(done as u64);
            let page = at & !(PAGE - 1);
            let bytes = self.page(page)?;
            let offset = (at - page) as usize;
            if offset >= bytes.len() {
                break;
            }
            let n = (bytes.len() - offset).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&bytes[offset..offset + n]);
            done += n;
            if bytes.len() < PAGE as usize {
                break;
            }
        }
        // The program's own bytes where rdb wrote breakpoints.
        for (&at, planted) in self.breakpoints.range(addr..addr.saturating_add(done as u64)) {
            if let Planted::Written(orig) = planted {
                buf[(at - addr) as usize] = *orig;
            }
        }
        Ok(done)
    }
}

impl Target for RemoteTarget {
    fn tid(&self) -> Pid {
        Pid(self.thread.tid as i32)
    }

    fn pid(&self) -> Pid {
        Pid(self.thread.pid.unwrap_or(self.thread.tid) as i32)
    }

    fn regs(&self) -> &Regs {
        &self.regs
    }

    fn xmm(&self, n: u16) -> io::Result<[u8; 16]> {
        let name = format!("xmm{n}");
        let (reg, offset) =
            self.layout.find(&name).cloned().ok_or_else(|| {
                io::Error::new(io::ErrorKind::Unsupported, format!("the stub has no register {name}"))
            })?;
        let bytes: Option<Vec<u8>> = match self.raw_registers.get(offset..offset + reg.size) {
            Some(b) => b.iter().copied().collect(),
            None => self.read_register(reg.number)?,
        };
        let bytes = bytes.filter(|b| b.len() >= 16).ok_or_else(|| {
            io::Error::new(io::ErrorKind::Unsupported, format!("the stub has {name} unavailable at this stop"))
        })?;
        Ok(bytes[..16].try_into().expect("16 bytes"))
    }

    fn load_bias(&self) -> u64 {
        self.load_bias
    }

    /// `/proc/PID/maps` read through the stub (`vFile`); a stub without file access gets the
    /// main binary's segments and the stack found by probing.
    fn mappings(&self) -> io::Result<Vec<Mapping>> {
        match self.maps_via_vfile()? {
            Some(maps) => Ok(maps),
            None => Ok(self.synthesized_maps()?),
        }
    }

    /// With `vFile`, from `/proc/PID/maps`; without, by probing which pages around `addr` the
    /// stub can read (the range found is remembered and listed by [`Target::mappings`] from
    /// then on).
    fn mapping_at(&self, addr: u64) -> io::Result<Option<Mapping>> {
        if let Some(maps) = self.maps_via_vfile()? {
            return Ok(maps.into_iter().find(|m| m.contains(addr)));
        }
        let known = self.synthesized_maps()?;
        if let Some(m) = known.iter().find(|m| m.contains(addr)) {
            return Ok(Some(m.clone()));
        }
        let found = self.probe(addr, &known, "[probed]")?;
        if let Some(m) = &found {
            self.link.borrow_mut().probed.push(m.clone());
        }
        Ok(found)
    }
}

impl Control for RemoteTarget {
    fn set_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        self.alive()?;
        if self.breakpoints.contains_key(&addr) {
            return Ok(());
        }
        let reply = self.request(format!("Z0,{addr:x},1").as_bytes())?;
        let planted = match reply.as_slice() {
            b"OK" => Planted::Stub,
            b"" => {
                // No Z0: write the int3 (hidden from reads, stepped over on resume).
                let orig = self.read_uncached(addr, 1)?[0];
                self.request_ok(format!("M{addr:x},1:cc").as_bytes())?;
                Planted::Written(orig)
            }
            _ => return Err(refused(format!("Z0,{addr:x},1").as_bytes(), &reply).into()),
        };
        self.link.get_mut().pages.remove(&(addr & !(PAGE - 1)));
        self.breakpoints.insert(addr, planted);
        Ok(())
    }

    fn remove_breakpoint(&mut self, addr: u64) -> io::Result<()> {
        self.alive()?;
        match self.breakpoints.remove(&addr) {
            Some(Planted::Stub) => self.request_ok(format!("z0,{addr:x},1").as_bytes())?,
            Some(Planted::Written(orig)) => self.request_ok(format!("M{addr:x},1:{orig:02x}").as_bytes())?,
            None => {}
        }
        self.link.get_mut().pages.remove(&(addr & !(PAGE - 1)));
        Ok(())
    }

    fn set_watchpoint(&mut self, slot: usize, watch: Watchpoint) -> io::Result<()> {
        self.alive()?;
        if slot >= rdb_tracee::debugreg::SLOTS {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no watchpoint slot {slot}")));
        }
        if self.watchpoints.contains_key(&slot) {
            self.remove_watchpoint(slot)?;
        }
        let request = format!("Z{},{:x},{:x}", watch_type(watch.kind), watch.addr, watch.len);
        self.request_ok(request.as_bytes())?;
        self.watchpoints.insert(slot, watch);
        Ok(())
    }

    fn remove_watchpoint(&mut self, slot: usize) -> io::Result<()> {
        self.alive()?;
        if let Some(w) = self.watchpoints.remove(&slot) {
            self.request_ok(format!("z{},{:x},{:x}", watch_type(w.kind), w.addr, w.len).as_bytes())?;
        }
        Ok(())
    }

    fn resume(&mut self) -> io::Result<Stop> {
        self.alive()?;
        match self.step_off_breakpoint()? {
            Some(Stop::Stepped) | None => {}
            Some(stop) => return Ok(stop),
        }
        let signal = self.pending.take();
        self.send_resume(false, signal)?;
        Ok(self.wait_stop(false, false)?)
    }

    fn step(&mut self) -> io::Result<Stop> {
        self.alive()?;
        if let Some(stop) = self.step_off_breakpoint()? {
            return Ok(stop);
        }
        let signal = self.pending.take();
        self.send_resume(true, signal)?;
        Ok(self.wait_stop(true, false)?)
    }

    fn threads(&self) -> io::Result<Vec<Pid>> {
        let mut out = Vec::new();
        let mut reply = self.request(b"qfThreadInfo")?;
        loop {
            match reply.split_first() {
                Some((b'm', list)) => {
                    for id in list.split(|&b| b == b',') {
                        let t = ThreadId::parse(id)
                            .ok_or_else(|| RemoteError::Protocol("a malformed thread list".into()))?;
                        out.push(Pid(t.tid as i32));
                    }
                }
                Some((b'l', _)) => break,
                _ => return Err(refused(b"qfThreadInfo", &reply).into()),
            }
            reply = self.request(b"qsThreadInfo")?;
        }
        out.sort();
        Ok(out)
    }
}

/// The `Z`/`z` type of a watchpoint kind.
fn watch_type(kind: WatchKind) -> u8 {
    match kind {
        WatchKind::Execute => 1,
        WatchKind::Write => 2,
        WatchKind::ReadWrite => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_features_are_read_from_gdbservers_and_qemus_replies() {
        let f = parse_supported(b"PacketSize=47ff;QPassSignals+;qXfer:auxv:read+;qXfer:features:read+;QStartNoAckMode+;multiprocess+;fork-events+;qXfer:exec-file:read+;vContSupported+");
        assert_eq!(f.packet_size, 0x47ff);
        assert!(f.no_ack && f.auxv && f.target_xml && f.pass_signals && f.multiprocess && f.fork_events && f.exec_file);
        let f = parse_supported(b"PacketSize=1000;qXfer:features:read+;qXfer:auxv:read+;vContSupported+;multiprocess+");
        assert_eq!(f.packet_size, 0x1000);
        assert!(!f.no_ack && !f.exec_file && !f.pass_signals);
        assert_eq!(parse_supported(b"").packet_size, 400);
    }

    #[test]
    fn file_replies_give_results_or_errnos() {
        assert_eq!(file_result(b"F3"), Some(Ok(3)));
        assert_eq!(file_result(b"F-1,2"), Some(Err(2)));
        assert_eq!(file_result(b"F1a;abc"), Some(Ok(0x1a)));
        assert_eq!(file_result(b""), None);
        assert_eq!(file_result(b"E01"), None);
    }

    #[test]
    fn segments_of_this_test_binary_include_its_code() {
        let data = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let segs = segments(&data);
        assert!(segs.iter().any(|&(_, _, x, _)| x), "{segs:?}");
        assert!(!is_fixed_address_executable(&data), "Rust test binaries are position-independent");
    }
}
