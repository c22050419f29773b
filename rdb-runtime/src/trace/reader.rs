//! Opening and reading a trace.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::chunk::{self, Digest, Kind, Step, Walker};
use super::safe_fs::{self, Dir};
use super::{
    event, pack, progress, unhex, Event, Header, Summary, TraceError, EVENTS_FILE, FILES_DIR, FORMAT_NAME,
    FORMAT_VERSION, HEADER_FILE, MAX_JSON, SUMMARY_FILE,
};

/// How complete a trace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceState {
    /// The recording finished: the stream has its end chunk and the summary matches it.
    Complete,
    /// The recording was cut short (recorder killed): everything up to the last complete chunk
    /// replays. `torn`: the event file ends inside a chunk.
    CutShort { torn: bool },
}

/// An opened trace whose every part has been checked (see the module docs).
#[derive(Debug)]
pub struct Trace {
    dir: Dir,
    path: PathBuf,
    header: Header,
    header_digest: Digest,
    summary: Option<Summary>,
    state: TraceState,
    events_file: File,
    /// Bytes of the event file that hold complete chunks.
    valid_len: u64,
    chunks: u64,
    events: u64,
    /// Chain digest after the last complete chunk.
    last_digest: Digest,
    /// Where each chunk of events starts, for seeking.
    index: Arc<[ChunkStart]>,
}

/// Where a chunk of events starts: its offset, the chain digest before it, and the trace
/// index of its first event.
#[derive(Debug, Clone, Copy)]
struct ChunkStart {
    offset: u64,
    digest_before: Digest,
    first: u64,
    events: u32,
}

fn corrupt(path: PathBuf, offset: u64, why: impl Into<String>) -> TraceError {
    TraceError::Corrupt { path, offset, why: why.into() }
}

/// Open one of the trace's files, which must be a regular file.
fn open_part(dir: &Dir, base: &Path, name: &str) -> Result<Option<(File, u64)>, TraceError> {
    match dir.open_regular(name) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(corrupt(base.join(name), 0, e.to_string())),
        Err(e) => Err(TraceError::Io { path: base.join(name), source: e }),
    }
}

fn open_dir(path: &Path) -> Result<Dir, TraceError> {
    let not_trace = |why: String| TraceError::NotATrace { path: path.to_path_buf(), why };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_trace("no such file or directory".into())),
        Err(e) => return Err(TraceError::Io { path: path.to_path_buf(), source: e }),
        Ok(md) if md.is_file() => {
            return Err(not_trace(if pack::looks_like_pack(path) {
                "it is a packed trace (a file); `rdb replay` and `rdb info` unpack it, or unpack it with `tar --zstd -xf`"
                    .into()
            } else {
                "it is a file, not a trace directory or a packed trace".into()
            }))
        }
        Ok(md) if !md.is_dir() => return Err(not_trace("it is a special file, not a trace directory".into())),
        Ok(_) => {}
    }
    Dir::open(path).map_err(TraceError::io(path))
}

fn read_header(dir: &Dir, path: &Path) -> Result<(Header, Vec<u8>), TraceError> {
    let not_trace = |why: String| TraceError::NotATrace { path: path.to_path_buf(), why };
    let hp = path.join(HEADER_FILE);
    let (f, size) = open_part(dir, path, HEADER_FILE)?.ok_or_else(|| not_trace(format!("it has no {HEADER_FILE}")))?;
    let raw = safe_fs::read_bounded(&f, size, MAX_JSON).map_err(|e| corrupt(hp.clone(), 0, e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&raw).map_err(|e| not_trace(format!("{HEADER_FILE} is not JSON: {e}")))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
        return Err(not_trace(format!("{HEADER_FILE} does not say format \"{FORMAT_NAME}\"")));
    }
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version != FORMAT_VERSION as u64 {
        return Err(TraceError::Version { path: path.to_path_buf(), found: version.min(u32::MAX as u64) as u32 });
    }
    let header: Header =
        serde_json::from_value(value).map_err(|e| corrupt(hp, 0, format!("{HEADER_FILE} is malformed: {e}")))?;
    Ok((header, raw))
}

