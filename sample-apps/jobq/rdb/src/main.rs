//! jobq: a scheduler that keeps jobs in a priority-ordered linked list.
//!
//! Usage: `jobq [COUNT]` (default 8). Each job gets a random priority read
//! from `/dev/urandom` and its creation time, is queued, and the queue is
//! then drained in priority order.
//!
//! The bug: `Queue::insert` overwrites the queued job when the new job has
//! the same priority as one already queued, so a job is silently lost, but
//! only in runs where two random priorities collide. Recording one failing
//! run and replaying it is the way to study it.

mod queue;

use queue::{Job, Queue};
use std::io::Read;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use rdb_macros::{rdb_begin, rdb_end};

/// Jobs created so far.
static JOBS_CREATED: AtomicUsize = AtomicUsize::new(0);

fn random_bytes(n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn main() -> ExitCode {
    let count: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 8,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: jobq [COUNT]");
            return ExitCode::from(2);
        }
    };
    let random = match random_bytes(count) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("jobq: cannot read /dev/urandom: {e}");
            return ExitCode::from(2);
        }
    };
    let mut queue = Queue::new();
    for (i, r) in random.iter().enumerate() {
        rdb_begin!();
        // Checks the jobs inserted so far (a region may not end a loop body: the body's closing
        // brace has no code of its own, so the region goes at the top of the next iteration).
        if queue.len() != JOBS_CREATED.load(Ordering::Relaxed) {
            println!("rdb: before job {i} (random byte {r}): {} queued, {} created", queue.len(), JOBS_CREATED.load(Ordering::Relaxed));
        }
        rdb_end!();
        let job = Job { id: i as u32, priority: r % 64, created: now_nanos(), name: format!("job-{i}") };
        JOBS_CREATED.fetch_add(1, Ordering::Relaxed);
        queue.insert(job);
    }
    rdb_begin!();
    if queue.len() != JOBS_CREATED.load(Ordering::Relaxed) {
        println!("rdb: after all jobs: {} queued, {} created", queue.len(), JOBS_CREATED.load(Ordering::Relaxed));
    }
    rdb_end!();
    println!("queued {} job(s)", queue.len());
    let mut done = 0;
    while let Some(job) = queue.pop() {
        println!("run {} (priority {}, created at {})", job.name, job.priority, job.created);
        done += 1;
    }
    let created = JOBS_CREATED.load(Ordering::Relaxed);
    println!("processed {done} of {created} jobs");
    if done == created {
        ExitCode::SUCCESS
    } else {
        eprintln!("jobq: lost {} job(s)", created - done);
        ExitCode::from(1)
    }
}
