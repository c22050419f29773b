//! A lost-update race: every thread repeatedly reads a shared counter, writes a log line (a
//! syscall, where rdb may switch threads) and stores the value it read plus one. When another
//! thread stores in between, updates are lost and the final count is below `threads * ops`.
//!
//! Usage: `race [THREADS] [OPS] [LOG]` (defaults 4, 200, /dev/null).

use std::fs::File;
use std::io::Write;
use rdb_macros::{debug_only, rdb_begin, rdb_end};
#[debug_only]
use std::sync::atomic::AtomicI64;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Debug-only: net updates lost so far, over all threads' region hits. A store can also undo
/// a loss: a thread that read a larger value than a stale store left behind raises the counter.
#[debug_only]
static LOST: AtomicI64 = AtomicI64::new(0);

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
        rdb_begin!();
        let now = COUNTER.load(Ordering::Relaxed);
        if now != seen {
            let delta = now as i64 - seen as i64;
            let lost = LOST.fetch_add(delta, Ordering::Relaxed) + delta;
            let what = if delta > 0 { "loses" } else { "gives back" };
            println!(
                "rdb: thread {t} op {i} read {seen} but the counter is {now} now: storing {} {what} {} update(s), net {lost} lost so far",
                seen + 1,
                delta.abs()
            );
        }
        rdb_end!();
        COUNTER.store(seen + 1, Ordering::Relaxed);
    }
}