fn read_summary(dir: &Dir, path: &Path) -> Result<Option<(Summary, Vec<u8>)>, TraceError> {
    let sp = path.join(SUMMARY_FILE);
    let Some((f, size)) = open_part(dir, path, SUMMARY_FILE)? else { return Ok(None) };
    let raw = safe_fs::read_bounded(&f, size, MAX_JSON).map_err(|e| corrupt(sp.clone(), 0, e.to_string()))?;
    let summary = serde_json::from_slice(&raw).map_err(|e| corrupt(sp, 0, format!("malformed: {e}")))?;
    Ok(Some((summary, raw)))
}

/// Decode all `count` events of a raw chunk: they must use up its bytes exactly. `Cpuid`
/// events belong only in a trace recorded with `cpuid` trapped.
fn check_events(raw: &[u8], count: u32, cpuid_trapped: bool) -> Result<(), String> {
    let mut d = event::Decoder::new(raw);
    for i in 0..count {
        let ev = d.next_event().map_err(|e| format!("event {i} of the chunk: {e}"))?;
        if !cpuid_trapped && matches!(ev, Event::Cpuid { .. }) {
            return Err(format!("event {i} of the chunk is a cpuid event, but the header says cpuid was not trapped"));
        }
    }
    if !d.is_empty() {
        return Err(format!(
            "the chunk holds more than the {count} events its header counts ({} bytes left over)",
            raw.len() - d.position()
        ));
    }
    Ok(())
}

impl Trace {
    /// Open and check a trace directory (see the module docs). Memory use is bounded by the
    /// largest chunk.
    pub fn open(path: &Path) -> Result<Trace, TraceError> {
        let dir = open_dir(path)?;
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let (header, header_raw) = read_header(&dir, &path)?;
        let ep = path.join(EVENTS_FILE);
        let (events_file, len) =
            open_part(&dir, &path, EVENTS_FILE)?.ok_or_else(|| corrupt(ep.clone(), 0, "the event file is missing"))?;
        let summary = read_summary(&dir, &path)?;
        let header_digest = chunk::header_digest(&header_raw);
        let mut walker = Walker::new(events_file.try_clone().map_err(TraceError::io(&ep))?, len, header_digest);
        let mut events = 0u64;
        let mut end: Option<Digest> = None;
        let mut torn = false;
        let mut last_digest = header_digest;
        let mut valid_len = 0;
        let mut index = Vec::new();
        loop {
            match walker.step().map_err(|(at, why)| corrupt(ep.clone(), at, why))? {
                Step::Eof => break,
                Step::Torn => {
                    torn = true;
                    break;
                }
                Step::Chunk { offset, header: h, payload } => {
                    if end.is_some() {
                        return Err(corrupt(ep, offset, "data after the end of the event stream"));
                    }
                    match h.kind {
                        Kind::End => end = Some(payload[..32].try_into().expect("32 bytes")),
                        Kind::Events => {
                            let raw =
                                chunk::decompress(&h, &payload).map_err(|why| corrupt(ep.clone(), offset, why))?;
                            drop(payload);
                            check_events(&raw, h.events, header.cpuid_trapped)
                                .map_err(|why| corrupt(ep.clone(), offset, why))?;
                            index.push(ChunkStart {
                                offset,
                                digest_before: last_digest,
                                first: events,
                                events: h.events,
                            });
                            events += h.events as u64;
                            last_digest = h.digest;
                            valid_len = walker.offset;
                        }
                    }
                }
            }
        }
        let event_chunks = walker.chunks - end.is_some() as u64;
        let sp = path.join(SUMMARY_FILE);
        let (state, summary) = match (end, summary) {
            (Some(want), Some((s, raw))) => {
                if blake3::hash(&raw).as_bytes() != &want {
                    return Err(corrupt(
                        sp,
                        0,
                        "it does not belong to this event stream (its blake3 is not the one the stream ends with)",
                    ));
                }
                if s.events != events || s.chunks != event_chunks || s.event_bytes != len {
                    return Err(corrupt(
                        sp,
                        0,
                        format!(
                            "it counts {} events in {} chunks ({} bytes), the event stream has {events} in {event_chunks} ({len} bytes)",
                            s.events, s.chunks, s.event_bytes
                        ),
                    ));
                }
                (TraceState::Complete, Some(s))
            }
            // Killed after ending the stream but before writing the summary.
            (Some(_), None) => (TraceState::CutShort { torn: false }, None),
            (None, Some(_)) => {
                return Err(corrupt(
                    sp,
                    0,
                    "the event stream was never ended (the recording did not finish), so this summary does not belong to it",
                ))
            }
            (None, None) => (TraceState::CutShort { torn }, None),
        };
        Ok(Trace {
            dir,
            path,
            header,
            header_digest,
            summary,
            state,
            events_file,
            valid_len,
            chunks: event_chunks,
            events,
            last_digest,
            index: index.into(),
        })
    }

