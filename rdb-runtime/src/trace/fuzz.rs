//! Crafted traces: a structure-aware fuzzer for the trace reader that replay uses.
//!
//! Byte-level fuzzing rarely gets past a checksum; this one rebuilds valid framing around its
//! mutations so that every layer is reached: mutated event payloads inside chunks with valid
//! CRCs and chain digests, wrong event counts that check, reordered, dropped and duplicated
//! chunks, header and summary JSON edits re-bound into the chain, files swapped between traces,
//! truncations, bit flips, and special files (FIFOs, `/dev/zero`, `/dev/urandom`) in place of
//! trace files. Each input is written as a trace directory and read with [`Trace::open`] and
//! [`Trace::events`]; a panic, a slow read (a hang) or memory growth is a finding.
//!
//! `rdb-runtime/tests/crafted_fuzz.rs` runs it for a few seconds in CI; `bash fuzz/crafted.sh
//! SECONDS` runs it longer and prints the figures (executions, crashes, hangs, peak RSS).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use super::chunk::{self, ChunkHeader, Digest, Kind, HEADER_LEN};
use super::{Event, MappedFile, MemWrite, Stream, Tid, Trace, TraceError, TraceWriter};
use super::{EVENTS_FILE, HEADER_FILE, SUMMARY_FILE};

/// A file of a trace replaced by something that is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    None,
    EventsFifo,
    HeaderFifo,
    SummaryFifo,
    EventsLinkToDevZero,
    EventsLinkToUrandom,
    /// A character device node 1:5 (`/dev/zero`) named `events` (needs root; skipped otherwise).
    EventsDevZeroNode,
    EventsDirectory,
}

/// The files of one trace, in memory.
#[derive(Debug, Clone)]
pub struct TraceFiles {
    pub header: Vec<u8>,
    pub events: Vec<u8>,
    pub summary: Option<Vec<u8>>,
    pub special: Special,
}

fn sample_header() -> Vec<u8> {
    let (cpu, cpu_flags) = (String::new(), vec![]);
    serde_json::to_vec_pretty(&super::Header {
        format: super::FORMAT_NAME.into(),
        version: super::FORMAT_VERSION,
        rdb_version: "fuzz".into(),
        program: "/bin/true".into(),
        argv: vec!["true".into()],
        program_blake3: "00".into(),
        cwd: "/".into(),
        started_unix: 0,
        pinned_cpu: None,
        cpu,
        cpu_flags,
        kernel: String::new(),
        chaos_seed: None,
        cpuid_trapped: true,
        program_build: None,
    })
    .expect("serializes")
}

impl TraceFiles {
    /// A libFuzzer input as a trace: the first byte picks how the rest is used, as the whole
    /// event file (even) or as the raw contents of one chunk framed validly behind the header,
    /// its event count in the next 4 bytes (odd).
    pub fn from_fuzz_input(data: &[u8]) -> TraceFiles {
        let header = sample_header();
        let events = match data.split_first() {
            Some((mode, rest)) if mode & 1 == 1 && rest.len() >= 4 => {
                let count = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
                assemble(&header, &[Piece { kind: Kind::Events, events: count.max(1), raw: rest[4..].to_vec() }], None)
            }
            Some((_, rest)) => rest.to_vec(),
            None => Vec::new(),
        };
        TraceFiles { header, events, summary: None, special: Special::None }
    }

