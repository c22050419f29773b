//! The trace directory.
//!
//! ```text
//! TRACE/
//!   rdb-trace.json   header: format name + version (checked on open), program, argv, exe hash
//!   events           append-only stream of chunks (below)
//!   summary.json     written when recording finished; absent => the trace was cut short
//! ```
//!
//! A chunk is a 20-byte header — magic `RDBC`, compressed length, uncompressed length,
//! CRC-32 of the compressed bytes, event count (all `u32` little-endian) — followed by a zstd
//! frame holding encoded [`Event`]s (see [`event`]). A chunk is written with one `write` and
//! only complete chunks count: a recorder killed mid-chunk leaves a trace that replays up to its
//! last complete chunk. A checksum mismatch anywhere is corruption and the trace is refused.
//!
//! Stability: `FORMAT_VERSION` changes whenever the encoding changes; readers refuse other
//! versions rather than guess.

pub mod event;

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use event::{Event, MappedFile, MemWrite, Stream, Tid};

/// Name stored in the header's `format` field.
pub const FORMAT_NAME: &str = "rdb-trace";
/// Version of the directory layout and event encoding.
pub const FORMAT_VERSION: u32 = 1;

const HEADER_FILE: &str = "rdb-trace.json";
const EVENTS_FILE: &str = "events";
const SUMMARY_FILE: &str = "summary.json";
const CHUNK_MAGIC: &[u8; 4] = b"RDBC";
const CHUNK_HEADER: usize = 20;
/// Largest uncompressed chunk a reader accepts (a writer never goes near it).
const MAX_CHUNK: usize = 64 << 20;
/// The writer closes a chunk at this many uncompressed bytes...
const CHUNK_TARGET: usize = 256 << 10;
/// ...or when it has been open this long, so a killed recorder loses little.
const CHUNK_MAX_AGE_NS: u64 = 500_000_000;

/// Trace header (`rdb-trace.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// rdb version that wrote the trace.
    pub rdb_version: String,
    /// Executable of the root process (absolute path).
    pub program: String,
    /// Arguments, lossily decoded for display (the exact bytes are in the `Start` event).
    pub argv: Vec<String>,
    /// blake3 of the executable, hex.
    pub program_blake3: String,
    pub cwd: String,
    /// Seconds since the epoch when recording started.
    pub started_unix: u64,
    /// CPU the recorder and tracees were pinned to, if any.
    pub pinned_cpu: Option<usize>,
    /// CPU model and a hash of its feature flags: `cpuid` cannot be trapped on machines
    /// without CPUID faulting, so replay on another CPU model may diverge.
    #[serde(default)]
    pub cpu: String,
    /// Seed of the randomised thread schedule (`rdb record --chaos`), if one was used.
    #[serde(default)]
    pub chaos_seed: Option<u64>,
}

/// This machine's CPU model and a hash of its feature flags (from `/proc/cpuinfo`).
pub fn cpu_identity() -> String {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let flags = blake3::hash(field("flags").as_bytes()).to_hex();
    format!("{} (flags {})", field("model name"), &flags.as_str()[..16])
}

/// Written when recording finished (`summary.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Summary {
    /// Raw wait status of the root process.
    pub exit_status: i32,
    pub events: u64,
    pub syscalls: u64,
    pub processes: u64,
    pub chunks: u64,
    pub event_bytes: u64,
    pub duration_ms: u64,
    /// Distinct files mapped by the recorded processes, with their blake3.
    pub mapped_files: Vec<(String, String)>,
}

/// Trace errors (opening, reading, writing).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    #[error("{path}: not an rdb trace directory ({why})")]
    NotATrace { path: PathBuf, why: String },
    #[error("{path}: trace format version {found} is not supported (this rdb reads version {FORMAT_VERSION})")]
    Version { path: PathBuf, found: u32 },
    #[error("{path}: trace is corrupt at byte {offset} of the event stream: {why}")]
    Corrupt { path: PathBuf, offset: u64, why: String },
    #[error("cannot use {path}")]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TraceError + '_ {
    move |source| TraceError::Io { path: path.to_path_buf(), source }
}

