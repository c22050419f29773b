//! Event callbacks during a replay: beside the region observer, with the same debug host.
//!
//! - **System calls** are served from the stops the replayer makes anyway (every syscall entry
//!   and exit): [`Callbacks::wants_syscall`] tells it which, and at each the callback gets an
//!   `rdb_syscall` record (`rdb::Syscall`) built from the trace (arguments, recorded result)
//!   and the program's memory (the bytes the call moved, see `rdb_runtime::payload`).
//!
//! - **Function calls** break where the function's arguments are in place (after its
//!   prologue, at each out-of-line copy; sites reached again by a loop are armed by a
//!   breakpoint at the function's first instruction), and pass the arguments where the
//!   argument descriptors say they are. **Returns** break at the function's first instruction,
//!   read the return address, break there once the call returns (same stack pointer, so
//!   recursion is told apart) and pass the returned value.
//! - **Symbols** (`on_call("malloc")`) are looked up when the program maps code: at each exit
//!   of an `mmap`/`mprotect` that makes memory executable, the newly mapped objects' symbol
//!   tables are searched (the executable's at exec); the first definition found wins, as the
//!   dynamic linker's search order has the executable and then libraries in load order.
//!   Arguments are the System V argument registers at the first instruction.
//!
//! A callback runs like a region: in the debug host, against a read-only mirror of the stopped
//! program, its output flushed in program order, its failures (panic, crash, write to program
//! memory, hang) reported and never affecting the replay.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use rdb_descriptors::{CallTarget, CallbackEvent, ReturnClass, ReturnValue, When};
use rdb_host::{ArgValue, DebugHost, Invocation};
use rdb_runtime::trace::Tid;
use rdb_runtime::{payload, BreakpointStop, ProcessImage, SyscallStop};
use rdb_tracee::{Memory, Pid, Target};

/// Scattered syscall data (several buffers) is copied for the callback up to this size.
const MAX_COPIED: usize = 60 * 1024;
/// Data of one buffer up to this size is copied too; larger data is read in the mirror.
const SMALL_DATA: u64 = 4096;

/// Byte offsets in the `rdb_syscall` record (see `rdb::Syscall`).
mod record {
    pub const SIZE: usize = 112;
    pub const FLAGS: usize = 64;
    pub const NAME: usize = 80;
    pub const DATA: usize = 96;
    pub const COMPLETED: u32 = 1;
    pub const TRUNCATED: u32 = 2;
}

/// What to do at a breakpoint of the main binary (module-relative address).
#[derive(Debug, Clone, Copy)]
enum Action {
    /// Run call callback `id` (its site: the arguments are in place). `armed`: only when the
    /// thread entered the function since it last ran here.
    Call { id: u32, armed: bool },
    /// The function's first instruction, for a site reached again by a loop: arm `id`.
    Arm { id: u32 },
    /// The function's first instruction, for return callback `id`.
    ReturnEntry { id: u32, value: Option<ReturnClassAndSize> },
}

/// How a returned value comes back, and its size.
#[derive(Debug, Clone, Copy)]
struct ReturnClassAndSize {
    class: ReturnClass,
    size: u64,
}

/// What to do at a breakpoint the program's run placed (a symbol resolved at run time).
#[derive(Debug, Clone, Copy)]
enum Dynamic {
    SymbolCall { id: u32 },
    SymbolReturnEntry { id: u32 },
}

/// A callback of a symbol.
#[derive(Debug, Clone)]
struct SymbolWatch {
    id: u32,
    symbol: String,
    returns: bool,
}

/// A call whose return a callback waits for.
#[derive(Debug, Clone, Copy)]
struct Pending {
    tid: Tid,
    id: u32,
    /// Absolute return address.
    at: u64,
    /// The stack pointer once it returned.
    rsp: u64,
    /// `None`: a symbol's (`rax`).
    value: Option<ReturnClassAndSize>,
}

