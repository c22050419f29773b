//! `rdb info`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;
use rdb_runtime::trace::{event::describe_status, Event, Trace, TraceState};

use crate::traces;

/// Describe a trace and check it
///
/// Program, arguments, how it was built, processes, events, size, duration, kept files. The
/// whole trace is checked (every chunk, the digest chain, the summary).
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory, trace name in the trace root, or packed trace (default: the latest).
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
    let resolved = traces::resolve(a.trace)?;
    let trace = Trace::open(&resolved.dir)?;
    let h = trace.header();
    match &resolved.pack {
        Some(p) => println!("trace:      {} (packed)", p.display()),
        None => println!("trace:      {}", trace.path().display()),
    }
    println!("format:     {} version {}", h.format, h.version);
    println!("program:    {}", h.program);
    println!("arguments:  {:?}", h.argv);
    println!("blake3:     {}", h.program_blake3);
    if let Some(b) = &h.program_build {
        if !b.toolchain.is_empty() {
            println!("built by:   {}", b.toolchain.join(" / "));
        }
        let mut build = vec![b.debug_info.to_string()];
        if !b.build_dirs.is_empty() {
            build.push(format!("built in {}", b.build_dirs.join(", ")));
        }
        if let Some(c) = &b.cargo {
            build.push(format!("Cargo project {}", c.root));
            if !c.profile.is_empty() {
                build.push(format!("profile {}", c.profile));
            }
        }
        println!("build:      {}", build.join("; "));
    }
    println!("cwd:        {}", h.cwd);
    if !h.kernel.is_empty() {
        println!("machine:    {}, kernel {}", h.cpu, h.kernel);
    }
    if let Some(seed) = h.chaos_seed {
        println!("schedule:   chaos, seed {seed}");
    }
    let (mut procs, mut syscalls, mut signals, mut execs, mut cpuids) = (BTreeSet::new(), 0u64, 0u64, 0u64, 0u64);
    let mut threads = BTreeSet::new();
    let (mut snapshots, mut snapshot_bytes) = (0u64, 0u64);
    let mut events = trace.events()?;
    let mut index = 0u64;
    while let Some(e) = events.next_event()? {
        if a.events {
            println!("#{index:<6} {:>7} {}", e.tid().to_string(), e.describe());
        }
        index += 1;
        procs.insert(e.tid());
        match e {
            Event::Syscall { file, .. } => {
                syscalls += 1;
                if let Some(snap) = file.and_then(|f| f.snapshot) {
                    snapshots += 1;
                    snapshot_bytes += snap.len() as u64;
                }
            }
            Event::Signal { .. } => signals += 1,
            Event::Cpuid { .. } => cpuids += 1,
            Event::Exec { .. } => execs += 1,
            Event::NewProcess { child, flags, .. } if flags & libc::CLONE_THREAD as u64 != 0 => {
                threads.insert(child);
            }
            _ => {}
        }
    }
    println!("processes:  {} ({} more threads)", procs.len() - threads.len(), threads.len());
    println!("events:     {} ({} syscalls, {} execs, {} signals)", trace.event_count(), syscalls, execs, signals);
    if h.cpuid_trapped {
        println!("cpuid:      trapped (CPUID faulting): {cpuids} cpuid instructions given their recorded results");
    } else {
        println!("cpuid:      not trapped: the program's cpuid ran natively (replay needs the same CPU model)");
    }
    println!("size:       {} bytes in {} chunks", trace.event_bytes(), trace.chunk_count());
    let kept = trace.kept_files();
    let kept_bytes: u64 = kept.iter().map(|(_, s)| s).sum();
    println!(
        "files:      {} kept ({} bytes); {} mappings of data files snapshotted in the events ({} bytes before compression)",
        kept.len(),
        kept_bytes,
        snapshots,
        snapshot_bytes
    );
    match (trace.summary(), trace.state()) {
        (Some(s), _) => {
            println!("duration:   {} ms", s.duration_ms);
            println!("status:     {}", describe_status(s.exit_status));
        }
        (None, TraceState::CutShort { .. }) | (None, TraceState::Complete) => {
            println!("status:     incomplete (the recording was cut short)")
        }
    }
    Ok(0)
}