/// Appends events to a new trace directory.
pub struct TraceWriter {
    dir: PathBuf,
    events: File,
    buf: Vec<u8>,
    buf_events: u32,
    /// When the open chunk got its first event (coarse monotonic ns: see `sys`; the recorder
    /// thread cannot read the vDSO's exact clock).
    opened_ns: u64,
    pub chunks: u64,
    pub events_written: u64,
    pub bytes_written: u64,
}

impl TraceWriter {
    /// Create `dir` (must not exist or be empty) and write the header.
    pub fn create(dir: &Path, header: &Header) -> Result<Self, TraceError> {
        if dir.exists() && fs::read_dir(dir).map_err(io_err(dir))?.next().is_some() {
            return Err(TraceError::Io {
                path: dir.to_path_buf(),
                source: io::Error::new(io::ErrorKind::AlreadyExists, "directory exists and is not empty"),
            });
        }
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let hp = dir.join(HEADER_FILE);
        let json = serde_json::to_vec_pretty(header).expect("header serializes");
        fs::write(&hp, json).map_err(io_err(&hp))?;
        let ep = dir.join(EVENTS_FILE);
        let events = File::create(&ep).map_err(io_err(&ep))?;
        Ok(TraceWriter {
            dir: dir.to_path_buf(),
            events,
            buf: Vec::with_capacity(CHUNK_TARGET + 4096),
            buf_events: 0,
            opened_ns: crate::sys::monotonic_coarse_ns(),
            chunks: 0,
            events_written: 0,
            bytes_written: 0,
        })
    }

    /// The trace directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Append one event (buffered; see the module docs for when chunks are closed).
    pub fn push(&mut self, ev: &Event) -> Result<(), TraceError> {
        if self.buf_events == 0 {
            self.opened_ns = crate::sys::monotonic_coarse_ns();
        }
        event::encode(ev, &mut self.buf);
        self.buf_events += 1;
        self.events_written += 1;
        if self.buf.len() >= CHUNK_TARGET
            || crate::sys::monotonic_coarse_ns().saturating_sub(self.opened_ns) >= CHUNK_MAX_AGE_NS
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Close the current chunk and write it out.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        if self.buf_events == 0 {
            return Ok(());
        }
        let payload = zstd::bulk::compress(&self.buf, 1).map_err(io_err(&self.dir))?;
        let mut chunk = Vec::with_capacity(CHUNK_HEADER + payload.len());
        chunk.extend_from_slice(CHUNK_MAGIC);
        chunk.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        chunk.extend_from_slice(&(self.buf.len() as u32).to_le_bytes());
        chunk.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        chunk.extend_from_slice(&self.buf_events.to_le_bytes());
        chunk.extend_from_slice(&payload);
        self.events.write_all(&chunk).map_err(io_err(&self.dir))?;
        self.bytes_written += chunk.len() as u64;
        self.chunks += 1;
        self.buf.clear();
        self.buf_events = 0;
        Ok(())
    }

    /// Flush and write the summary: the trace is complete.
    pub fn finish(mut self, mut summary: Summary) -> Result<PathBuf, TraceError> {
        self.flush()?;
        self.events.sync_all().map_err(io_err(&self.dir))?;
        summary.events = self.events_written;
        summary.chunks = self.chunks;
        summary.event_bytes = self.bytes_written;
        let sp = self.dir.join(SUMMARY_FILE);
        let json = serde_json::to_vec_pretty(&summary).expect("summary serializes");
        fs::write(&sp, json).map_err(io_err(&sp))?;
        Ok(self.dir)
    }
}

/// Where a chunk sits in the event file.
#[derive(Debug, Clone, Copy)]
struct ChunkRef {
    offset: u64,
    len: u32,
    raw_len: u32,
    events: u32,
}

/// An opened, integrity-checked trace.
pub struct TraceReader {
    pub dir: PathBuf,
    pub header: Header,
    /// `None` when the recording was cut short.
    pub summary: Option<Summary>,
    /// True when the event file ends inside a chunk (recorder killed mid-write).
    pub torn_tail: bool,
    events_path: PathBuf,
    chunks: Vec<ChunkRef>,
    next_chunk: usize,
    current: Vec<u8>,
    current_pos: usize,
    current_left: u32,
}