/// A replayed process's symbols and breakpoints placed at run time.
#[derive(Default)]
struct ProcessState {
    /// Objects whose symbols were searched.
    scanned: HashSet<String>,
    /// Symbols found (the first definition wins).
    resolved: HashMap<String, u64>,
    /// Absolute address -> actions.
    dynamic: HashMap<u64, Vec<Dynamic>>,
    /// Return addresses with a breakpoint.
    return_points: HashSet<u64>,
    /// Watched memory.
    watches: Vec<Watch>,
    /// Which watch holds each debug register.
    slots: [Option<usize>; rdb_tracee::debugreg::SLOTS],
}

/// Watched memory of a process.
#[derive(Debug, Clone)]
struct Watch {
    /// The memory callback to run; `None` for `rdb::watch` (reported by rdb).
    callback: Option<u32>,
    /// Where `rdb::watch` was called (`file:line:col`).
    label: String,
    address: u64,
    len: u64,
    reads: bool,
    /// Watched with page protection (else debug registers).
    pages: bool,
    /// The bytes as last seen.
    old: Vec<u8>,
}

/// A static a memory callback watches (module-relative address).
#[derive(Debug, Clone, Copy)]
struct StaticAccess {
    id: u32,
    address: u64,
    size: u64,
    reads: bool,
}