    /// Seeds for the libFuzzer target: the synthetic corpus in both input forms.
    pub fn fuzz_seeds(scratch: &Path) -> io::Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for t in synthetic_corpus(scratch)? {
            let mut whole = vec![0u8];
            whole.extend_from_slice(&t.events);
            out.push(whole);
            for p in split(&t.events).into_iter().filter(|p| p.kind == Kind::Events) {
                let mut one = vec![1u8];
                one.extend_from_slice(&p.events.to_le_bytes());
                one.extend_from_slice(&p.raw);
                out.push(one);
            }
        }
        Ok(out)
    }

    /// The files of a trace directory.
    pub fn from_dir(dir: &Path) -> io::Result<TraceFiles> {
        Ok(TraceFiles {
            header: std::fs::read(dir.join(HEADER_FILE))?,
            events: std::fs::read(dir.join(EVENTS_FILE))?,
            summary: std::fs::read(dir.join(SUMMARY_FILE)).ok(),
            special: Special::None,
        })
    }

    /// Write them as a fresh trace directory `dir` (whatever was there is removed).
    pub fn write_to(&self, dir: &Path) -> io::Result<()> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
        let put = |name: &str, data: &[u8]| std::fs::write(dir.join(name), data);
        let fifo = |name: &str| -> io::Result<()> {
            Ok(rustix::fs::mknodat(
                rustix::fs::CWD,
                dir.join(name),
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )?)
        };
        match self.special {
            Special::HeaderFifo => fifo(HEADER_FILE)?,
            _ => put(HEADER_FILE, &self.header)?,
        }
        match self.special {
            Special::EventsFifo => fifo(EVENTS_FILE)?,
            Special::EventsLinkToDevZero => std::os::unix::fs::symlink("/dev/zero", dir.join(EVENTS_FILE))?,
            Special::EventsLinkToUrandom => std::os::unix::fs::symlink("/dev/urandom", dir.join(EVENTS_FILE))?,
            Special::EventsDirectory => std::fs::create_dir(dir.join(EVENTS_FILE))?,
            Special::EventsDevZeroNode => {
                let dev = rustix::fs::makedev(1, 5);
                let made = rustix::fs::mknodat(
                    rustix::fs::CWD,
                    dir.join(EVENTS_FILE),
                    rustix::fs::FileType::CharacterDevice,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    dev,
                );
                if made.is_err() {
                    // Not root: a FIFO stands in.
                    fifo(EVENTS_FILE)?;
                }
            }
            _ => put(EVENTS_FILE, &self.events)?,
        }
        match (self.special, &self.summary) {
            (Special::SummaryFifo, _) => fifo(SUMMARY_FILE)?,
            (_, Some(s)) => put(SUMMARY_FILE, s)?,
            (_, None) => {}
        }
        Ok(())
    }
}

/// Open a trace and read all its events, as replay does. Returns the number of events and
/// whether the trace ends early.
pub fn read_all(dir: &Path) -> Result<(u64, bool), TraceError> {
    let trace = Trace::open(dir)?;
    let mut n = 0;
    let mut events = trace.events()?;
    while events.next_event()?.is_some() {
        n += 1;
    }
    Ok((n, trace.ends_early()))
}

/// One event of every kind (a seed for the corpus).
pub fn sample_events() -> Vec<Event> {
    vec![
        Event::Start {
            tid: Tid(7),
            exe: b"/bin/true".to_vec(),
            argv: vec![b"true".to_vec()],
            envp: vec![b"A=1".to_vec()],
            cwd: b"/".to_vec(),
        },
        Event::Exec {
            tid: Tid(7),
            exe: b"/bin/true".to_vec(),
            blake3: [3; 32],
            image: b"/bin/true".to_vec(),
            image_blake3: [3; 32],
            sp: 0x7ff0,
            stack: vec![1, 2, 3, 4],
            interp: Some((b"/lib64/ld-linux-x86-64.so.2".to_vec(), [4; 32])),
        },
        Event::Syscall {
            tid: Tid(7),
            nr: 0,
            args: [1, 2, 3, 4, 5, 6],
            ret: 2,
            writes: vec![MemWrite { addr: 0x1000, bytes: b"hi".to_vec() }],
            output: Some((Stream::Stdout, b"out\n".to_vec())),
            file: Some(MappedFile { path: b"/lib/x".to_vec(), blake3: [9; 32], size: 10, snapshot: Some(vec![0; 8]) }),
        },
        Event::NewProcess { tid: Tid(7), child: Tid(8), flags: 0x11 },
        Event::Signal { tid: Tid(8), sig: 17, asynchronous: true, siginfo: vec![0; 128] },
        Event::Rdtsc { tid: Tid(8), rax: 5, rdx: 6, rcx: Some(7) },
        Event::Cpuid { tid: Tid(8), leaf: 1, subleaf: 0, result: [0x806f8, 0x800, 0x7ffefbff, 0xbfebfbff] },
        Event::ThreadStart { tid: Tid(9) },
        Event::Interrupt { tid: Tid(9), regs: [3; 27], stack: vec![1; 16], pages: vec![0x5000], digest: [5; 32] },
        Event::Exit { tid: Tid(8), status: 0x100 },
    ]
}