    /// Read only the header and the summary (unchecked against the events): for listings.
    pub fn peek(path: &Path) -> Result<(Header, Option<Summary>), TraceError> {
        let dir = open_dir(path)?;
        let (header, _) = read_header(&dir, path)?;
        Ok((header, read_summary(&dir, path)?.map(|(s, _)| s)))
    }

    /// The trace directory (canonical).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// `None` when the recording was cut short.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    pub fn state(&self) -> TraceState {
        self.state
    }

    /// True when the recording did not finish.
    pub fn ends_early(&self) -> bool {
        self.state != TraceState::Complete
    }

    /// Number of complete chunks of events.
    pub fn chunk_count(&self) -> u64 {
        self.chunks
    }

    /// Number of events in the complete chunks.
    pub fn event_count(&self) -> u64 {
        self.events
    }

    /// Size of the event file's complete chunks in bytes.
    pub fn event_bytes(&self) -> u64 {
        self.valid_len
    }

    /// The events, in order, checked again as they are read (the file must not have changed
    /// since [`Trace::open`]).
    pub fn events(&self) -> Result<EventReader, TraceError> {
        let ep = self.path.join(EVENTS_FILE);
        let file = self.events_file.try_clone().map_err(TraceError::io(&ep))?;
        Ok(EventReader {
            walker: Walker::new(file, self.valid_len, self.header_digest),
            path: ep,
            expected: self.last_digest,
            raw: Vec::new(),
            pos: 0,
            left: 0,
            offset: 0,
            done: false,
            index: self.index.clone(),
            valid_len: self.valid_len,
        })
    }

    /// The trace's copy of the file whose contents hash to `blake3`, opened for reading (a
    /// regular file, symlinks refused), with its size; `None` when the trace has none.
    pub fn open_kept(&self, blake3: &[u8; 32]) -> Option<(PathBuf, File, u64)> {
        let files = self.dir.subdir(FILES_DIR, false).ok()?;
        let name = super::hex(blake3);
        let (f, size) = files.open_regular(&name).ok()?;
        Some((self.path.join(FILES_DIR).join(name), f, size))
    }

    /// The executable the trace was recorded from, as it was then: the trace's kept copy, else
    /// the original path while its contents are unchanged; `None` when neither is at hand.
    pub fn recorded_executable(&self) -> Option<PathBuf> {
        let hash = unhex(&self.header.program_blake3)?;
        if let Some((path, _, _)) = self.open_kept(&hash) {
            return Some(path);
        }
        let original = Path::new(&self.header.program);
        let bytes = std::fs::read(original).ok()?;
        (*blake3::hash(&bytes).as_bytes() == hash).then(|| original.to_path_buf())
    }

    /// Names (hashes) and sizes of the kept files present in `files/`.
    pub fn kept_files(&self) -> Vec<([u8; 32], u64)> {
        let Ok(files) = self.dir.subdir(FILES_DIR, false) else { return Vec::new() };
        let Ok(names) = files.entries() else { return Vec::new() };
        let mut out: Vec<([u8; 32], u64)> = names
            .filter_map(|n| {
                let hash = unhex(n.to_str()?)?;
                let (_, size) = files.open_regular(n.to_str()?).ok()?;
                Some((hash, size))
            })
            .collect();
        out.sort();
        out
    }
}

/// Streams the events of an opened trace, one chunk in memory at a time.
pub struct EventReader {
    walker: Walker,
    path: PathBuf,
    expected: Digest,
    raw: Vec<u8>,
    pos: usize,
    left: u32,
    offset: u64,
    done: bool,
    index: Arc<[ChunkStart]>,
    valid_len: u64,
}

