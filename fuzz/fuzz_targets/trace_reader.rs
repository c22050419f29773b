//! Fuzz the trace reader replay uses: `Trace::open` and `Trace::events` on a trace directory
//! whose event file is the fuzz input, behind a well-formed header. Chunk framing, the digest
//! chain, decompression and event decoding must turn any bytes into events or an error, never
//! a panic, a hang or a huge allocation. Structure-aware mutations (valid checksums and chain
//! around mutated payloads, swapped files, special files) are in `rdb-runtime/src/trace/fuzz.rs`
//! and run by `bash fuzz/crafted.sh`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rdb_runtime::trace::fuzz::{read_all, TraceFiles};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile_dir();
    let files = TraceFiles::with_events(data.to_vec());
    files.write_to(&dir).expect("write trace files");
    let _ = read_all(&dir);
});

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rdb-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