/// Synthetic seed traces written with the real writer: a finished one of several chunks, and
/// one cut short.
pub fn synthetic_corpus(scratch: &Path) -> io::Result<Vec<TraceFiles>> {
    let mut out = Vec::new();
    for (i, finish) in [true, false].into_iter().enumerate() {
        let dir = scratch.join(format!("seed-{i}"));
        let _ = std::fs::remove_dir_all(&dir);
        let header: super::Header = serde_json::from_slice(&sample_header()).expect("valid");
        let mut w = TraceWriter::create(&dir, &header, &Default::default()).map_err(io::Error::other)?;
        for round in 0..3 {
            for e in sample_events() {
                w.push(&e).map_err(io::Error::other)?;
            }
            if round < 2 {
                w.flush().map_err(io::Error::other)?;
            }
        }
        if finish {
            w.finish(super::Summary { exit_status: 0, ..Default::default() }).map_err(io::Error::other)?;
        } else {
            w.flush().map_err(io::Error::other)?;
        }
        out.push(TraceFiles::from_dir(&dir)?);
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(out)
}

/// A chunk taken apart: its kind, event count and raw contents (decompressed events, or the
/// summary hash of an end chunk).
#[derive(Debug, Clone)]
struct Piece {
    kind: Kind,
    events: u32,
    raw: Vec<u8>,
}

/// Take a well-formed event file apart (stops at the first malformed chunk).
fn split(events: &[u8]) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + HEADER_LEN <= events.len() {
        let hb: [u8; HEADER_LEN] = events[pos..pos + HEADER_LEN].try_into().expect("len");
        let Ok(h) = ChunkHeader::decode(&hb) else { break };
        let end = pos + HEADER_LEN + h.payload_len as usize;
        if end > events.len() {
            break;
        }
        let payload = &events[pos + HEADER_LEN..end];
        let raw = match h.kind {
            Kind::End => payload.to_vec(),
            Kind::Events => match chunk::decompress(&h, payload) {
                Ok(r) => r,
                Err(_) => break,
            },
        };
        out.push(Piece { kind: h.kind, events: h.events, raw });
        pos = end;
    }
    out
}

/// Frame pieces again with valid CRCs and a valid chain from `header`; an end piece gets the
/// hash of `summary` when there is one.
fn assemble(header: &[u8], pieces: &[Piece], summary: Option<&[u8]>) -> Vec<u8> {
    let mut digest: Digest = chunk::header_digest(header);
    let mut out = Vec::new();
    for p in pieces {
        let (bytes, d) = match p.kind {
            Kind::Events => match chunk::frame_events(&digest, &p.raw, p.events) {
                Ok(x) => x,
                Err(_) => continue,
            },
            Kind::End => {
                let hash: Digest = match summary {
                    Some(s) => *blake3::hash(s).as_bytes(),
                    None => p.raw.get(..32).and_then(|h| h.try_into().ok()).unwrap_or([0; 32]),
                };
                chunk::frame_end(&digest, &hash)
            }
        };
        digest = d;
        out.extend_from_slice(&bytes);
    }
    out
}

/// xorshift64*: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