/// The callbacks of a debug module, by event.
#[derive(Default)]
pub(crate) struct Callbacks {
    /// (syscall number, at exit) -> callback ids, in id order.
    syscalls: HashMap<(u64, bool), Vec<u32>>,
    /// Module-relative address -> actions (program functions).
    actions: BTreeMap<u64, Vec<Action>>,
    symbols: Vec<SymbolWatch>,
    /// By process (the recorded id of its process, `ProcessImage::tid`: the same in every
    /// thread and never reused).
    processes: HashMap<Tid, ProcessState>,
    armed: HashSet<(Tid, u32)>,
    pending: Vec<Pending>,
    /// Breakpoints to plant after this call into the observer.
    requested: Vec<u64>,
    /// The thread being served (real id, recorded id).
    current_thread: Option<(Pid, Tid)>,
    /// Memory callbacks of statics.
    statics: Vec<StaticAccess>,
    /// Ranges to watch with page protection, asked for after this call into the observer.
    page_requests: Vec<(u64, u64)>,
    /// Debug-register changes to make after this call into the observer.
    watch_changes: Vec<(usize, Option<rdb_tracee::Watchpoint>)>,
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
            if matches!(cb.event, CallbackEvent::Watched { .. }) {
                // Called by `rdb find --watch` only: no event calls it.
                continue;
            }
            c.names.insert(cb.id, format!("`{}` ({source})", cb.function));
            match &cb.event {
                CallbackEvent::Syscall { syscalls, when } => {
                    for s in syscalls {
                        c.syscalls.entry((s.number, *when == When::After)).or_default().push(cb.id);
                    }
                }
                CallbackEvent::Call { target: CallTarget::Program { sites, return_value, .. }, returns, .. } => {
                    for site in sites {
                        if *returns {
                            let value = return_value
                                .as_ref()
                                .map(|v: &ReturnValue| ReturnClassAndSize { class: v.class, size: v.size });
                            c.actions.entry(site.entry).or_default().push(Action::ReturnEntry { id: cb.id, value });
                        } else {
                            c.actions
                                .entry(site.address)
                                .or_default()
                                .push(Action::Call { id: cb.id, armed: site.reentered });
                            if site.reentered {
                                c.actions.entry(site.entry).or_default().push(Action::Arm { id: cb.id });
                            }
                        }
                    }
                }
                CallbackEvent::Call { target: CallTarget::Symbol { symbol }, returns, .. } => {
                    c.symbols.push(SymbolWatch { id: cb.id, symbol: symbol.clone(), returns: *returns });
                }
                CallbackEvent::Access { address, size, reads, .. } => {
                    c.statics.push(StaticAccess { id: cb.id, address: *address, size: *size, reads: *reads });
                }
                CallbackEvent::Watched { .. } => {}
            }
        }
        c.symbols.sort_by_key(|s| s.id);
        for ids in c.syscalls.values_mut() {
            ids.sort_unstable();
            ids.dedup();
        }
        c
    }

    pub(crate) fn wants_syscall(&self, nr: u64, exit: bool) -> bool {
        (!self.syscalls.is_empty() && self.syscalls.contains_key(&(nr, exit)))
            || (exit && nr == MMAP && !self.symbols.is_empty())
            || (exit && self.processes.values().any(|p| !p.watches.is_empty()))
    }

    /// Debug-register changes for the process just served.
    pub(crate) fn take_watchpoints(&mut self) -> Vec<(usize, Option<rdb_tracee::Watchpoint>)> {
        std::mem::take(&mut self.watch_changes)
    }

    /// Ranges to protect (see `ReplayObserver::take_page_watches`).
    pub(crate) fn take_page_watches(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.page_requests)
    }

    /// Watches `[address, address+len)` of `process` with debug registers (aligned pieces
    /// of 1, 2, 4 or 8 bytes, one register each), or when the free registers do not cover it,
    /// write watches with page protection (see `rdb_runtime::replay`'s `pages`); `Err` says
    /// why it cannot. Says on stderr which is used.
    fn add_watch(&mut self, process: Tid, mut watch: Watch, memory: &dyn Memory) -> Result<(), String> {
        let mut old = vec![0u8; watch.len as usize];
        memory.read_exact(watch.address, &mut old).map_err(|e| format!("its memory cannot be read: {e}"))?;
        watch.old = old;
        let what = if watch.label.is_empty() { self.callback_name(watch.callback) } else { watch.label.clone() };
        let pieces = pieces(watch.address, watch.len);
        let state = self.processes.entry(process).or_default();
        let free: Vec<usize> = (0..rdb_tracee::debugreg::SLOTS).filter(|&s| state.slots[s].is_none()).collect();
        if pieces.len() > free.len() {
            let needs = format!(
                "it needs {} debug register(s) ({} bytes in aligned pieces of at most 8) and {} of the 4 are free",
                pieces.len(),
                watch.len,
                free.len()
            );
            if watch.reads {
                return Err(format!(
                    "{needs}; reads are watched with debug registers only (page protection would make the pages unreadable, and a read fault tells where an access starts but not how long it is, so reads of the range could be missed): watch fewer or smaller values"
                ));
            }
            let pages = (watch.address + watch.len.max(1) - 1) / PAGE - watch.address / PAGE + 1;
            eprintln!(
                "rdb: watch {what} ({:#x}, {} bytes) uses page protection ({pages} page(s)): {needs}; every write to those pages stops the replay and is single-stepped",
                watch.address, watch.len
            );
            self.page_requests.push((watch.address, watch.len));
            watch.pages = true;
            state.watches.push(watch);
            return Ok(());
        }
        eprintln!(
            "rdb: watch {what} ({:#x}, {} bytes) uses debug registers ({})",
            watch.address,
            watch.len,
            pieces.len()
        );
        let index = state.watches.len();
        let kind = if watch.reads { rdb_tracee::WatchKind::ReadWrite } else { rdb_tracee::WatchKind::Write };
        for (&(addr, len), &slot) in pieces.iter().zip(&free) {
            state.slots[slot] = Some(index);
            self.watch_changes.push((slot, Some(rdb_tracee::Watchpoint { addr, len, kind })));
        }
        state.watches.push(watch);
        Ok(())
    }

    /// After debug code ran at a stop of `process`: the watchpoints it asked for
    /// (`rdb::watch`).
    pub(crate) fn collect_watch_requests(&mut self, host: &mut DebugHost, process: Tid, memory: &dyn Memory) {
        for r in host.take_watch_requests() {
            let label = format!("set at {}", r.label);
            let watch = Watch {
                callback: None,
                label: label.clone(),
                address: r.address,
                len: r.len,
                reads: r.reads,
                pages: false,
                old: Vec::new(),
            };
            if let Err(why) = self.add_watch(process, watch, memory) {
                eprintln!("rdb: warning: watch {label} ({:#x}, {} bytes) cannot be armed: {why}", r.address, r.len);
            }
        }
    }

    /// Debug registers fired at `stop` (right after the accessing instruction).
    pub(crate) fn on_watchpoint(&mut self, host: &mut DebugHost, stop: &BreakpointStop<'_>, fired: u8) {
        self.current_thread = Some((stop.pid, stop.tid));
        let Some(state) = self.processes.get(&stop.image.tid) else { return };
        let mut hit: Vec<usize> =
            (0..rdb_tracee::debugreg::SLOTS).filter(|s| fired & (1 << s) != 0).filter_map(|s| state.slots[s]).collect();
        hit.sort_unstable();
        hit.dedup();
        for index in hit {
            self.fire(host, stop, stop.image.tid, index, None);
        }
        host.invalidate();
    }

    /// A write to a page protected for watches of `stop`'s process, starting at `addr`: the
    /// watches of that page run when their bytes changed (callbacks also when the write
    /// started in their range: an unchanged write that starts before the range is not seen).
    pub(crate) fn on_page_write(&mut self, host: &mut DebugHost, stop: &BreakpointStop<'_>, addr: u64) {
        self.current_thread = Some((stop.pid, stop.tid));
        let page = addr / PAGE;
        let Some(state) = self.processes.get(&stop.image.tid) else { return };
        let hit: Vec<usize> = (0..state.watches.len())
            .filter(|&i| {
                let w = &state.watches[i];
                w.pages && (addr == 0 || w.address / PAGE <= page && page <= (w.address + w.len.max(1) - 1) / PAGE)
            })
            .collect();
        for index in hit {
            self.fire_write(host, stop, stop.image.tid, index, None, Some(addr));
        }
        host.invalidate();
    }

    fn callback_name(&self, id: Option<u32>) -> String {
        id.map_or_else(String::new, |id| format!("of callback {}", self.name(id)))
    }

    /// Runs (or reports) watch `index` of `process` after an access: by an instruction
    /// (`syscall` None; `stop` stands right after it) or by a system call's recorded writes.
    fn fire(&mut self, host: &mut DebugHost, stop: &dyn Target, process: Tid, index: usize, syscall: Option<u64>) {
        self.fire_write(host, stop, process, index, syscall, None)
    }

    /// [`Callbacks::fire`]; `page_write`: for a page-protected watch, where the write began.
    fn fire_write(
        &mut self,
        host: &mut DebugHost,
        stop: &dyn Target,
        process: Tid,
        index: usize,
        syscall: Option<u64>,
        page_write: Option<u64>,
    ) {
        let thread = self.thread_of(stop);
        let Some(watch) = self.processes.get_mut(&process).and_then(|p| p.watches.get_mut(index)) else { return };
        let mut new = vec![0u8; watch.len as usize];
        if stop.read_exact(watch.address, &mut new).is_err() {
            return;
        }
        let changed = new != watch.old;
        if page_write.is_some_and(|a| !(watch.address <= a && a < watch.address + watch.len)) && !changed {
            return; // another part of the page
        }
        if watch.callback.is_none() && !changed && syscall.is_none() && !watch.reads {
            return; // like gdb's `watch`: only changes are reported
        }
        if syscall.is_some() && !changed {
            return;
        }
        let old = std::mem::replace(&mut watch.old, new.clone());
        let mut access = Vec::with_capacity(40);
        access.extend_from_slice(&watch.address.to_le_bytes());
        access.extend_from_slice(&watch.len.to_le_bytes());
        access.extend_from_slice(&stop.regs().rip.to_le_bytes());
        access.extend_from_slice(&thread.to_le_bytes());
        let flags = u32::from(changed) | if syscall.is_some() { 2 } else { 0 };
        access.extend_from_slice(&flags.to_le_bytes());
        access.extend_from_slice(&syscall.unwrap_or(0).to_le_bytes());
        let (callback, label) = (watch.callback, watch.label.clone());
        flush_program_output();
        if syscall.is_none() {
            host.next_stop_after_access();
        }
        let values = [ArgValue::Bytes(old), ArgValue::Bytes(new), ArgValue::Bytes(access)];
        match callback {
            Some(id) => {
                let result = host.invoke_callback(id, &values, stop);
                self.report(id, result);
            }
            None => {
                let by = syscall.map(rdb_runtime::syscalls::name);
                if let Err(e) = host.report_watch(&label, by.as_deref(), &values, stop) {
                    eprintln!("rdb: warning: watch {label}: cannot report a change: {e}");
                }
            }
        }
    }

    /// The recorded thread id of a stop (for the access record).
    fn thread_of(&self, stop: &dyn Target) -> u32 {
        self.current_thread.filter(|(pid, _)| *pid == stop.tid()).map_or(0, |(_, tid)| tid.0)
    }

    /// A forked copy of a process: the same symbols and breakpoints (the replayer copied the
    /// parent's), and the memory callbacks' watches armed again (a fork does not inherit debug
    /// registers). `rdb::watch` watches stay with the process that set them.
    pub(crate) fn on_fork(&mut self, parent: &ProcessImage, child: &ProcessImage) {
        let Some(state) = self.processes.get(&parent.tid) else { return };
        let copy = ProcessState {
            scanned: state.scanned.clone(),
            resolved: state.resolved.clone(),
            dynamic: state.dynamic.clone(),
            return_points: state.return_points.clone(),
            watches: Vec::new(),
            slots: Default::default(),
        };
        let watches: Vec<Watch> = state.watches.iter().filter(|w| w.callback.is_some()).cloned().collect();
        self.processes.insert(child.tid, copy);
        for watch in watches {
            if let Err(why) = self.add_watch(child.tid, watch, &child.pid) {
                eprintln!("rdb: warning: process {}: a memory callback cannot be armed: {why}", child.tid.0);
            }
        }
    }

    /// Breakpoints the callbacks need in a new image of the region binary (absolute), and its
    /// symbols searched.
    pub(crate) fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        self.armed.retain(|(t, _)| *t != image.tid);
        self.pending.retain(|p| p.tid != image.tid);
        self.processes.insert(image.tid, ProcessState::default());
        for s in self.statics.clone() {
            let watch = Watch {
                callback: Some(s.id),
                label: String::new(),
                address: image.load_bias.wrapping_add(s.address),
                len: s.size,
                reads: s.reads,
                pages: false,
                old: Vec::new(),
            };
            if let Err(why) = self.add_watch(image.tid, watch, &image.pid) {
                eprintln!("rdb: warning: callback {} cannot watch its static: {why}", self.name(s.id));
            }
        }
        let mut out: Vec<u64> = self.actions.keys().map(|a| a.wrapping_add(image.load_bias)).collect();
        if !self.symbols.is_empty() {
            let exe = image.file.to_string_lossy().into_owned();
            self.search(image.tid, &[(exe, image.load_bias)]);
            out.append(&mut self.requested);
        }
        out
    }

    /// Breakpoints asked for during the last call (see `ReplayObserver::take_breakpoints`).
    pub(crate) fn take_breakpoints(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.requested)
    }

    /// Runs the callbacks of a breakpoint: `relative` is its module-relative address when the
    /// stop is in the region binary.
    pub(crate) fn on_breakpoint(&mut self, host: &mut DebugHost, stop: &BreakpointStop<'_>) {
        self.current_thread = Some((stop.pid, stop.tid));
        let relative = stop.addr.wrapping_sub(stop.image.load_bias);
        let mut ran = false;
        if let Some(actions) = self.actions.get(&relative).cloned() {
            for action in actions {
                match action {
                    Action::Call { id, armed } => {
                        if armed && !self.armed.remove(&(stop.tid, id)) {
                            continue; // a loop back to the site, not a call
                        }
                        flush_program_output();
                        let result = host.invoke_callback_at(id, relative, stop);
                        self.report(id, result);
                        ran = true;
                    }
                    Action::Arm { id } => {
                        self.armed.insert((stop.tid, id));
                    }
                    Action::ReturnEntry { id, value } => self.expect_return(stop, id, value),
                }
            }
        }
        let dynamic = self.processes.get(&stop.image.tid).and_then(|p| p.dynamic.get(&stop.addr)).cloned();
        for action in dynamic.unwrap_or_default() {
            match action {
                Dynamic::SymbolCall { id } => {
                    let r = stop.regs;
                    let values: Vec<ArgValue> = [r.rdi, r.rsi, r.rdx, r.rcx, r.r8, r.r9]
                        .iter()
                        .map(|v| ArgValue::Bytes(v.to_le_bytes().to_vec()))
                        .collect();
                    flush_program_output();
                    let result = host.invoke_callback(id, &values, stop);
                    self.report(id, result);
                    ran = true;
                }
                Dynamic::SymbolReturnEntry { id } => self.expect_return(stop, id, None),
            }
        }
        if self.pending.iter().any(|p| p.tid == stop.tid && p.at == stop.addr) {
            ran |= self.returned(host, stop);
        }
        if ran {
            // The program runs next: what the host mirrored is stale from now on.
            host.invalidate();
        }
    }

    /// At a function's first instruction: note where this call returns, and break there.
    fn expect_return(&mut self, stop: &BreakpointStop<'_>, id: u32, value: Option<ReturnClassAndSize>) {
        let mut word = [0u8; 8];
        if stop.read_exact(stop.regs.rsp, &mut word).is_err() {
            eprintln!(
                "rdb: warning: callback {}: cannot read the return address at {:#x}",
                self.name(id),
                stop.regs.rsp
            );
            return;
        }
        let at = u64::from_le_bytes(word);
        self.pending.push(Pending { tid: stop.tid, id, at, rsp: stop.regs.rsp.wrapping_add(8), value });
        let state = self.processes.entry(stop.image.tid).or_default();
        if state.return_points.insert(at) && !self.actions.contains_key(&at.wrapping_sub(stop.image.load_bias)) {
            self.requested.push(at);
        }
    }

    /// At a return address: run the callbacks of the calls that returned here (the stack pointer
    /// tells this call from an outer one of a recursion). Calls abandoned deeper in the stack
    /// (a `longjmp`, an unwinding panic) are forgotten.
    fn returned(&mut self, host: &mut DebugHost, stop: &BreakpointStop<'_>) -> bool {
        let (tid, rsp) = (stop.tid, stop.regs.rsp);
        let mut done: Vec<Pending> = Vec::new();
        self.pending.retain(|p| {
            if p.tid != tid {
                return true;
            }
            if p.at == stop.addr && p.rsp == rsp {
                done.push(*p);
                return false;
            }
            p.rsp > rsp // still below in the stack: keep
        });
        done.sort_by_key(|p| p.id);
        for p in &done {
            let value = match return_value(stop, p.value) {
                Ok(v) => v,
                Err(why) => {
                    self.calls += 1;
                    self.problems += 1;
                    eprintln!("rdb: warning: callback {} could not run: {why}", self.name(p.id));
                    continue;
                }
            };
            flush_program_output();
            let result = host.invoke_callback(p.id, &[value], stop);
            self.report(p.id, result);
        }
        !done.is_empty()
    }

    fn name(&self, id: u32) -> String {
        self.names.get(&id).cloned().unwrap_or_else(|| id.to_string())
    }

    /// Searches `objects` (path, load bias) of `process` for the symbols not found yet;
    /// asks for breakpoints at the new ones.
    fn search(&mut self, process: Tid, objects: &[(String, u64)]) {
        let state = self.processes.entry(process).or_default();
        for (path, bias) in objects {
            if !state.scanned.insert(path.clone()) {
                continue;
            }
            let wanted: Vec<&SymbolWatch> =
                self.symbols.iter().filter(|s| !state.resolved.contains_key(&s.symbol)).collect();
            if wanted.is_empty() {
                return;
            }
            for (name, found) in lookup_symbols(Path::new(path), wanted.iter().map(|w| w.symbol.as_str())) {
                match found {
                    Ok(value) => {
                        let at = bias.wrapping_add(value);
                        state.resolved.insert(name.clone(), at);
                        for w in self.symbols.iter().filter(|w| w.symbol == name) {
                            let action = if w.returns {
                                Dynamic::SymbolReturnEntry { id: w.id }
                            } else {
                                Dynamic::SymbolCall { id: w.id }
                            };
                            state.dynamic.entry(at).or_default().push(action);
                        }
                        self.requested.push(at);
                    }
                    Err(why) => {
                        state.resolved.insert(name.clone(), 0);
                        for w in self.symbols.iter().filter(|w| w.symbol == name) {
                            eprintln!(
                                "rdb: warning: callback {}: `{name}` in {path}: {why}",
                                self.names.get(&w.id).cloned().unwrap_or_default()
                            );
                        }
                    }
                }
            }
        }
    }

    /// Runs the callbacks of a syscall stop.
    pub(crate) fn on_syscall(&mut self, host: &mut DebugHost, stop: &SyscallStop<'_>) {
        self.current_thread = Some((stop.pid, stop.tid));
        if stop.exit && stop.nr == MMAP && stop.result >= 0 && stop.args[2] & PROT_EXEC != 0 && !self.symbols.is_empty()
        {
            self.search_mapped(stop);
        }
        if stop.exit && !stop.writes.is_empty() {
            // The kernel's writes (replayed from the trace) raise no debug-register hit.
            let process = stop.image.tid;
            let overlapping: Vec<usize> = self.processes.get(&process).map_or(Vec::new(), |p| {
                p.watches
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| {
                        stop.writes
                            .iter()
                            .any(|m| m.addr < w.address + w.len && w.address < m.addr + m.bytes.len() as u64)
                    })
                    .map(|(i, _)| i)
                    .collect()
            });
            for index in overlapping {
                self.fire(host, stop, process, index, Some(stop.nr));
            }
        }
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

    /// Refuses going back while callbacks or watches exist: the breakpoints and debug
    /// registers planted for them while the program ran, the return points awaited and the
    /// copies of watched memory are not rewound with the program, so callbacks could be
    /// missed or report wrong values after a restore.
    pub(crate) fn can_go_back(&self) -> Result<(), String> {
        let watches: usize = self.processes.values().map(|p| p.watches.len()).sum();
        if self.names.is_empty() && watches == 0 {
            return Ok(());
        }
        let what = if self.names.is_empty() {
            format!("debug code watches {watches} piece(s) of memory (rdb::watch / rdb_watch)")
        } else {
            format!("the debug module has {} event callback(s)", self.names.len())
        };
        Err(format!(
            "cannot go back: {what}, and the breakpoints, debug registers and copies of watched memory kept for them only follow the replay forwards; reverse execution, `run` and restoring a checkpoint need a debug build without event callbacks and watches"
        ))
    }

    /// Callbacks never called in this replay: `name (file:line:col)` each.
    pub(crate) fn never_called(&self) -> Vec<String> {
        self.names.iter().filter(|(id, _)| !self.called.contains(id)).map(|(_, n)| n.clone()).collect()
    }
}

