//! `rdb info`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;
use rdb_runtime::trace::{event::describe_status, Event, TraceReader};

use crate::traces;

/// Describe a trace: program, arguments, processes, events, size, duration.
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory (default: the latest recording).
    trace: Option<PathBuf>,
    /// Also list every event (index, thread, description).
    #[arg(long)]
    events: bool,
}

pub fn run(a: Args) -> Result<i32> {
    // Only prints: a reader that stops early (`rdb info --events | head`) ends it quietly,
    // as with other Unix tools, instead of a panic on a broken pipe.
    // SAFETY: restores the default action of one signal; no handler involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let dir = traces::resolve(a.trace)?;
    let mut r = TraceReader::open(&dir)?;
    let h = r.header.clone();
    println!("trace:      {}", std::fs::canonicalize(&dir).unwrap_or(dir.clone()).display());
    println!("format:     {} version {}", h.format, h.version);
    println!("program:    {}", h.program);
    println!("arguments:  {:?}", h.argv);
    println!("blake3:     {}", h.program_blake3);
    println!("cwd:        {}", h.cwd);
    if let Some(seed) = h.chaos_seed {
        println!("schedule:   chaos, seed {seed}");
    }
    let (mut procs, mut syscalls, mut signals, mut execs) = (BTreeSet::new(), 0u64, 0u64, 0u64);
    let mut threads = BTreeSet::new();
    let mut index = 0u64;
    while let Some(e) = r.next_event()? {
        if a.events {
            println!("#{index:<6} {:>7} {}", e.tid().to_string(), e.describe());
        }
        index += 1;
        procs.insert(e.tid());
        match e {
            Event::Syscall { .. } => syscalls += 1,
            Event::Signal { .. } => signals += 1,
            Event::Exec { .. } => execs += 1,
            Event::NewProcess { child, flags, .. } if flags & 0x10000 != 0 => {
                // CLONE_THREAD
                threads.insert(child);
            }
            _ => {}
        }
    }
    println!("processes:  {} ({} more threads)", procs.len() - threads.len(), threads.len());
    println!("events:     {} ({} syscalls, {} execs, {} signals)", r.event_count(), syscalls, execs, signals);
    println!("size:       {} bytes in {} chunks", r.event_bytes(), r.chunk_count());
    match &r.summary {
        Some(s) => {
            println!("duration:   {} ms", s.duration_ms);
            println!("status:     {}", describe_status(s.exit_status));
            println!("files:      {} mapped files", s.mapped_files.len());
        }
        None => println!("status:     incomplete (the recording was cut short)"),
    }
    Ok(0)
}