fn mutate_bytes(rng: &mut Rng, data: &mut Vec<u8>) {
    match rng.below(6) {
        0 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] ^= 1 << rng.below(8);
        }
        1 if !data.is_empty() => {
            let cut = rng.below(data.len());
            data.truncate(cut);
        }
        2 if data.len() >= 4 => {
            // A length or count field made huge, or zero.
            let i = rng.below(data.len() - 3);
            let v: u32 = [u32::MAX, 0x7fff_ffff, 0x0100_0000, 0][rng.below(4)];
            data[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        3 => {
            let i = rng.below(data.len() + 1);
            let n = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            data.splice(i..i, bytes);
        }
        4 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] = [0, 1, 2, 0xff, 0x80][rng.below(5)];
        }
        _ => {
            let i = rng.below(data.len() + 1);
            let n = rng.below(data.len() - i + 1).min(64);
            data.drain(i..i + n);
        }
    }
}

/// Edit one JSON value (string, number, array) somewhere in a document; falls back to a byte
/// mutation when the document is not JSON.
fn mutate_json(rng: &mut Rng, doc: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(doc) else {
        let mut d = doc.to_vec();
        mutate_bytes(rng, &mut d);
        return d;
    };
    if let serde_json::Value::Object(map) = &mut v {
        let keys: Vec<String> = map.keys().cloned().collect();
        if !keys.is_empty() {
            let k = &keys[rng.below(keys.len())];
            let new = match rng.below(6) {
                0 => serde_json::json!(u64::MAX),
                1 => serde_json::json!(-1),
                2 => serde_json::json!("x".repeat(rng.below(5000))),
                3 => serde_json::json!(null),
                4 => serde_json::json!([["/etc/shadow", "00"]]),
                _ => serde_json::json!(rng.next_u64() % 1000),
            };
            map.insert(k.clone(), new);
        }
    }
    serde_json::to_vec_pretty(&v).expect("serializes")
}

/// Make one crafted trace from `base` (and `other`, a second trace for swaps). Returns it and
/// the name of the mutation.
pub fn mutate(rng: &mut Rng, base: &TraceFiles, other: &TraceFiles) -> (TraceFiles, &'static str) {
    let mut t = base.clone();
    let pieces = split(&t.events);
    let kind = rng.below(12);
    let name = match kind {
        0 => {
            mutate_bytes(rng, &mut t.events);
            "event file bytes"
        }
        1 => {
            let target = rng.below(3);
            match target {
                0 => mutate_bytes(rng, &mut t.header),
                1 => mutate_bytes(rng, &mut t.events),
                _ => {
                    if let Some(s) = &mut t.summary {
                        mutate_bytes(rng, s)
                    }
                }
            }
            "bytes of any file"
        }
        2 | 3 if !pieces.is_empty() => {
            // A mutated payload inside valid framing.
            let mut p = pieces.clone();
            let i = rng.below(p.len());
            if p[i].kind == Kind::Events {
                mutate_bytes(rng, &mut p[i].raw);
            }
            t.events = assemble(&t.header, &p, t.summary.as_deref());
            "event payload inside valid framing"
        }
        4 if !pieces.is_empty() => {
            let mut p = pieces.clone();
            let i = rng.below(p.len());
            p[i].events = match rng.below(4) {
                0 => p[i].events.wrapping_add(1),
                1 => p[i].events.saturating_sub(1).max(1),
                2 => u32::MAX,
                _ => rng.next_u64() as u32 | 1,
            };
            t.events = assemble(&t.header, &p, t.summary.as_deref());
            "event count inside valid framing"
        }
        5 if !pieces.is_empty() => {
            let mut p = pieces.clone();
            let i = rng.below(p.len());
            let j = rng.below(p.len());
            match rng.below(3) {
                0 => p.swap(i, j),
                1 => {
                    let dup = p[i].clone();
                    p.insert(j, dup)
                }
                _ => {
                    p.remove(i);
                }
            }
            t.events = assemble(&t.header, &p, t.summary.as_deref());
            "chunks reordered, duplicated or dropped, re-chained"
        }
        6 => {
            t.header = mutate_json(rng, &t.header);
            t.events = assemble(&t.header, &pieces, t.summary.as_deref());
            "header edited and re-bound"
        }
        7 if t.summary.is_some() => {
            let s = mutate_json(rng, t.summary.as_deref().expect("some"));
            t.events = assemble(&t.header, &pieces, Some(&s));
            t.summary = Some(s);
            "summary edited and re-bound"
        }
        8 => {
            match rng.below(4) {
                0 => t.header = other.header.clone(),
                1 => t.events = other.events.clone(),
                2 => t.summary = other.summary.clone(),
                _ => t.summary = None,
            }
            "files swapped between traces"
        }
        9 => {
            t.special = [
                Special::EventsFifo,
                Special::HeaderFifo,
                Special::SummaryFifo,
                Special::EventsLinkToDevZero,
                Special::EventsLinkToUrandom,
                Special::EventsDevZeroNode,
                Special::EventsDirectory,
            ][rng.below(7)];
            "special file"
        }
        10 => {
            let cut = rng.below(t.events.len() + 1);
            t.events.truncate(cut);
            if rng.below(2) == 0 {
                t.summary = None;
            }
            "truncated"
        }
        _ => {
            // Mutate again on top of a mutation.
            let (inner, _) = mutate(rng, base, other);
            let (outer, _) = mutate(rng, &inner, other);
            return (outer, "two mutations");
        }
    };
    (t, name)
}

