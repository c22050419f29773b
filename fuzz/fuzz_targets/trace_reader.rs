//! Fuzz the trace reader: chunk framing, checksums, decompression and event decoding must
//! turn any byte string into events or an error, never a panic, hang or huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rdb_runtime::trace::{decode_event_file, event::Decoder};

fuzz_target!(|data: &[u8]| {
    // As an event file (chunks)...
    let _ = decode_event_file(data);
    // ...and as the uncompressed contents of one chunk.
    let mut d = Decoder::new(data);
    while !d.is_empty() {
        if d.next_event().is_err() {
            break;
        }
    }
});