impl TraceReader {
    /// Open `dir`: check the header (format and version) and every chunk's checksum.
    pub fn open(dir: &Path) -> Result<Self, TraceError> {
        let hp = dir.join(HEADER_FILE);
        let not_trace = |why: String| TraceError::NotATrace { path: dir.to_path_buf(), why };
        if !dir.is_dir() {
            return Err(not_trace("no such directory".into()));
        }
        let raw = fs::read(&hp).map_err(|e| not_trace(format!("cannot read {HEADER_FILE}: {e}")))?;
        let value: serde_json::Value =
            serde_json::from_slice(&raw).map_err(|e| not_trace(format!("{HEADER_FILE} is not JSON: {e}")))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
            return Err(not_trace(format!("{HEADER_FILE} does not say format \"{FORMAT_NAME}\"")));
        }
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        if version != FORMAT_VERSION {
            return Err(TraceError::Version { path: dir.to_path_buf(), found: version });
        }
        let header: Header =
            serde_json::from_value(value).map_err(|e| not_trace(format!("{HEADER_FILE} is malformed: {e}")))?;
        let sp = dir.join(SUMMARY_FILE);
        let summary = match fs::read(&sp) {
            Ok(raw) => Some(serde_json::from_slice(&raw).map_err(|e| TraceError::Corrupt {
                path: dir.to_path_buf(),
                offset: 0,
                why: format!("{SUMMARY_FILE} is malformed: {e}"),
            })?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(TraceError::Io { path: sp, source: e }),
        };
        let events_path = dir.join(EVENTS_FILE);
        let mut f = File::open(&events_path).map_err(|e| not_trace(format!("cannot open {EVENTS_FILE}: {e}")))?;
        let (chunks, torn_tail) = scan_chunks(&mut f, dir)?;
        Ok(TraceReader {
            dir: dir.to_path_buf(),
            header,
            summary,
            torn_tail,
            events_path,
            chunks,
            next_chunk: 0,
            current: Vec::new(),
            current_pos: 0,
            current_left: 0,
        })
    }

    /// True when the recording did not finish (no summary, or a torn last chunk).
    pub fn ends_early(&self) -> bool {
        self.summary.is_none() || self.torn_tail
    }

    /// Number of complete chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Number of events in the complete chunks.
    pub fn event_count(&self) -> u64 {
        self.chunks.iter().map(|c| c.events as u64).sum()
    }

    /// Size of the event file's complete chunks in bytes.
    pub fn event_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.len as u64 + CHUNK_HEADER as u64).sum()
    }

    /// The next event, or `None` after the last complete chunk.
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        while self.current_left == 0 {
            if self.next_chunk >= self.chunks.len() {
                return Ok(None);
            }
            let c = self.chunks[self.next_chunk];
            self.next_chunk += 1;
            self.current = self.load_chunk(c)?;
            self.current_pos = 0;
            self.current_left = c.events;
        }
        let mut d = event::Decoder::new(&self.current[self.current_pos..]);
        let offset = self.chunks[self.next_chunk - 1].offset;
        let ev =
            d.next_event().map_err(|e| TraceError::Corrupt { path: self.dir.clone(), offset, why: e.to_string() })?;
        self.current_pos += d.position();
        self.current_left -= 1;
        Ok(Some(ev))
    }

    /// Position the reader so that its next event is the one at trace index `event` (0-based;
    /// past the last event, the reader is at the end). Loads and decodes the chunk holding it.
    pub fn seek(&mut self, event: u64) -> Result<(), TraceError> {
        let mut first = 0u64;
        for (i, c) in self.chunks.iter().copied().enumerate() {
            if event < first + c.events as u64 {
                self.current = self.load_chunk(c)?;
                self.next_chunk = i + 1;
                self.current_pos = 0;
                self.current_left = c.events;
                for _ in first..event {
                    self.next_event()?;
                }
                return Ok(());
            }
            first += c.events as u64;
        }
        self.next_chunk = self.chunks.len();
        self.current_left = 0;
        Ok(())
    }

    fn load_chunk(&self, c: ChunkRef) -> Result<Vec<u8>, TraceError> {
        use std::os::unix::fs::FileExt;
        let f = File::open(&self.events_path).map_err(io_err(&self.events_path))?;
        let mut payload = vec![0u8; c.len as usize];
        f.read_exact_at(&mut payload, c.offset + CHUNK_HEADER as u64).map_err(io_err(&self.events_path))?;
        let corrupt = |why: String| TraceError::Corrupt { path: self.dir.clone(), offset: c.offset, why };
        if crc32fast::hash(&payload) != read_u32(&header_bytes(&f, c.offset)?, 12) {
            return Err(corrupt("chunk checksum mismatch".into()));
        }
        let raw = zstd::bulk::decompress(&payload, c.raw_len as usize)
            .map_err(|e| corrupt(format!("chunk does not decompress: {e}")))?;
        if raw.len() != c.raw_len as usize {
            return Err(corrupt("chunk has the wrong uncompressed length".into()));
        }
        Ok(raw)
    }
}

