//! Chunk framing of the event stream: the one place that writes and reads it.
//!
//! ```text
//! offset  size  field
//!      0     4  magic: "RDBC" (events) or "RDBE" (end of the stream)
//!      4     4  payload length (bytes that follow the header)
//!      8     4  raw length (payload after decompression; = payload length for "RDBE")
//!     12     4  number of events in the payload (0 for "RDBE")
//!     16    32  chain digest (below)
//!     48     4  CRC-32 of bytes 0..48
//!     52     …  payload: a zstd frame of encoded events, or for "RDBE" the blake3 of summary.json
//! ```
//!
//! All integers are little-endian `u32`. The chain digest of chunk *i* is
//! `blake3-derive-key("rdb-trace chunk chain", digest(i-1) ‖ bytes 0..16 ‖ payload)`, with
//! digest(-1) = `blake3-derive-key("rdb-trace header", rdb-trace.json)`: each chunk is bound to
//! the header and to every chunk before it, so a header, an event stream and a summary only
//! open together when they were written together. The header CRC makes the length and count
//! fields trustworthy before the payload is read: a chunk whose header checks but whose payload
//! runs past the end of the file was cut short (a killed recorder), anything else malformed is
//! corruption.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;

/// Magic of a chunk of events.
pub const MAGIC: &[u8; 4] = b"RDBC";
/// Magic of the end chunk, written once the recording finished.
pub const END_MAGIC: &[u8; 4] = b"RDBE";
/// Size of a chunk header.
pub const HEADER_LEN: usize = 52;
/// Largest raw (decompressed) chunk a reader accepts and a writer produces: memory used while
/// reading a trace is bounded by this (in practice by the largest chunk actually written,
/// [`CHUNK_TARGET`] plus one event).
pub const MAX_RAW: u32 = 1 << 30;
/// Largest payload: zstd's worst-case expansion of [`MAX_RAW`] bytes.
pub const MAX_PAYLOAD: u32 = MAX_RAW + (MAX_RAW >> 7) + (1 << 17);
/// The writer closes a chunk once it holds this many raw bytes.
pub const CHUNK_TARGET: usize = 256 << 10;
/// zstd window the reader allows (the writer's level 1 uses at most 2^19).
const WINDOW_LOG_MAX: u32 = 23;

/// A blake3 digest.
pub type Digest = [u8; 32];

/// Start of the chain: the digest of the header file's exact bytes.
pub fn header_digest(header_bytes: &[u8]) -> Digest {
    let mut h = blake3::Hasher::new_derive_key("rdb-trace header");
    h.update(header_bytes);
    *h.finalize().as_bytes()
}

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Events,
    End,
}

/// A decoded chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    pub kind: Kind,
    pub payload_len: u32,
    pub raw_len: u32,
    pub events: u32,
    pub digest: Digest,
}