const MMAP: u64 = 9;
const PAGE: u64 = 4096;
const PROT_EXEC: u64 = 4;

impl Callbacks {
    /// After an `mmap` of a file with execute permission (the dynamic linker mapping a
    /// library's code): search that file's symbols, its load bias from where the mapped file
    /// offset landed.
    fn search_mapped(&mut self, stop: &SyscallStop<'_>) {
        let Some(path) = &stop.mapped_file else { return };
        let (address, offset) = (stop.result as u64, stop.args[5]);
        let Some(delta) = segment_delta(path, offset) else { return };
        let bias = address.wrapping_sub(offset).wrapping_sub(delta);
        self.search(stop.image.tid, &[(path.to_string_lossy().into_owned(), bias)]);
    }
}

/// For the loadable segment of the ELF file `path` holding file offset `offset`: its
/// `p_vaddr - p_offset` (the load bias is then the mapped address minus the offset minus it).
fn segment_delta(path: &Path, offset: u64) -> Option<u64> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    use object::Endianness;
    let data = std::fs::read(path).ok()?;
    let elf = ElfFile64::<Endianness>::parse(&*data).ok()?;
    let e = elf.endian();
    elf.elf_program_headers()
        .iter()
        .filter(|p| p.p_type(e) == object::elf::PT_LOAD)
        .find(|p| {
            let start = p.p_offset(e) & !4095;
            start <= offset && offset < p.p_offset(e) + p.p_filesz(e)
        })
        .map(|p| p.p_vaddr(e).wrapping_sub(p.p_offset(e)))
}

