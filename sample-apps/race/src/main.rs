//! A lost-update race: every thread repeatedly reads a shared counter, writes a log line (a
//! syscall, where rdb may switch threads) and stores the value it read plus one. When another
//! thread stores in between, updates are lost and the final count is below `threads * ops`.
//!
//! Usage: `race [THREADS] [OPS] [LOG]` (defaults 4, 200, /dev/null).

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let ops: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    let log_path = args.get(3).cloned().unwrap_or_else(|| "/dev/null".into());
    let log = File::options().append(true).create(true).open(&log_path).expect("open the log");
    std::thread::scope(|s| {
        for t in 0..threads {
            let log = &log;
            s.spawn(move || worker(t, ops, log));
        }
    });
    let count = COUNTER.load(Ordering::Relaxed);
    println!("final count {count} of {} ({} updates lost)", threads * ops, threads * ops - count);
}

/// One thread's work: `ops` unsynchronised read / log / store steps.
fn worker(t: u64, ops: u64, log: &File) {
    for i in 0..ops {
        let seen = COUNTER.load(Ordering::Relaxed);
        let line = format!("thread {t} op {i} saw {seen}\n");
        let mut out: &File = log;
        out.write_all(line.as_bytes()).expect("write the log");
        COUNTER.store(seen + 1, Ordering::Relaxed);
    }
}
