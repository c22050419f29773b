//! Event callbacks during a replay: beside the region observer, with the same debug host.
//!
//! - **System calls** are served from the stops the replayer makes anyway (every syscall entry
//!   and exit): [`Callbacks::wants_syscall`] tells it which, and at each the callback gets an
//!   `rdb_syscall` record (`rdb::Syscall`) built from the trace (arguments, recorded result)
//!   and the program's memory (the bytes the call moved, see `rdb_runtime::payload`).
//!
//! A callback runs like a region: in the debug host, against a read-only mirror of the stopped
//! program, its output flushed in program order, its failures (panic, crash, write to program
//! memory, hang) reported and never affecting the replay.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use rdb_descriptors::{CallbackEvent, When};
use rdb_host::{ArgValue, DebugHost, Invocation};
use rdb_runtime::{payload, SyscallStop};

/// Scattered syscall data (several buffers) is copied for the callback up to this size.
const MAX_COPIED: usize = 60 * 1024;

/// Byte offsets in the `rdb_syscall` record (see `rdb::Syscall`).
mod record {
    pub const SIZE: usize = 112;
    pub const FLAGS: usize = 64;
    pub const NAME: usize = 80;
    pub const DATA: usize = 96;
    pub const COMPLETED: u32 = 1;
    pub const TRUNCATED: u32 = 2;
}

/// The callbacks of a debug module, by event.
#[derive(Default)]
pub(crate) struct Callbacks {
    /// (syscall number, at exit) -> callback ids, in id order.
    syscalls: HashMap<(u64, bool), Vec<u32>>,
    /// Every callback: its name and source location, for reports.
    names: BTreeMap<u32, String>,
    called: BTreeSet<u32>,
    pub(crate) calls: u64,
    pub(crate) problems: u64,
}

impl Callbacks {
    pub(crate) fn new(host: &DebugHost) -> Callbacks {
        let mut c = Callbacks::default();
        for cb in host.callbacks() {
            let source = format!("{}:{}:{}", cb.source.file.display(), cb.source.line, cb.source.column);
            c.names.insert(cb.id, format!("`{}` ({source})", cb.function));
            match &cb.event {
                CallbackEvent::Syscall { syscalls, when } => {
                    for s in syscalls {
                        c.syscalls.entry((s.number, *when == When::After)).or_default().push(cb.id);
                    }
                }
            }
        }
        for ids in c.syscalls.values_mut() {
            ids.sort_unstable();
            ids.dedup();
        }
        c
    }

    pub(crate) fn wants_syscall(&self, nr: u64, exit: bool) -> bool {
        !self.syscalls.is_empty() && self.syscalls.contains_key(&(nr, exit))
    }

    /// Runs the callbacks of a syscall stop.
    pub(crate) fn on_syscall(&mut self, host: &mut DebugHost, stop: &SyscallStop<'_>) {
        let Some(ids) = self.syscalls.get(&(stop.nr, stop.exit)).cloned() else { return };
        let values = syscall_record(stop);
        flush_program_output();
        for id in ids {
            let result = host.invoke_callback(id, &values, stop);
            self.report(id, result);
        }
        // The program runs next: what the host mirrored is stale from now on.
        host.invalidate();
    }

    fn report(&mut self, id: u32, result: Result<Invocation, rdb_host::HostError>) {
        self.calls += 1;
        self.called.insert(id);
        match result {
            Ok(call) if call.is_clean() => {}
            Ok(call) => {
                self.problems += 1;
                eprintln!("rdb: warning: {call}");
            }
            Err(e) => {
                self.problems += 1;
                let name = self.names.get(&id).cloned().unwrap_or_else(|| id.to_string());
                eprintln!("rdb: warning: callback {name} could not run: {e}");
            }
        }
    }

    /// Callbacks never called in this replay: `name (file:line:col)` each.
    pub(crate) fn never_called(&self) -> Vec<String> {
        self.names.iter().filter(|(id, _)| !self.called.contains(id)).map(|(_, n)| n.clone()).collect()
    }
}

/// The program's re-emitted output is written before debug code prints (the replayer writes
/// it through Rust's line-buffered stdout).
pub(crate) fn flush_program_output() {
    let _ = std::io::stdout().flush();
}

/// The arguments of a syscall callback: `argv[0]` the `rdb_syscall` record, whose name and
/// data pointers the host points at `argv[1]` (the NUL-terminated name) and `argv[2]` (the
/// data: in the program's memory when it is one buffer, else a copy).
fn syscall_record(stop: &SyscallStop<'_>) -> Vec<ArgValue> {
    let name = rdb_runtime::syscalls::name(stop.nr);
    let ranges = payload::data_ranges(stop.nr, &stop.args, stop.result, stop.exit, stop);
    let mut flags = if stop.exit { record::COMPLETED } else { 0 };
    let (data, data_len) = match ranges.as_slice() {
        [] => (ArgValue::Bytes(Vec::new()), 0),
        [(address, len)] => (ArgValue::Address(*address), *len),
        _ => {
            let mut bytes = payload::data(stop.nr, &stop.args, stop.result, stop.exit, stop);
            if bytes.len() > MAX_COPIED {
                bytes.truncate(MAX_COPIED);
                flags |= record::TRUNCATED;
            }
            let len = bytes.len() as u64;
            (ArgValue::Bytes(bytes), len)
        }
    };
    let fd = payload::fd_argument(stop.nr).map_or(-1, |i| stop.args[i] as i32);
    let mut r = Vec::with_capacity(record::SIZE);
    r.extend_from_slice(&stop.nr.to_le_bytes());
    for a in stop.args {
        r.extend_from_slice(&a.to_le_bytes());
    }
    r.extend_from_slice(&stop.result.to_le_bytes());
    debug_assert_eq!(r.len(), record::FLAGS);
    r.extend_from_slice(&flags.to_le_bytes());
    r.extend_from_slice(&stop.tid.0.to_le_bytes());
    r.extend_from_slice(&fd.to_le_bytes());
    r.extend_from_slice(&stop.process.0.to_le_bytes());
    debug_assert_eq!(r.len(), record::NAME);
    r.extend_from_slice(&0u64.to_le_bytes());
    r.extend_from_slice(&(name.len() as u64).to_le_bytes());
    debug_assert_eq!(r.len(), record::DATA);
    r.extend_from_slice(&0u64.to_le_bytes());
    r.extend_from_slice(&data_len.to_le_bytes());
    debug_assert_eq!(r.len(), record::SIZE);
    let mut name = name.as_bytes().to_vec();
    name.push(0);
    vec![
        ArgValue::Record { bytes: r, pointers: vec![(record::NAME as u32, 1), (record::DATA as u32, 2)] },
        ArgValue::Bytes(name),
        data,
    ]
}