fn header_bytes(f: &File, offset: u64) -> Result<[u8; CHUNK_HEADER], TraceError> {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; CHUNK_HEADER];
    f.read_exact_at(&mut h, offset).map_err(|source| TraceError::Io { path: PathBuf::from(EVENTS_FILE), source })?;
    Ok(h)
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Walk the chunk headers, checking magic, sizes and checksums. A chunk cut off by the end of
/// the file ends the scan (`torn = true`); anything else malformed is corruption.
fn scan_chunks(f: &mut File, dir: &Path) -> Result<(Vec<ChunkRef>, bool), TraceError> {
    let mut data = Vec::new();
    f.read_to_end(&mut data).map_err(io_err(dir))?;
    let mut chunks = Vec::new();
    let mut pos = 0usize;
    let corrupt = |offset: usize, why: &str| TraceError::Corrupt {
        path: dir.to_path_buf(),
        offset: offset as u64,
        why: why.to_string(),
    };
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < CHUNK_HEADER {
            if CHUNK_MAGIC.starts_with(&rest[..rest.len().min(4)]) {
                return Ok((chunks, true));
            }
            return Err(corrupt(pos, "bad chunk magic"));
        }
        if &rest[..4] != CHUNK_MAGIC {
            return Err(corrupt(pos, "bad chunk magic"));
        }
        let len = read_u32(rest, 4);
        let raw_len = read_u32(rest, 8);
        let crc = read_u32(rest, 12);
        let events = read_u32(rest, 16);
        if raw_len as usize > MAX_CHUNK || len as usize > MAX_CHUNK {
            return Err(corrupt(pos, "chunk larger than any writer produces"));
        }
        if rest.len() < CHUNK_HEADER + len as usize {
            return Ok((chunks, true));
        }
        let payload = &rest[CHUNK_HEADER..CHUNK_HEADER + len as usize];
        if crc32fast::hash(payload) != crc {
            return Err(corrupt(pos, "chunk checksum mismatch"));
        }
        chunks.push(ChunkRef { offset: pos as u64, len, raw_len, events });
        pos += CHUNK_HEADER + len as usize;
    }
    Ok((chunks, false))
}

/// Decode a whole event file image (used by the fuzz target and tests): every complete chunk
/// is checked and decoded. Never panics on any input.
pub fn decode_event_file(data: &[u8]) -> Result<Vec<Event>, String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + CHUNK_HEADER <= data.len() {
        let rest = &data[pos..];
        if &rest[..4] != CHUNK_MAGIC {
            return Err("bad magic".into());
        }
        let len = read_u32(rest, 4) as usize;
        let raw_len = read_u32(rest, 8) as usize;
        let crc = read_u32(rest, 12);
        let events = read_u32(rest, 16);
        if raw_len > MAX_CHUNK || rest.len() < CHUNK_HEADER + len {
            return Err("bad length".into());
        }
        let payload = &rest[CHUNK_HEADER..CHUNK_HEADER + len];
        if crc32fast::hash(payload) != crc {
            return Err("checksum".into());
        }
        let raw = zstd::bulk::decompress(payload, raw_len).map_err(|e| e.to_string())?;
        let mut d = event::Decoder::new(&raw);
        for _ in 0..events {
            out.push(d.next_event().map_err(|e| e.to_string())?);
        }
        pos += CHUNK_HEADER + len;
    }
    Ok(out)
}