/// A crafted trace for replaying (not just reading): one event of `base` changed in a way the
/// codec accepts (a field of a decoded event set to another value), framed validly. Returns
/// `None` when `base` has no events chunk.
pub fn mutate_event(rng: &mut Rng, base: &TraceFiles) -> Option<TraceFiles> {
    let mut pieces = split(&base.events);
    let chunks: Vec<usize> = (0..pieces.len()).filter(|&i| pieces[i].kind == Kind::Events).collect();
    if chunks.is_empty() {
        return None;
    }
    let c = chunks[rng.below(chunks.len())];
    let mut d = super::event::Decoder::new(&pieces[c].raw);
    let mut events = Vec::new();
    while !d.is_empty() {
        events.push(d.next_event().ok()?);
    }
    if events.is_empty() {
        return None;
    }
    let i = rng.below(events.len());
    let pick = |rng: &mut Rng, v: u64| -> u64 {
        match rng.below(5) {
            0 => v.wrapping_add(1),
            1 => v.wrapping_sub(1),
            2 => 0,
            3 => u64::MAX,
            _ => rng.next_u64() % 4096,
        }
    };
    match &mut events[i] {
        Event::Syscall { tid, nr, args, ret, writes, .. } => match rng.below(5) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            1 => *nr = pick(rng, *nr),
            2 => {
                let a = rng.below(6);
                args[a] = pick(rng, args[a])
            }
            3 => *ret = pick(rng, *ret as u64) as i64,
            _ => {
                if let Some(w) = writes.first_mut() {
                    w.addr = pick(rng, w.addr)
                }
            }
        },
        Event::NewProcess { tid, child, flags } => match rng.below(3) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            1 => child.0 = pick(rng, child.0 as u64) as u32,
            _ => *flags = pick(rng, *flags),
        },
        Event::Exec { tid, sp, stack, .. } => match rng.below(3) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            1 => *sp = pick(rng, *sp),
            _ => stack.truncate(rng.below(stack.len() + 1)),
        },
        Event::Signal { tid, sig, siginfo, .. } => match rng.below(3) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            1 => *sig = pick(rng, *sig as u64) as i32,
            _ => siginfo.truncate(rng.below(siginfo.len() + 1)),
        },
        Event::Exit { tid, status } => match rng.below(2) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            _ => *status = pick(rng, *status as u64) as i32,
        },
        Event::Interrupt { tid, regs, .. } => match rng.below(2) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            _ => {
                let i = rng.below(regs.len());
                regs[i] = pick(rng, regs[i]);
            }
        },
        Event::Cpuid { tid, leaf, result, .. } => match rng.below(3) {
            0 => tid.0 = pick(rng, tid.0 as u64) as u32,
            1 => *leaf = pick(rng, *leaf as u64) as u32,
            _ => result[rng.below(4)] = pick(rng, result[0] as u64) as u32,
        },
        Event::Rdtsc { tid, .. } | Event::ThreadStart { tid } | Event::Start { tid, .. } => {
            tid.0 = pick(rng, tid.0 as u64) as u32
        }
    }
    let mut raw = Vec::new();
    for e in &events {
        super::event::encode(e, &mut raw);
    }
    pieces[c].raw = raw;
    pieces[c].events = events.len() as u32;
    let mut t = base.clone();
    t.events = assemble(&t.header, &pieces, t.summary.as_deref());
    // Keep the summary consistent (its byte count), so that the trace reaches the replayer.
    if let Some(summary) = &t.summary {
        if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(summary) {
            v["event_bytes"] = serde_json::json!(t.events.len());
            let summary = serde_json::to_vec_pretty(&v).expect("serializes");
            t.events = assemble(&t.header, &pieces, Some(&summary));
            t.summary = Some(summary);
        }
    }
    Some(t)
}