impl EventReader {
    /// Position the reader so that its next event is the one at trace index `event` (0-based;
    /// past the last event, the reader is at the end). The chunk holding it is read and
    /// checked again (its chain digest from the one before it).
    pub fn seek(&mut self, event: u64) -> Result<(), TraceError> {
        let i = self.index.partition_point(|c| c.first + c.events as u64 <= event);
        self.left = 0;
        self.done = false;
        self.raw.clear();
        self.pos = 0;
        let Some(c) = self.index.get(i).copied() else {
            // At the end: the walk's next step finds the end and checks the last digest.
            self.walker.offset = self.valid_len;
            self.walker.digest = self.expected;
            self.walker.chunks = self.index.len() as u64;
            return Ok(());
        };
        self.walker.offset = c.offset;
        self.walker.digest = c.digest_before;
        self.walker.chunks = i as u64;
        self.load()?;
        for _ in c.first..event {
            let mut d = event::Decoder::new(&self.raw[self.pos..]);
            d.next_event().map_err(|e| corrupt(self.path.clone(), self.offset, e.to_string()))?;
            self.pos += d.position();
            self.left -= 1;
        }
        Ok(())
    }

    /// Read chunks until one has events left; false at the end.
    fn load(&mut self) -> Result<bool, TraceError> {
        while self.left == 0 {
            if self.done {
                return Ok(false);
            }
            let step = self.walker.step().map_err(|(at, why)| corrupt(self.path.clone(), at, why))?;
            match step {
                Step::Chunk { offset, header, payload } if header.kind == Kind::Events => {
                    self.raw =
                        chunk::decompress(&header, &payload).map_err(|why| corrupt(self.path.clone(), offset, why))?;
                    self.pos = 0;
                    self.left = header.events;
                    self.offset = offset;
                }
                _ => {
                    self.done = true;
                    if self.walker.digest != self.expected {
                        return Err(corrupt(
                            self.path.clone(),
                            self.walker.offset,
                            "the event file changed while it was read",
                        ));
                    }
                }
            }
        }
        Ok(true)
    }

    /// The next event, or `None` after the last complete chunk.
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        if !self.load()? {
            return Ok(None);
        }
        let mut d = event::Decoder::new(&self.raw[self.pos..]);
        let ev = d.next_event().map_err(|e| corrupt(self.path.clone(), self.offset, e.to_string()))?;
        self.pos += d.position();
        self.left -= 1;
        if self.left == 0 && self.pos != self.raw.len() {
            return Err(corrupt(self.path.clone(), self.offset, "the chunk holds more events than its header counts"));
        }
        progress::event_done();
        Ok(Some(ev))
    }
}