/// Encode events into one chunk image (tests, fuzz seeds).
pub fn encode_chunk(events: &[Event]) -> Vec<u8> {
    let mut raw = Vec::new();
    for e in events {
        event::encode(e, &mut raw);
    }
    let payload = zstd::bulk::compress(&raw, 1).expect("in-memory compression");
    let mut chunk = Vec::new();
    chunk.extend_from_slice(CHUNK_MAGIC);
    chunk.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    chunk.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    chunk.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    chunk.extend_from_slice(&(events.len() as u32).to_le_bytes());
    chunk.extend_from_slice(&payload);
    chunk
}

/// Hex of a blake3 hash.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            rdb_version: "test".into(),
            program: "/bin/true".into(),
            argv: vec!["true".into()],
            program_blake3: "00".into(),
            cwd: "/".into(),
            started_unix: 0,
            pinned_cpu: None,
            cpu: String::new(),
            chaos_seed: None,
        }
    }

    fn ev(i: u32) -> Event {
        Event::Exit { tid: Tid(i), status: 0 }
    }

    fn write_trace(dir: &Path, n: u32, per_chunk: u32) {
        let mut w = TraceWriter::create(dir, &header()).unwrap();
        for i in 0..n {
            w.push(&ev(i)).unwrap();
            if (i + 1) % per_chunk == 0 {
                w.flush().unwrap();
            }
        }
        w.finish(Summary::default()).unwrap();
    }

    #[test]
    fn seeking_reads_on_from_any_event() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 100, 7);
        let mut r = TraceReader::open(&dir).unwrap();
        for at in [0u32, 1, 6, 7, 8, 50, 98, 99] {
            r.seek(at as u64).unwrap();
            let rest: Vec<Event> = std::iter::from_fn(|| r.next_event().unwrap()).collect();
            assert_eq!(rest, (at..100).map(ev).collect::<Vec<_>>(), "from {at}");
        }
        r.seek(100).unwrap();
        assert_eq!(r.next_event().unwrap(), None);
        r.seek(1000).unwrap();
        assert_eq!(r.next_event().unwrap(), None);
    }

    #[test]
    fn written_events_read_back_in_order() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 100, 7);
        let mut r = TraceReader::open(&dir).unwrap();
        assert!(!r.ends_early());
        for i in 0..100 {
            assert_eq!(r.next_event().unwrap(), Some(ev(i)));
        }
        assert_eq!(r.next_event().unwrap(), None);
    }

    #[test]
    fn torn_tail_reads_up_to_last_complete_chunk() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 20, 10);
        fs::remove_file(dir.join(SUMMARY_FILE)).unwrap();
        let ep = dir.join(EVENTS_FILE);
        let len = fs::metadata(&ep).unwrap().len();
        let f = File::options().write(true).open(&ep).unwrap();
        f.set_len(len - 3).unwrap();
        let mut r = TraceReader::open(&dir).unwrap();
        assert!(r.ends_early() && r.torn_tail);
        let mut n = 0;
        while r.next_event().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 10);
    }

    #[test]
    fn flipped_byte_is_corruption() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 20, 10);
        let ep = dir.join(EVENTS_FILE);
        let mut data = fs::read(&ep).unwrap();
        let mid = data.len() / 2;
        data[mid] ^= 0x40;
        fs::write(&ep, data).unwrap();
        match TraceReader::open(&dir) {
            Err(TraceError::Corrupt { .. }) => {}
            other => panic!("expected corruption, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn foreign_and_future_directories_are_refused() {
        let t = tempfile::tempdir().unwrap();
        assert!(matches!(TraceReader::open(t.path()), Err(TraceError::NotATrace { .. })));
        let dir = t.path().join("tr");
        write_trace(&dir, 1, 1);
        let hp = dir.join(HEADER_FILE);
        let text = fs::read_to_string(&hp).unwrap().replace("\"version\": 1", "\"version\": 99");
        fs::write(&hp, text).unwrap();
        assert!(matches!(TraceReader::open(&dir), Err(TraceError::Version { found: 99, .. })));
    }

    #[test]
    fn event_file_decoder_accepts_encoded_chunks() {
        let evs: Vec<Event> = (0..5).map(ev).collect();
        let img = encode_chunk(&evs);
        assert_eq!(decode_event_file(&img).unwrap(), evs);
        assert!(decode_event_file(&img[..img.len() - 1]).is_err() || img.len() <= CHUNK_HEADER);
    }
}