/// What a fuzzing run found.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub executions: u64,
    /// Panics: mutation name and message.
    pub crashes: Vec<(String, String)>,
    /// Reads that took longer than the hang limit: mutation name and seconds.
    pub hangs: Vec<(String, f64)>,
    pub slowest_ms: f64,
    /// Peak resident memory of the process (VmHWM), KiB.
    pub peak_rss_kib: u64,
    /// How the reads ended: "ok", "ok (cut short)", "corrupt", "not a trace", "version", "io".
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Executions per mutation.
    pub mutations: BTreeMap<&'static str, u64>,
}

/// Peak resident memory of this process in KiB (`VmHWM` in /proc/self/status).
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Fuzz for `duration` with `seed`, reading each crafted trace from `scratch`. A read that
/// takes longer than `hang` counts as a hang.
pub fn run(corpus: &[TraceFiles], scratch: &Path, duration: Duration, seed: u64, hang: Duration) -> Report {
    let mut rng = Rng::new(seed);
    let mut report = Report::default();
    let dir = scratch.join("crafted");
    let start = Instant::now();
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while start.elapsed() < duration && !corpus.is_empty() {
        let base = &corpus[rng.below(corpus.len())];
        let other = &corpus[rng.below(corpus.len())];
        let (crafted, name) = mutate(&mut rng, base, other);
        *report.mutations.entry(name).or_default() += 1;
        if crafted.write_to(&dir).is_err() {
            continue;
        }
        let t0 = Instant::now();
        let result = std::panic::catch_unwind(|| read_all(&dir));
        let secs = t0.elapsed().as_secs_f64();
        report.slowest_ms = report.slowest_ms.max(secs * 1000.0);
        if t0.elapsed() > hang {
            report.hangs.push((name.to_string(), secs));
        }
        report.executions += 1;
        let outcome = match result {
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                report.crashes.push((name.to_string(), msg));
                "panic"
            }
            Ok(Ok((_, false))) => "ok",
            Ok(Ok((_, true))) => "ok (cut short)",
            Ok(Err(TraceError::Corrupt { .. })) => "corrupt",
            Ok(Err(TraceError::NotATrace { .. })) => "not a trace",
            Ok(Err(TraceError::Version { .. })) => "version",
            Ok(Err(_)) => "io",
        };
        *report.outcomes.entry(outcome).or_default() += 1;
    }
    std::panic::set_hook(previous_hook);
    let _ = std::fs::remove_dir_all(&dir);
    report.peak_rss_kib = peak_rss_kib();
    report
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "executions: {}, crashes: {}, hangs: {}, slowest read: {:.1} ms, peak RSS: {} KiB",
            self.executions,
            self.crashes.len(),
            self.hangs.len(),
            self.slowest_ms,
            self.peak_rss_kib
        )?;
        writeln!(f, "outcomes: {:?}", self.outcomes)?;
        writeln!(f, "mutations: {:?}", self.mutations)?;
        for (m, msg) in self.crashes.iter().take(10) {
            writeln!(f, "crash after {m}: {msg}")?;
        }
        for (m, s) in self.hangs.iter().take(10) {
            writeln!(f, "hang after {m}: {s:.1} s")?;
        }
        Ok(())
    }
}