impl Iterator for EventReader {
    type Item = Result<Event, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Tid, TraceWriter, FORMAT_VERSION};

    pub(crate) fn header(program: &str) -> Header {
        Header {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            rdb_version: "test".into(),
            program: program.into(),
            argv: vec![program.into()],
            program_blake3: "00".into(),
            cwd: "/".into(),
            started_unix: 0,
            pinned_cpu: None,
            cpu: String::new(),
            cpu_flags: vec![],
            kernel: String::new(),
            chaos_seed: None,
            cpuid_trapped: false,
            program_build: None,
        }
    }

    fn ev(i: u32) -> Event {
        Event::Exit { tid: Tid(i), status: 0 }
    }

    fn write_trace(dir: &Path, n: u32, per_chunk: u32, finish: bool) {
        let mut w = TraceWriter::create(dir, &header("/bin/true"), &Default::default()).unwrap();
        for i in 0..n {
            w.push(&ev(i)).unwrap();
            if (i + 1) % per_chunk == 0 {
                w.flush().unwrap();
            }
        }
        if finish {
            w.finish(Summary::default()).unwrap();
        } else {
            w.flush().unwrap();
        }
    }

    fn read_all(t: &Trace) -> Result<Vec<Event>, TraceError> {
        t.events()?.collect()
    }

    #[test]
    fn written_events_read_back_in_order() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 100, 7, true);
        let tr = Trace::open(&dir).unwrap();
        assert_eq!(tr.state(), TraceState::Complete);
        assert_eq!(tr.event_count(), 100);
        assert_eq!(tr.chunk_count(), 15);
        assert_eq!(read_all(&tr).unwrap(), (0..100).map(ev).collect::<Vec<_>>());
    }

    #[test]
    fn seeking_reads_on_from_any_event() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 100, 7, true);
        let tr = Trace::open(&dir).unwrap();
        let mut r = tr.events().unwrap();
        for at in [0u32, 1, 6, 7, 8, 50, 98, 99, 3] {
            r.seek(at as u64).unwrap();
            let rest: Vec<Event> = std::iter::from_fn(|| r.next_event().unwrap()).collect();
            assert_eq!(rest, (at..100).map(ev).collect::<Vec<_>>(), "from {at}");
        }
        r.seek(100).unwrap();
        assert_eq!(r.next_event().unwrap(), None);
        r.seek(1000).unwrap();
        assert_eq!(r.next_event().unwrap(), None);
        r.seek(42).unwrap();
        assert_eq!(r.next_event().unwrap(), Some(ev(42)));
    }

    #[test]
    fn torn_tail_reads_up_to_last_complete_chunk() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 20, 10, false);
        let ep = dir.join(EVENTS_FILE);
        let len = std::fs::metadata(&ep).unwrap().len();
        File::options().write(true).open(&ep).unwrap().set_len(len - 3).unwrap();
        let tr = Trace::open(&dir).unwrap();
        assert_eq!(tr.state(), TraceState::CutShort { torn: true });
        assert_eq!(read_all(&tr).unwrap().len(), 10);
    }

    #[test]
    fn every_byte_flip_of_a_complete_trace_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("tr");
        write_trace(&dir, 30, 10, true);
        let ep = dir.join(EVENTS_FILE);
        let good = std::fs::read(&ep).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            std::fs::write(&ep, &bad).unwrap();
            match Trace::open(&dir) {
                Err(TraceError::Corrupt { .. }) => {}
                other => panic!("flip at byte {i}: {:?}", other.map(|t| t.state())),
            }
        }
    }

    #[test]
    fn parts_of_two_traces_do_not_open_together() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        write_trace(&a, 5, 5, true);
        let mut w = TraceWriter::create(&b, &header("/bin/false"), &Default::default()).unwrap();
        for i in 0..5 {
            w.push(&ev(i + 1)).unwrap();
        }
        w.finish(Summary { exit_status: 256, ..Summary::default() }).unwrap();
        for name in [HEADER_FILE, EVENTS_FILE, SUMMARY_FILE] {
            let c = t.path().join(format!("mixed-{name}"));
            std::fs::create_dir(&c).unwrap();
            for part in [HEADER_FILE, EVENTS_FILE, SUMMARY_FILE] {
                let from = if part == name { &b } else { &a };
                std::fs::copy(from.join(part), c.join(part)).unwrap();
            }
            match Trace::open(&c) {
                Err(TraceError::Corrupt { path, .. }) => {
                    let want = if name == HEADER_FILE { EVENTS_FILE } else { SUMMARY_FILE };
                    assert!(path.ends_with(want) || path.ends_with(name), "{name}: {}", path.display())
                }
                other => panic!("{name} from another trace: {:?}", other.map(|t| t.state())),
            }
        }
    }

    #[test]
    fn a_cpuid_event_needs_a_header_that_says_cpuid_was_trapped() {
        let t = tempfile::tempdir().unwrap();
        for trapped in [false, true] {
            let dir = t.path().join(format!("trapped-{trapped}"));
            let h = Header { cpuid_trapped: trapped, ..header("/bin/true") };
            let mut w = TraceWriter::create(&dir, &h, &Default::default()).unwrap();
            w.push(&ev(1)).unwrap();
            w.push(&Event::Cpuid { tid: Tid(1), leaf: 0, subleaf: 0, result: [0x24, 1, 2, 3] }).unwrap();
            w.finish(Summary::default()).unwrap();
            match Trace::open(&dir) {
                Ok(_) => assert!(trapped),
                Err(TraceError::Corrupt { why, .. }) => {
                    assert!(!trapped);
                    assert!(why.contains("cpuid event, but the header says cpuid was not trapped"), "{why}");
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn foreign_and_future_directories_are_refused() {
        let t = tempfile::tempdir().unwrap();
        assert!(matches!(Trace::open(t.path()), Err(TraceError::NotATrace { .. })));
        let dir = t.path().join("tr");
        write_trace(&dir, 1, 1, true);
        let hp = dir.join(HEADER_FILE);
        let text =
            std::fs::read_to_string(&hp).unwrap().replace(&format!("\"version\": {FORMAT_VERSION}"), "\"version\": 99");
        std::fs::write(&hp, text).unwrap();
        assert!(matches!(Trace::open(&dir), Err(TraceError::Version { found: 99, .. })));
        let file = t.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        match Trace::open(&file) {
            Err(TraceError::NotATrace { why, .. }) => assert!(why.contains("is a file"), "{why}"),
            other => panic!("{:?}", other.map(|t| t.state())),
        }
    }
}