/// `[address, address+len)` in naturally aligned pieces of 8, 4, 2 or 1 bytes.
fn pieces(address: u64, len: u64) -> Vec<(u64, u8)> {
    let end = address.saturating_add(len);
    let mut out = Vec::new();
    let mut at = address;
    while at < end {
        let size = [8u64, 4, 2, 1].into_iter().find(|&s| at.is_multiple_of(s) && at + s <= end).unwrap_or(1);
        out.push((at, size as u8));
        at += size;
    }
    out
}

/// The returned value, from the registers (or memory) at the return address.
fn return_value(stop: &BreakpointStop<'_>, value: Option<ReturnClassAndSize>) -> Result<ArgValue, String> {
    let r = &stop.regs;
    let Some(v) = value else { return Ok(ArgValue::Bytes(r.rax.to_le_bytes().to_vec())) };
    let size = v.size as usize;
    Ok(match v.class {
        ReturnClass::None => ArgValue::Bytes(Vec::new()),
        ReturnClass::Rax => ArgValue::Bytes(r.rax.to_le_bytes()[..size.min(8)].to_vec()),
        ReturnClass::RaxRdx => {
            let mut b = r.rax.to_le_bytes().to_vec();
            b.extend_from_slice(&r.rdx.to_le_bytes());
            b.truncate(size.min(16));
            ArgValue::Bytes(b)
        }
        ReturnClass::Xmm0 => {
            let x = stop.xmm(0).map_err(|e| format!("cannot read xmm0: {e}"))?;
            ArgValue::Bytes(x[..size.min(16)].to_vec())
        }
        ReturnClass::Memory => ArgValue::Address(r.rax),
    })
}

