//! Writing a trace.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::chunk::{self, Digest};
use super::files::{KeepFiles, Keeper};
use super::safe_fs::Dir;
use super::{event, progress, Event, Header, Summary, TraceError, EVENTS_FILE, HEADER_FILE, SUMMARY_FILE};

/// Appends events to a new trace directory.
pub struct TraceWriter {
    dir: Dir,
    events: File,
    /// Chain digest of the last chunk written (the header's digest before the first).
    digest: Digest,
    buf: Vec<u8>,
    buf_events: u32,
    /// When the open chunk got its first event (coarse monotonic ns: see `sys`; the recorder
    /// thread cannot read the vDSO's exact clock).
    opened_ns: u64,
    keeper: Keeper,
    pub chunks: u64,
    pub events_written: u64,
    pub bytes_written: u64,
}

impl TraceWriter {
    /// Create the trace directory `dir` (or take over an empty one the user owns and nobody
    /// else may write: see [`Dir::create_private`]) and write the header. Files the trace
    /// depends on are kept as `keep` says.
    pub fn create(dir: &Path, header: &Header, keep: &KeepFiles) -> Result<Self, TraceError> {
        let d = Dir::create_private(dir, true).map_err(TraceError::io(dir))?;
        let keeper = Keeper::new(keep).map_err(TraceError::io(keep.store.clone().unwrap_or_default()))?;
        let events = d.create_file(EVENTS_FILE, false).map_err(TraceError::io(dir.join(EVENTS_FILE)))?;
        let json = serde_json::to_vec_pretty(header).expect("header serializes");
        let mut h = d.create_file(HEADER_FILE, false).map_err(TraceError::io(dir.join(HEADER_FILE)))?;
        h.write_all(&json).map_err(TraceError::io(dir.join(HEADER_FILE)))?;
        Ok(TraceWriter {
            dir: d,
            events,
            digest: chunk::header_digest(&json),
            buf: Vec::with_capacity(chunk::CHUNK_TARGET + 4096),
            buf_events: 0,
            opened_ns: crate::sys::monotonic_coarse_ns(),
            keeper,
            chunks: 0,
            events_written: 0,
            bytes_written: 0,
        })
    }

    /// The trace directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Append one event (buffered: a chunk is closed at [`chunk::CHUNK_TARGET`] bytes or after
    /// half a second).
    pub fn push(&mut self, ev: &Event) -> Result<(), TraceError> {
        if self.buf_events == 0 {
            self.opened_ns = crate::sys::monotonic_coarse_ns();
        }
        if let Event::Syscall { output: Some((_, bytes)), .. } = ev {
            progress::after_output(bytes);
        }
        event::encode(ev, &mut self.buf);
        self.buf_events += 1;
        self.events_written += 1;
        progress::event_done();
        if self.buf.len() >= chunk::CHUNK_TARGET
            || crate::sys::monotonic_coarse_ns().saturating_sub(self.opened_ns) >= super::CHUNK_MAX_AGE_NS
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Keep a copy (or hard link) of a file the program used, whose contents hash to `blake3`
    /// (see [`super::files`]). Never fails the recording: a file that cannot be kept is
    /// reported, and replay then needs the original.
    pub fn keep_file(&mut self, path: &Path, blake3: &[u8; 32]) {
        self.keeper.keep(&self.dir, path, blake3);
    }

    /// Bytes copied (rather than hard-linked) into the trace or its store so far.
    pub fn copied_bytes(&self) -> u64 {
        self.keeper.copied_bytes
    }

    fn write_chunk(&mut self, bytes: &[u8], digest: Digest) -> Result<(), TraceError> {
        // One write per chunk: a killed recorder leaves whole chunks and at most one torn one.
        self.events.write_all(bytes).map_err(TraceError::io(self.dir.path().join(EVENTS_FILE)))?;
        self.digest = digest;
        self.bytes_written += bytes.len() as u64;
        self.chunks += 1;
        Ok(())
    }

    /// Close the current chunk and write it out.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        if self.buf_events == 0 {
            return Ok(());
        }
        let (bytes, digest) = chunk::frame_events(&self.digest, &self.buf, self.buf_events)
            .map_err(TraceError::io(self.dir.path().join(EVENTS_FILE)))?;
        self.write_chunk(&bytes, digest)?;
        self.buf.clear();
        self.buf_events = 0;
        Ok(())
    }

    /// Flush, end the event stream and write the summary: the trace is complete.
    pub fn finish(mut self, mut summary: Summary) -> Result<PathBuf, TraceError> {
        self.flush()?;
        let (end, _) = chunk::frame_end(&[0; 32], &[0; 32]);
        summary.events = self.events_written;
        summary.chunks = self.chunks;
        summary.event_bytes = self.bytes_written + end.len() as u64;
        summary.kept_files = self.keeper.list().into_iter().filter(|k| !k.blake3.is_empty()).collect();
        let json = serde_json::to_vec_pretty(&summary).expect("summary serializes");
        let (end, digest) = chunk::frame_end(&self.digest, blake3::hash(&json).as_bytes());
        self.write_chunk(&end, digest)?;
        let ep = self.dir.path().join(EVENTS_FILE);
        self.events.sync_all().map_err(TraceError::io(&ep))?;
        let sp = self.dir.path().join(SUMMARY_FILE);
        let mut f = self.dir.create_file(SUMMARY_FILE, false).map_err(TraceError::io(&sp))?;
        f.write_all(&json).and_then(|_| f.sync_all()).map_err(TraceError::io(&sp))?;
        Ok(self.dir.path().to_path_buf())
    }
}
