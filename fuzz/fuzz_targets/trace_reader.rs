//! Fuzz the trace reader replay uses: `Trace::open` and `Trace::events` on a trace directory
//! whose event file comes from the input (see `TraceFiles::from_fuzz_input`: the whole event
//! file, or the raw contents of a chunk framed validly so that the event decoder is reached).
//! Framing, the digest chain, decompression and event decoding must turn any bytes into events
//! or an error, never a panic, a hang or a huge allocation. The structure-aware crafted-trace
//! fuzzer (swapped files, special files, re-bound edits) is `bash fuzz/crafted.sh`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rdb_runtime::trace::fuzz::{read_all, TraceFiles};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("rdb-fuzz-{}", std::process::id()));
    TraceFiles::from_fuzz_input(data).write_to(&dir).expect("write trace files");
    let _ = read_all(&dir);
});