impl ChunkHeader {
    /// The header's bytes (CRC included).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(match self.kind {
            Kind::Events => MAGIC,
            Kind::End => END_MAGIC,
        });
        b[4..8].copy_from_slice(&self.payload_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.raw_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.events.to_le_bytes());
        b[16..48].copy_from_slice(&self.digest);
        let crc = crc32fast::hash(&b[..48]);
        b[48..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parse and check a header: magic, CRC, bounds. Never trusts a field the CRC does not
    /// vouch for.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<ChunkHeader, &'static str> {
        let kind = match &b[..4] {
            m if m == MAGIC => Kind::Events,
            m if m == END_MAGIC => Kind::End,
            _ => return Err("bad chunk magic"),
        };
        if crc32fast::hash(&b[..48]) != u32_at(b, 48) {
            return Err("chunk header checksum mismatch (a length or count field is damaged)");
        }
        let h = ChunkHeader {
            kind,
            payload_len: u32_at(b, 4),
            raw_len: u32_at(b, 8),
            events: u32_at(b, 12),
            digest: b[16..48].try_into().expect("32 bytes"),
        };
        match kind {
            Kind::Events if h.raw_len > MAX_RAW || h.payload_len > MAX_PAYLOAD => {
                Err("chunk larger than any writer produces")
            }
            Kind::Events if h.events == 0 || h.raw_len == 0 => Err("empty chunk"),
            Kind::End if h.payload_len != 32 || h.raw_len != 32 || h.events != 0 => Err("malformed end chunk"),
            _ => Ok(h),
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The chain digest of a chunk whose header fields (without digest and CRC) are `fields`.
pub fn chain(prev: &Digest, fields: &[u8], payload: &[u8]) -> Digest {
    let mut h = blake3::Hasher::new_derive_key("rdb-trace chunk chain");
    h.update(prev);
    h.update(fields);
    h.update(payload);
    *h.finalize().as_bytes()
}

fn frame(prev: &Digest, kind: Kind, raw_len: u32, events: u32, payload: &[u8]) -> (Vec<u8>, Digest) {
    let mut header = ChunkHeader { kind, payload_len: payload.len() as u32, raw_len, events, digest: [0; 32] };
    let fields = header.encode();
    header.digest = chain(prev, &fields[..16], payload);
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(payload);
    (out, header.digest)
}

/// Frame `raw` (the encodings of `events` events) as the chunk after `prev`. Returns the
/// chunk's bytes and its digest.
pub fn frame_events(prev: &Digest, raw: &[u8], events: u32) -> std::io::Result<(Vec<u8>, Digest)> {
    if raw.len() > MAX_RAW as usize {
        return Err(std::io::Error::other(format!(
            "{} bytes of events in one chunk (one event larger than {} MiB?); the trace format allows {} MiB",
            raw.len(),
            MAX_RAW >> 20,
            MAX_RAW >> 20
        )));
    }
    let payload = zstd::bulk::compress(raw, 1)?;
    Ok(frame(prev, Kind::Events, raw.len() as u32, events, &payload))
}

/// The end chunk after `prev`: binds the summary file (its blake3) to the stream.
pub fn frame_end(prev: &Digest, summary_hash: &Digest) -> (Vec<u8>, Digest) {
    frame(prev, Kind::End, 32, 0, summary_hash)
}

/// Decompress an events chunk's payload, allocating only as bytes really come out.
pub fn decompress(h: &ChunkHeader, payload: &[u8]) -> Result<Vec<u8>, String> {
    let mut dec = zstd::stream::read::Decoder::with_buffer(payload).map_err(|e| e.to_string())?;
    dec.window_log_max(WINDOW_LOG_MAX).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity((h.raw_len as usize).min(CHUNK_TARGET * 2));
    dec.take(h.raw_len as u64 + 1).read_to_end(&mut out).map_err(|e| format!("chunk does not decompress: {e}"))?;
    if out.len() != h.raw_len as usize {
        return Err(format!("chunk decompresses to {} bytes, its header says {}", out.len(), h.raw_len));
    }
    Ok(out)
}

/// One step of a walk through an event file.
#[derive(Debug)]
pub enum Step {
    /// A complete chunk whose digest follows from the previous one.
    Chunk { offset: u64, header: ChunkHeader, payload: Vec<u8> },
    /// The file ends exactly after the previous chunk.
    Eof,
    /// The file ends inside a chunk (the recorder was killed while writing it).
    Torn,
}

/// Walks the chunks of an event file from its start, checking every header, the chain and
/// the bounds. Holds one payload at a time.
pub struct Walker {
    file: File,
    len: u64,
    pub offset: u64,
    pub digest: Digest,
    /// Number of chunks walked so far.
    pub chunks: u64,
}

impl Walker {
    /// Walk `file` (`len` bytes, fixed when the trace was opened) with the chain starting at
    /// `start` (the header digest).
    pub fn new(file: File, len: u64, start: Digest) -> Self {
        Walker { file, len, offset: 0, digest: start, chunks: 0 }
    }

    /// The next chunk; `Err((offset, why))` for corruption.
    pub fn step(&mut self) -> Result<Step, (u64, String)> {
        let at = self.offset;
        let left = self.len - at;
        if left == 0 {
            return Ok(Step::Eof);
        }
        let mut hb = [0u8; HEADER_LEN];
        let n = (left as usize).min(HEADER_LEN);
        self.file.read_exact_at(&mut hb[..n], at).map_err(|e| (at, format!("cannot read: {e}")))?;
        if n < HEADER_LEN {
            let m = n.min(4);
            return if hb[..m] == MAGIC[..m] || hb[..m] == END_MAGIC[..m] {
                Ok(Step::Torn)
            } else {
                Err((at, "bad chunk magic".into()))
            };
        }
        let header = ChunkHeader::decode(&hb).map_err(|why| (at, why.to_string()))?;
        if (header.payload_len as u64) > left - HEADER_LEN as u64 {
            return Ok(Step::Torn);
        }
        let mut payload = vec![0u8; header.payload_len as usize];
        self.file.read_exact_at(&mut payload, at + HEADER_LEN as u64).map_err(|e| (at, format!("cannot read: {e}")))?;
        if chain(&self.digest, &hb[..16], &payload) != header.digest {
            let why = if self.chunks == 0 {
                "the event stream does not belong to this header (rdb-trace.json): its first chunk's digest does not follow from the header"
            } else {
                "chunk digest mismatch: the chunk was damaged, or does not follow the chunk before it"
            };
            return Err((at, why.into()));
        }
        self.digest = header.digest;
        self.offset = at + HEADER_LEN as u64 + header.payload_len as u64;
        self.chunks += 1;
        Ok(Step::Chunk { offset: at, header, payload })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_bit_flip_is_caught() {
        let (bytes, _) = frame_events(&[7; 32], b"0123456789", 2).unwrap();
        let hb: [u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().unwrap();
        assert!(ChunkHeader::decode(&hb).is_ok());
        for bit in 0..HEADER_LEN * 8 {
            let mut b = hb;
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(ChunkHeader::decode(&b).is_err(), "flip of bit {bit} accepted");
        }
    }

    #[test]
    fn decompression_is_bounded_by_the_declared_length() {
        let raw = vec![0u8; 1 << 20];
        let (bytes, _) = frame_events(&[0; 32], &raw, 1).unwrap();
        let hb: [u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().unwrap();
        let mut h = ChunkHeader::decode(&hb).unwrap();
        assert_eq!(decompress(&h, &bytes[HEADER_LEN..]).unwrap().len(), 1 << 20);
        h.raw_len = 4096;
        assert!(decompress(&h, &bytes[HEADER_LEN..]).is_err());
    }
}