/// The addresses (link-time) of `names` defined as functions in the ELF file `path` (dynamic
/// symbols, then the symbol table), or why one cannot be used; names not defined there are
/// left out.
fn lookup_symbols<'a>(path: &Path, names: impl Iterator<Item = &'a str>) -> Vec<(String, Result<u64, String>)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let names: Vec<&str> = names.collect();
    let Ok(data) = std::fs::read(path) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*data) else { return Vec::new() };
    let mut out: Vec<(String, Result<u64, String>)> = Vec::new();
    for symbol in file.dynamic_symbols().chain(file.symbols()) {
        let Ok(name) = symbol.name() else { continue };
        let name = name.split('@').next().unwrap_or(name);
        if !names.contains(&name) || symbol.is_undefined() || out.iter().any(|(n, _)| n == name) {
            continue;
        }
        if symbol.kind() != SymbolKind::Text || symbol.address() == 0 {
            continue;
        }
        let ifunc = matches!(symbol.flags(), object::SymbolFlags::Elf { st_info, .. } if st_info & 0xf == object::elf::STT_GNU_IFUNC);
        let found = if ifunc {
            Err("it is an IFUNC (the dynamic linker picks an implementation at run time); rdb cannot break at the implementation it picks".to_string())
        } else {
            Ok(symbol.address())
        };
        out.push((name.to_string(), found));
    }
    out
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
        // Small data is copied here (one read), cheaper than the host mirroring its page.
        [(address, len)] if *len > SMALL_DATA => (ArgValue::Address(*address), *len),
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

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn ranges_split_into_aligned_pieces() {
        assert_eq!(pieces(0x1000, 8), [(0x1000, 8)]);
        assert_eq!(pieces(0x1004, 8), [(0x1004, 4), (0x1008, 4)]);
        assert_eq!(pieces(0x1001, 3), [(0x1001, 1), (0x1002, 2)]);
        assert_eq!(pieces(0x1000, 24).len(), 3);
    }
}
