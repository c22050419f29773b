//! [`DebugHost`]: the replayer's handle on a host process.

use crate::args::{self, ArgValue, EntryValues};
use crate::channel::{monotonic_coarse_ns, readable_for, Channel, Mailbox, Received, Side};
use crate::error::{signal_name, HostError, Invocation, InvokeOutcome, Loc};
use crate::protocol::{self, reason, Reader, Writer};
use rdb_descriptors::{
    ArgumentDescriptor, ArgumentDescriptors, CallbackDescriptor, DebugEntry, FunctionDescriptor, FunctionDescriptors,
};
use rdb_tracee::{Mapping, Target};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to do when debug code writes program memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WritePolicy {
    /// Record the write, let it land in a private copy of the page, finish
    /// the call, then discard the copy (debug-only state is kept).
    #[default]
    Report,
    /// Stop the call at the first write (the host is restarted).
    Abort,
}

/// How the host reads program memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryAccess {
    /// `process_vm_readv` from the host straight into the mirror when the
    /// kernel allows it (it needs ptrace-attach rights on the program:
    /// root, or yama `ptrace_scope` 0), falling back to [`MemoryAccess::ViaReplayer`].
    #[default]
    Direct,
    /// The host asks the replayer, which reads through [`Memory::read_exact`](rdb_tracee::Memory::read_exact)
    /// (works for any target, e.g. a remote stub, at one round trip per fill).
    ViaReplayer,
}

/// How the host fills mirrored pages (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FaultHandling {
    /// userfaultfd when the host may use it for kernel-mode faults too
    /// (access to `/dev/userfaultfd`, root by default; on kernels without that
    /// device `CAP_SYS_PTRACE` or `vm.unprivileged_userfaultfd=1`), else
    /// [`FaultHandling::Signal`].
    #[default]
    Auto,
    /// A `SIGSEGV` handler only: works everywhere, but a system call given
    /// a never-touched program page fails with `EFAULT`.
    Signal,
    /// userfaultfd, or [`DebugHost::spawn`] fails saying why.
    Userfaultfd,
}

/// Options of a debug host.
#[derive(Debug)]
pub struct HostOptions {
    /// How long one debug function may run before the host is killed.
    pub timeout: Duration,
    pub on_write: WritePolicy,
    pub memory: MemoryAccess,
    pub faults: FaultHandling,
    /// Pages read per fault (rounded up to a power of two, at most 256).
    /// Default 4: on these machines a 4-page fill costs about the same as a
    /// 1-page fill (`bench/fault_fill.c`), 16 pages twice as much.
    pub pages_per_fill: u32,
    /// Pin the host to this CPU (put the replayer and tracee on the same one).
    pub cpu: Option<usize>,
    /// Busy-wait this long for the other side's next message before
    /// sleeping in the kernel, on both sides, yielding the CPU as it spins:
    /// cuts the wake-up cost of a call (the host sharing the replay's CPU
    /// then runs as soon as the replayer yields). Default: zero.
    pub spin: Duration,
    /// Run the host with `rdtsc` disabled (`PR_SET_TSC`), as a replayer
    /// sharing its CPU does: switches between them then need no trapped
    /// control-register write. Clock reads in debug code are emulated (a few
    /// µs each). Default: false.
    pub tsc_disabled: bool,
    /// Where debug code's stdout goes (default: rdb's own stdout).
    pub stdout: Option<File>,
    /// Where debug code's stderr goes (default: rdb's own stderr).
    pub stderr: Option<File>,
    /// The host executable; default: `$RDB_DEBUG_HOST`, else
    /// `rdb-debug-host` beside the current executable (or its parent
    /// directory). A program whose `main` calls [`crate::run_if_host`] first
    /// may name itself (`std::env::current_exe()`).
    pub program: Option<PathBuf>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            timeout: Duration::from_secs(10),
            on_write: WritePolicy::Report,
            memory: MemoryAccess::Direct,
            faults: FaultHandling::Auto,
            pages_per_fill: 4,
            cpu: None,
            spin: Duration::ZERO,
            tsc_disabled: false,
            stdout: None,
            stderr: None,
            program: None,
        }
    }
}

struct Region {
    function: FunctionDescriptor,
    arguments: Vec<ArgumentDescriptor>,
}

/// A running host process with a debug module loaded. See the crate docs.
pub struct DebugHost {
    module: PathBuf,
    program: PathBuf,
    options: HostOptions,
    regions: HashMap<u32, Region>,
    callbacks: BTreeMap<u32, CallbackDescriptor>,
    /// Argument descriptors of call callbacks, by callback id, in position order.
    callback_arguments: HashMap<u32, Vec<ArgumentDescriptor>>,
    process: Option<Process>,
    /// The program ran since the host last saw it: mirrored pages are stale.
    stale: bool,
    /// Mapping list must be sent with the next call.
    maps_dirty: bool,
    /// Calls completed by the current host process (its debug-only state).
    calls: u64,
    restarts: u64,
    /// The program the mirror currently shows (a trace may hold several processes).
    last_pid: i32,
    /// The current host process serves faults with userfaultfd.
    userfaultfd: bool,
    buf: Vec<u8>,
    /// The main binary's bytes at every region location and function entry
    /// kept for `entry_value` locations (module-relative address, byte): the
    /// host shows them instead of the breakpoints.
    code_bytes: Vec<(u64, u8)>,
    /// Values kept at function entries for `entry_value` locations.
    entry_values: EntryValues,
    /// The main binary with DWARF (its twin `<bin>.rdb-g` when there is one), for backtraces.
    dwarf_binary: PathBuf,
    /// The next call's stop is right after an access to watched memory.
    after_access: bool,
    /// The user's lines of the binary's sources (see `rdb_descriptors::LineMap`).
    line_maps: Vec<rdb_descriptors::LineMap>,
    /// Watchpoints debug code asked for (`rdb::watch`), not yet taken.
    watch_requests: Vec<WatchRequest>,
    /// Checks debug code made (`rdb_check!`), not yet taken.
    checks: Vec<Check>,
    /// The program memory the host asked for since `record_pages(true)` (`(address, length)`).
    served: Option<Vec<(u64, u64)>>,
    /// The next calls' checks carry the program's backtrace.
    check_backtraces: bool,
}

/// The outcome of a check (`rdb_check!(cond, "fmt", ..)`, C's `rdb_check`) in a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub ok: bool,
    /// The check's line and column in the user's source (the region's file).
    pub line: u32,
    pub column: u32,
    /// The condition as written.
    pub condition: String,
    /// The formatted message (empty when the check has none).
    pub message: String,
    /// The program's backtrace there, one frame per line (`#0 f at file:line:col`), when asked
    /// for ([`DebugHost::set_check_backtraces`]).
    pub backtrace: String,
}

/// A watchpoint debug code asked for with `rdb::watch` (program memory, checked mirrored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchRequest {
    pub address: u64,
    pub len: u64,
    /// Reads too (`rdb::watch_access`), not only writes.
    pub reads: bool,
    /// Where debug code asked (`file:line:column`).
    pub label: String,
}

struct Process {
    child: Child,
    socket: OwnedFd,
    channel: Channel,
}

impl DebugHost {
    /// Starts a host process and loads `module` into it, resolving every
    /// region function named by `functions`.
    pub fn spawn(
        module: &Path,
        functions: &FunctionDescriptors,
        arguments: &ArgumentDescriptors,
        options: HostOptions,
    ) -> Result<DebugHost, HostError> {
        let program = find_program(&options)?;
        let module = std::path::absolute(module).unwrap_or_else(|_| module.to_path_buf());
        let mut regions: HashMap<u32, Region> = functions
            .functions
            .iter()
            .map(|f| (f.region, Region { function: f.clone(), arguments: Vec::new() }))
            .collect();
        for a in &arguments.arguments {
            if let Some(r) = regions.get_mut(&a.region) {
                r.arguments.push(a.clone());
            }
        }
        let callbacks: BTreeMap<u32, CallbackDescriptor> =
            functions.callbacks.iter().map(|c| (c.id, c.clone())).collect();
        let mut callback_arguments: HashMap<u32, Vec<ArgumentDescriptor>> = HashMap::new();
        for a in arguments.arguments.iter().filter(|a| callbacks.contains_key(&a.region)) {
            callback_arguments.entry(a.region).or_default().push(a.clone());
        }
        for list in callback_arguments.values_mut() {
            list.sort_by_key(|a| a.position);
        }
        let mut host = DebugHost {
            module,
            program,
            options,
            regions,
            callbacks,
            callback_arguments,
            process: None,
            stale: true,
            maps_dirty: true,
            calls: 0,
            restarts: 0,
            last_pid: 0,
            userfaultfd: false,
            buf: vec![0u8; protocol::MAX_MESSAGE + 64 * 1024],
            code_bytes: Vec::new(),
            entry_values: EntryValues::of(&arguments.arguments),
            dwarf_binary: {
                let twin = functions.binary.path.with_file_name(format!(
                    "{}.rdb-g",
                    functions.binary.path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                ));
                if twin.is_file() {
                    twin
                } else {
                    functions.binary.path.clone()
                }
            },
            after_access: false,
            watch_requests: Vec::new(),
            checks: Vec::new(),
            served: None,
            check_backtraces: false,
            line_maps: functions.line_maps.clone(),
        };
        let mut locations: Vec<u64> = host.code_locations().into_keys().collect();
        locations.extend(host.entry_values.entries());
        locations.sort_unstable();
        locations.dedup();
        host.code_bytes = code_bytes(&functions.binary.path, &locations);
        host.start(0)?;
        Ok(host)
    }

    /// [`DebugHost::spawn`] for the artefacts `cargo rdb build` / `rdb-clang`
    /// wrote beside `binary`: `<bin>.rdb-functions.json`,
    /// `<bin>.rdb-arguments.json` and the debug module they name.
    pub fn for_binary(binary: &Path, options: HostOptions) -> Result<DebugHost, HostError> {
        let paths = rdb_descriptors::artefact_paths(binary);
        let functions = rdb_descriptors::load_functions(&paths.functions)?;
        let arguments = rdb_descriptors::load_arguments(&paths.arguments)?;
        let module = paths.functions.parent().unwrap_or(Path::new(".")).join(&functions.debug_module);
        DebugHost::spawn(&module, &functions, &arguments, options)
    }

    /// Where the replayer must stop the program: module-relative code
    /// address -> regions to run there, in region id order.
    pub fn code_locations(&self) -> std::collections::BTreeMap<u64, Vec<u32>> {
        let mut out: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
        for (id, region) in &self.regions {
            for l in &region.function.locations {
                out.entry(l.address).or_default().push(*id);
            }
        }
        for ids in out.values_mut() {
            ids.sort_unstable();
        }
        out
    }

    /// Function entries where the replayer must also stop (module-relative):
    /// arguments optimized out at a region are the values some registers held
    /// there (descriptor class `entry_value`). Call [`DebugHost::keep_entry_values`]
    /// at each stop there, before running the regions of the same address.
    pub fn entry_points(&self) -> Vec<u64> {
        self.entry_values.entries().collect()
    }

    /// Keeps the values `entry_value` locations need, for a program stopped at
    /// module-relative `address` (nothing if it is not an entry point).
    /// Returns whether it was one.
    pub fn keep_entry_values(&mut self, address: u64, tracee: &dyn Target) -> bool {
        self.entry_values.keep(address, tracee)
    }

    /// A process forked (real process ids of this run): the child gets the parent's kept entry
    /// values, for the calls it goes on with.
    pub fn fork_entry_values(&mut self, parent: i32, child: i32) {
        self.entry_values.fork(parent, child);
    }

    /// Forgets the kept entry values: the replay went back, and a value kept
    /// later than the point it went back to may belong to another call. A
    /// region in a call whose entry is not seen again reports its argument
    /// as not available.
    pub fn forget_entry_values(&mut self) {
        self.entry_values.forget();
    }

    /// How many times the host process was replaced (crash, timeout,
    /// aborted write, collision at start-up).
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Whether the current host process fills pages with userfaultfd
    /// (else with its `SIGSEGV` handler).
    pub fn uses_userfaultfd(&self) -> bool {
        self.userfaultfd
    }

    /// Process id of the current host process.
    pub fn host_pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.child.id())
    }

    /// The program ran since the last call: mirrored pages are stale. Cheap
    /// (the host re-protects touched mappings at the next call).
    pub fn invalidate(&mut self) {
        self.stale = true;
    }

    /// The program's mappings may have changed (mmap, munmap, brk,
    /// mprotect): the next call sends the current list. Not required for
    /// correctness of reads (the host asks for the list when debug code
    /// touches an address it does not mirror) but keeps protections exact.
    pub fn invalidate_mappings(&mut self) {
        self.stale = true;
        self.maps_dirty = true;
    }

    /// Runs `region`'s debug function for a program stopped at module-relative
    /// code `address` (one of the region's `locations`). The program is only
    /// read, never written or resumed.
    pub fn invoke(&mut self, region: u32, address: u64, tracee: &dyn Target) -> Result<Invocation, HostError> {
        let entry = self.regions.get(&region).ok_or(HostError::UnknownRegion { region })?;
        let source_location = Loc(entry.function.begin.clone());
        let Some(location) = entry.function.locations.iter().find(|l| l.address == address) else {
            return Err(HostError::NoLocation { region, address, source_location });
        };
        // The debug function of this location's instantiation.
        let function = location.entry_id.unwrap_or(region);
        let mut refs: Vec<&ArgumentDescriptor> = entry.arguments.iter().collect();
        refs.sort_by_key(|a| a.position);
        let values = args::compute(region, address, &refs, tracee, &self.entry_values, &source_location)?;
        let sizes: Vec<u64> = refs
            .iter()
            .map(|a| a.locations.iter().find(|p| p.address == address).and_then(|p| p.size).unwrap_or(a.size))
            .collect();
        self.run(region, function, &values, &sizes, tracee, &source_location, None)
    }

    /// Marks the next call's stop as right after an instruction that accessed watched memory
    /// (backtraces then name that instruction's line).
    pub fn next_stop_after_access(&mut self) {
        self.after_access = true;
    }

    /// Watchpoints debug code asked for since the last time (`rdb::watch`).
    pub fn take_watch_requests(&mut self) -> Vec<WatchRequest> {
        std::mem::take(&mut self.watch_requests)
    }

    /// Checks debug code made since the last time (`rdb_check!`), in order.
    pub fn take_checks(&mut self) -> Vec<Check> {
        std::mem::take(&mut self.checks)
    }

    /// Starts (or stops) recording the program memory the host asks the replayer for: with
    /// [`MemoryAccess::ViaReplayer`], one page per fill and [`DebugHost::invalidate`] before a
    /// call, what the call read, page by page (`rdb find --watch`).
    pub fn record_pages(&mut self, on: bool) {
        self.served = on.then(Vec::new);
    }

    /// The memory asked for since the last take (`(address, length)`, in order).
    pub fn take_pages(&mut self) -> Vec<(u64, u64)> {
        self.served.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Whether the checks of the next calls carry the program's backtrace (unwinding costs
    /// time: `rdb find` asks at the hit it reports).
    pub fn set_check_backtraces(&mut self, on: bool) {
        self.check_backtraces = on;
    }

    /// The event callbacks of the debug module (from the function descriptors).
    /// In id order (declaration order): callbacks of one event run in that order.
    pub fn callbacks(&self) -> impl Iterator<Item = &CallbackDescriptor> {
        self.callbacks.values()
    }

    /// Runs event callback `id` with the arguments `values` (built by the caller for the event,
    /// see [`rdb_descriptors::CallbackEvent`]) for a program stopped as `tracee` shows it. The
    /// program is only read, never written or resumed. Reported like a region's call.
    pub fn invoke_callback(
        &mut self,
        id: u32,
        values: &[ArgValue],
        tracee: &dyn Target,
    ) -> Result<Invocation, HostError> {
        let callback = self.callbacks.get(&id).ok_or(HostError::UnknownCallback { id })?;
        let source_location = Loc(callback.source.clone());
        let name = callback.function.clone();
        let sizes: Vec<u64> = values
            .iter()
            .map(|v| match v {
                ArgValue::Address(_) => 0,
                ArgValue::Bytes(b) | ArgValue::Copied { bytes: b, .. } | ArgValue::Record { bytes: b, .. } => {
                    b.len() as u64
                }
            })
            .collect();
        self.run(id, id, values, &sizes, tracee, &source_location, Some(name))
    }

    /// Reports a change of memory watched with `rdb::watch` (set where `label` says): the host
    /// prints it on rdb's stderr with the accessing instruction's place in the program
    /// (`values`: old bytes, new bytes, the `rdb_access` record), or the system call `by` that
    /// wrote it.
    pub fn report_watch(
        &mut self,
        label: &str,
        by: Option<&str>,
        values: &[ArgValue],
        tracee: &dyn Target,
    ) -> Result<(), HostError> {
        let mut values = values.to_vec();
        for text in [label, by.unwrap_or("")] {
            let mut b = text.as_bytes().to_vec();
            b.push(0);
            values.push(ArgValue::Bytes(b));
        }
        let sizes = vec![0; values.len()];
        let location = Loc(rdb_descriptors::SourceLocation { file: label.into(), line: 0, column: 0 });
        let done =
            self.run(protocol::WATCH_REPORT, protocol::WATCH_REPORT, &values, &sizes, tracee, &location, None)?;
        if done.is_clean() {
            Ok(())
        } else {
            Err(HostError::Protocol(done.to_string()))
        }
    }

    /// Runs call callback `id` for a program stopped at module-relative code `address` (one of
    /// its sites), with the function's arguments where the argument descriptors say they are
    /// there. The program is only read.
    pub fn invoke_callback_at(&mut self, id: u32, address: u64, tracee: &dyn Target) -> Result<Invocation, HostError> {
        let callback = self.callbacks.get(&id).ok_or(HostError::UnknownCallback { id })?;
        let source_location = Loc(callback.source.clone());
        let name = callback.function.clone();
        let arguments = self.callback_arguments.get(&id).map(Vec::as_slice).unwrap_or_default();
        let refs: Vec<&ArgumentDescriptor> = arguments.iter().collect();
        let values = args::compute(id, address, &refs, tracee, &self.entry_values, &source_location)?;
        let sizes: Vec<u64> = refs.iter().map(|a| a.size).collect();
        self.run(id, id, &values, &sizes, tracee, &source_location, Some(name))
    }

    /// Calls debug function `function` (of region or callback `region`) with `values`,
    /// restarting the host when it collides with the program at start-up.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        region: u32,
        function: u32,
        values: &[ArgValue],
        sizes: &[u64],
        tracee: &dyn Target,
        source_location: &Loc,
        callback: Option<String>,
    ) -> Result<Invocation, HostError> {
        if tracee.pid().0 != self.last_pid {
            // Another process of the trace: its own address space.
            self.invalidate_mappings();
            self.last_pid = tracee.pid().0;
        }
        let mut collision_retries = 0;
        loop {
            if self.process.is_none() {
                self.start(tracee.pid().0)?;
            }
            let result = self.call(region, function, values, sizes, tracee, source_location)?;
            let result = match (result, &callback) {
                (Called::Done(mut outcome), Some(name)) => {
                    outcome.callback = Some(name.clone());
                    Called::Done(outcome)
                }
                (other, _) => other,
            };
            match result {
                Called::Done(outcome) => return Ok(outcome),
                Called::Collision(text) => {
                    // A fresh host has a fresh random layout; only worth it
                    // while no debug-only state would be lost.
                    if self.calls == 0 && collision_retries < 3 {
                        collision_retries += 1;
                        self.stop();
                        self.restarts += 1;
                        continue;
                    }
                    return Err(HostError::Collision(text));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        region: u32,
        function: u32,
        values: &[ArgValue],
        sizes: &[u64],
        tracee: &dyn Target,
        source_location: &Loc,
    ) -> Result<Called, HostError> {
        let mut w = Writer::new(protocol::INVOKE);
        let mut flags = 0;
        if self.stale {
            flags |= protocol::FLAG_INVALIDATE;
        }
        let maps = if self.maps_dirty {
            flags |= protocol::FLAG_MAPS;
            Some(current_ranges(tracee)?)
        } else {
            None
        };
        if std::mem::take(&mut self.after_access) {
            flags |= protocol::FLAG_AFTER_ACCESS;
        }
        if self.check_backtraces {
            flags |= protocol::FLAG_CHECK_BACKTRACE;
        }
        w.u32(function).u32(flags).u32(tracee.pid().0 as u32).u64(tracee.load_bias());
        for reg in regs_array(tracee.regs()) {
            w.u64(reg);
        }
        if let Some(maps) = &maps {
            w.ranges(maps);
        }
        w.u32(values.len() as u32);
        for (v, size) in values.iter().zip(sizes) {
            match v {
                ArgValue::Address(a) => w.u32(0).u64(*a).u64(*size),
                ArgValue::Bytes(b) => w.u32(1).bytes(b),
                ArgValue::Copied { bytes, from } => w.u32(3).bytes(bytes).u64(*from),
                ArgValue::Record { bytes, pointers } => {
                    w.u32(2).bytes(bytes).u32(pointers.len() as u32);
                    for &(offset, index) in pointers {
                        w.u32(offset).u32(index);
                    }
                    &mut w
                }
            };
        }
        let fd = self.socket_fd();
        let Some(process) = self.process.as_mut() else {
            return Ok(Called::Done(self.host_died(region, source_location, None)));
        };
        if process.channel.send(&w.0).is_err() {
            // The host is gone (killed from outside?): report it as a crash.
            return Ok(Called::Done(self.host_died(region, source_location, None)));
        }
        self.stale = false;
        self.maps_dirty = false;
        // The coarse clock (no system call): a deadline up to one tick early.
        let deadline = monotonic_coarse_ns() + self.options.timeout.as_nanos() as u64;
        loop {
            let received = match self.process.as_mut() {
                Some(p) => p.channel.recv(&mut self.buf, Some(deadline)),
                None => Ok(Received::Message(0)),
            };
            let n = match received {
                Ok(Received::TimedOut) => {
                    self.kill();
                    return Ok(Called::Done(self.finish(
                        region,
                        source_location,
                        InvokeOutcome::TimedOut { after: self.options.timeout },
                        true,
                    )));
                }
                Ok(Received::Message(n)) if n > 0 => n,
                _ => return Ok(Called::Done(self.host_died(region, source_location, None))),
            };
            let mut r = Reader(&self.buf[..n]);
            match r.u32() {
                Some(protocol::PAGE_REQUEST) => {
                    r.u32();
                    let (addr, len) = (r.u64().unwrap_or(0), r.u64().unwrap_or(0).min(64 * 1024));
                    if let Some(served) = &mut self.served {
                        served.push((addr, len));
                    }
                    let mut reply = vec![0u8; protocol::PAGE_DATA_HEADER + len as usize];
                    let errno = match tracee.read_exact(addr, &mut reply[protocol::PAGE_DATA_HEADER..]) {
                        Ok(()) => 0,
                        Err(e) => e.raw_os_error().unwrap_or(libc::EFAULT),
                    };
                    reply[0..4].copy_from_slice(&protocol::PAGE_DATA.to_le_bytes());
                    reply[4..8].copy_from_slice(&errno.to_le_bytes());
                    reply[8..12].copy_from_slice(&(len as u32).to_le_bytes());
                    if errno != 0 {
                        reply.truncate(protocol::PAGE_DATA_HEADER);
                    }
                    let _ = send(fd, &reply);
                }
                Some(protocol::MAPS_REQUEST) => {
                    r.u32();
                    let addr = r.u64().unwrap_or(0);
                    let mut ranges = current_ranges(tracee).unwrap_or_default();
                    if addr != 0 && !ranges.iter().any(|m| m.start <= addr && addr < m.end) {
                        // A target that cannot list every mapping may find this one by probing.
                        if let Ok(Some(m)) = tracee.mapping_at(addr) {
                            if mirrored(&m) && ranges.len() < protocol::MAX_RANGES {
                                ranges.push(spec(&m));
                                ranges.sort_by_key(|r| r.start);
                            }
                        }
                    }
                    let mut w = Writer::new(protocol::MAPS);
                    w.ranges(&ranges);
                    let _ = send(fd, &w.0);
                }
                Some(protocol::DONE) => return self.done(region, source_location, n),
                Some(protocol::CRASHED) => {
                    let signal = r.u32().unwrap_or(0) as i32;
                    let addr = r.u64().unwrap_or(0);
                    let why = r.u32().unwrap_or(0);
                    return Ok(Called::Done(self.host_died(region, source_location, Some((signal, addr, why)))));
                }
                other => {
                    // Not a host we understand any more: replace it.
                    self.kill();
                    self.finish(region, source_location, InvokeOutcome::Completed, true);
                    return Err(HostError::Protocol(format!("unexpected message {other:?} from the host")));
                }
            }
        }
    }

    fn done(&mut self, region: u32, source_location: &Loc, n: usize) -> Result<Called, HostError> {
        let malformed = || HostError::Protocol("malformed reply from the host".into());
        let mut r = Reader(&self.buf[4..n]);
        let status = r.u32().ok_or_else(malformed)?;
        let count = r.u32().ok_or_else(malformed)?;
        let mut writes = Vec::new();
        for _ in 0..count {
            writes.push(r.u64().ok_or_else(malformed)?);
        }
        let panic = String::from_utf8_lossy(r.bytes().ok_or_else(malformed)?).into_owned();
        let error = String::from_utf8_lossy(r.bytes().ok_or_else(malformed)?).into_owned();
        for _ in 0..r.u32().unwrap_or(0) {
            let (Some(address), Some(len), Some(access), Some(label)) = (r.u64(), r.u64(), r.u32(), r.bytes()) else {
                return Err(malformed());
            };
            let label = String::from_utf8_lossy(label).into_owned();
            self.watch_requests.push(WatchRequest { address, len, reads: access != 0, label });
        }
        for _ in 0..r.u32().unwrap_or(0) {
            let (Some(ok), Some(line), Some(column)) = (r.u32(), r.u32(), r.u32()) else {
                return Err(malformed());
            };
            let (Some(condition), Some(message), Some(backtrace)) = (r.bytes(), r.bytes(), r.bytes()) else {
                return Err(malformed());
            };
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            self.checks.push(Check {
                ok: ok != 0,
                line,
                column,
                condition: text(condition),
                message: text(message),
                backtrace: text(backtrace),
            });
        }
        match status {
            protocol::STATUS_COLLISION => {
                self.maps_dirty = true;
                return Ok(Called::Collision(error));
            }
            protocol::STATUS_RAN_WITH_COLLISION => {
                self.maps_dirty = true;
                return Err(HostError::Collision(error));
            }
            protocol::STATUS_PROTOCOL => return Err(HostError::Protocol(error)),
            _ => {}
        }
        self.calls += 1;
        let outcome = if !writes.is_empty() {
            InvokeOutcome::WroteProgramMemory { addresses: writes, aborted: false }
        } else if !panic.is_empty() {
            InvokeOutcome::Panicked { message: panic }
        } else {
            InvokeOutcome::Completed
        };
        Ok(Called::Done(self.finish(region, source_location, outcome, false)))
    }

    /// The host exited or reported a fatal signal: collect its status,
    /// describe what happened.
    fn host_died(&mut self, region: u32, source_location: &Loc, report: Option<(i32, u64, u32)>) -> Invocation {
        let status = self.reap(Duration::from_secs(2));
        let outcome = match report {
            Some((_, addr, reason::WRITE_ABORTED)) => {
                InvokeOutcome::WroteProgramMemory { addresses: vec![addr], aborted: true }
            }
            Some((signal, addr, why)) => {
                let reason = match why {
                    reason::UNMAPPED if addr < 4096 => "a null pointer (the program has no memory there)".to_string(),
                    reason::UNMAPPED => "the program has no memory at this address (bad pointer?)".to_string(),
                    reason::UNREADABLE => "the program's memory at this address cannot be read".to_string(),
                    reason::NOT_READABLE => {
                        "the program's memory at this address is not accessible (guard page?)".to_string()
                    }
                    reason::COLLISION => "the debug host has its own memory at this program address".to_string(),
                    reason::STACK_OVERFLOW => "debug code overflowed its stack (runaway recursion?)".to_string(),
                    _ => String::new(),
                };
                // A fault at an address names it, null included (the commonest bad pointer);
                // another signal has none.
                let faulted =
                    matches!(why, reason::UNMAPPED | reason::UNREADABLE | reason::NOT_READABLE | reason::COLLISION);
                let address = (faulted || addr != 0).then_some(addr);
                InvokeOutcome::Crashed { signal, address, reason }
            }
            None => {
                use std::os::unix::process::ExitStatusExt;
                let (signal, reason) = match status {
                    Some(s) if s.signal().is_some() => (s.signal().unwrap(), String::new()),
                    Some(s) => (0, format!("the debug host exited with {s}")),
                    None => (0, "the debug host stopped answering".to_string()),
                };
                InvokeOutcome::Crashed { signal, address: None, reason }
            }
        };
        self.finish(region, source_location, outcome, true)
    }

    fn finish(&mut self, region: u32, source_location: &Loc, outcome: InvokeOutcome, restarted: bool) -> Invocation {
        if restarted {
            self.process = None;
            self.restarts += 1;
            self.calls = 0;
            self.maps_dirty = true;
            self.stale = true;
        }
        Invocation {
            region,
            callback: None,
            source_location: source_location.clone(),
            outcome,
            host_restarted: restarted,
        }
    }

    fn socket_fd(&self) -> RawFd {
        self.process.as_ref().map(|p| p.socket.as_raw_fd()).unwrap_or(-1)
    }

    /// Starts a host process (`pid`: the program, 0 when not known yet; it
    /// is sent again with each start).
    fn start(&mut self, pid: i32) -> Result<(), HostError> {
        let (ours, theirs) = socket_pair()?;
        // The mailbox only pays when both sides busy-wait (see `channel`).
        let mailbox = if self.options.spin.is_zero() {
            None
        } else {
            Some(Mailbox::create().map_err(|source| HostError::Io { what: "creating the host mailbox", source })?)
        };
        let mailbox_raw = mailbox.as_ref().map(|m| m.fd()).unwrap_or(-1);
        let mut cmd = Command::new(&self.program);
        cmd.arg("--fd").arg(HOST_FD.to_string()).env(crate::host::HOST_ENV, "1").stdin(Stdio::null());
        if let Some(f) = &self.options.stdout {
            cmd.stdout(f.try_clone().map_err(|source| HostError::Io { what: "duplicating stdout", source })?);
        }
        if let Some(f) = &self.options.stderr {
            cmd.stderr(f.try_clone().map_err(|source| HostError::Io { what: "duplicating stderr", source })?);
        }
        let theirs_raw = theirs.as_raw_fd();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if theirs_raw == HOST_FD {
                    if libc::fcntl(HOST_FD, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(theirs_raw, HOST_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if mailbox_raw >= 0 && libc::dup2(mailbox_raw, MAILBOX_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The replayer's thread may run with the TSC disabled, which a child
                // inherits across exec: debug code must be able to read clocks.
                libc::prctl(libc::PR_SET_TSC, libc::PR_TSC_ENABLE, 0, 0, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|source| HostError::Spawn { program: self.program.clone(), source })?;
        drop(theirs);
        let channel = Channel::new(ours.as_raw_fd(), Side::Replayer, mailbox, self.options.spin);
        let has_mailbox = mailbox_raw >= 0;
        self.process = Some(Process { child, socket: ours, channel });
        self.maps_dirty = true;
        self.stale = true;
        self.calls = 0;

        let mut w = Writer::new(protocol::INIT);
        let fill = match self.options.memory {
            MemoryAccess::Direct => protocol::FILL_DIRECT,
            MemoryAccess::ViaReplayer => protocol::FILL_PARENT,
        };
        w.u32(pid as u32)
            .u32(fill)
            .u32((self.options.on_write == WritePolicy::Abort) as u32)
            .u32(self.options.pages_per_fill)
            .u32(self.options.cpu.map(|c| c as u32).unwrap_or(u32::MAX))
            .u32(match self.options.faults {
                FaultHandling::Auto => protocol::FAULTS_AUTO,
                FaultHandling::Signal => protocol::FAULTS_SIGNAL,
                FaultHandling::Userfaultfd => protocol::FAULTS_USERFAULTFD,
            })
            .u32(self.options.spin.as_micros().min(u32::MAX as u128) as u32)
            .u32(if has_mailbox { MAILBOX_FD as u32 } else { u32::MAX })
            .u32(self.options.tsc_disabled as u32)
            .bytes(self.module.as_os_str().as_encoded_bytes())
            .bytes(self.dwarf_binary.as_os_str().as_encoded_bytes());
        w.u32(self.line_maps.len() as u32);
        for m in &self.line_maps {
            w.bytes(m.file.as_os_str().as_encoded_bytes()).u32(m.lines.len() as u32);
            for &l in &m.lines {
                w.u32(l);
            }
        }
        // One debug function per region, or per location that names a
        // table entry of its own (an instantiation of a generic region).
        let mut wants: std::collections::BTreeMap<u32, &DebugEntry> = Default::default();
        for (id, region) in &self.regions {
            let locations = &region.function.locations;
            match &region.function.entry {
                DebugEntry::RegionTable if !locations.is_empty() && locations.iter().all(|l| l.entry_id.is_some()) => {
                    for l in locations {
                        wants.insert(l.entry_id.unwrap_or(*id), &region.function.entry);
                    }
                }
                entry => {
                    wants.insert(*id, entry);
                    for l in locations.iter().filter(|_| matches!(entry, DebugEntry::RegionTable)) {
                        wants.insert(l.entry_id.unwrap_or(*id), entry);
                    }
                }
            }
        }
        for (id, callback) in &self.callbacks {
            wants.insert(*id, &callback.entry);
        }
        w.u32(wants.len() as u32);
        for (id, entry) in wants {
            match entry {
                DebugEntry::Symbol { name } => w.u32(id).u32(0).bytes(name.as_bytes()),
                DebugEntry::RegionTable => w.u32(id).u32(1).bytes(b""),
                DebugEntry::CallbackTable => w.u32(id).u32(2).bytes(b""),
            };
        }
        w.u32(self.code_bytes.len() as u32);
        for &(offset, byte) in &self.code_bytes {
            w.u64(offset).u32(byte as u32);
        }
        let fd = self.socket_fd();
        let module = self.module.clone();
        let failed = |this: &mut DebugHost, message: String| {
            this.kill();
            this.process = None;
            Err(HostError::Module { module: module.clone(), message })
        };
        if send(fd, &w.0).is_err() {
            return failed(self, "the debug host exited at start-up".into());
        }
        // Loading runs the module's initializers after a dlopen of a large file: on a busy
        // machine that alone took over 10 s, so the hang limit here is at least a minute.
        let answered = readable_for(fd, Some(self.options.timeout.max(Duration::from_secs(60))))
            .map_err(|source| HostError::Io { what: "waiting for the host", source })?;
        if !answered {
            return failed(self, "the debug host did not answer while loading the module".into());
        }
        let n = recv(fd, &mut self.buf).unwrap_or(0);
        let mut r = Reader(&self.buf[..n]);
        match r.u32() {
            Some(protocol::READY) => {
                self.userfaultfd = r.u32() == Some(1);
                Ok(())
            }
            Some(protocol::INIT_ERROR) => {
                let text = String::from_utf8_lossy(r.bytes().unwrap_or(b"")).into_owned();
                self.reap(Duration::from_secs(2));
                failed(self, text)
            }
            _ => {
                use std::os::unix::process::ExitStatusExt;
                let status = self.reap(Duration::from_secs(2));
                let how = match status {
                    Some(s) if s.signal().is_some() => {
                        format!("the debug host died of {} while loading it", signal_name(s.signal().unwrap()))
                    }
                    Some(s) => format!("the debug host exited with {s} while loading it"),
                    None => "the debug host stopped answering while loading it".into(),
                };
                failed(self, how)
            }
        }
    }

    /// Waits up to `grace` for the host to exit, then kills it.
    fn reap(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let p = self.process.as_mut()?;
        let deadline = Instant::now() + grace;
        loop {
            match p.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                _ => {
                    let _ = p.child.kill();
                    return p.child.wait().ok();
                }
            }
        }
    }

    fn kill(&mut self) {
        if let Some(p) = self.process.as_mut() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }

    fn stop(&mut self) {
        if let Some(p) = self.process.take() {
            drop(p.socket); // the host exits on end of file
            let mut child = p.child;
            let deadline = Instant::now() + Duration::from_millis(500);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for DebugHost {
    fn drop(&mut self) {
        self.stop();
    }
}

enum Called {
    Done(Invocation),
    Collision(String),
}

/// The bytes of the ELF file `binary` at link-time addresses `addresses`
/// (those it has file bytes for; none if it cannot be read).
fn code_bytes(binary: &Path, addresses: &[u64]) -> Vec<(u64, u8)> {
    use object::{Object, ObjectSegment};
    let Ok(data) = std::fs::read(binary) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &a in addresses {
        for seg in file.segments() {
            let (offset, size) = seg.file_range();
            if a >= seg.address() && a - seg.address() < size {
                if let Some(&b) = data.get((offset + a - seg.address()) as usize) {
                    out.push((a, b));
                }
                break;
            }
        }
    }
    out
}

/// The fd number the host finds its socket at.
const HOST_FD: RawFd = 3;
/// The fd number the host finds its mailbox at, when it has one.
const MAILBOX_FD: RawFd = 4;

fn find_program(options: &HostOptions) -> Result<PathBuf, HostError> {
    if let Some(p) = &options.program {
        return Ok(p.clone());
    }
    let mut tried = Vec::new();
    if let Some(p) = std::env::var_os("RDB_DEBUG_HOST") {
        return Ok(PathBuf::from(p));
    }
    if let Ok(exe) = std::env::current_exe() {
        let mut dir = exe.parent().map(Path::to_path_buf);
        for _ in 0..2 {
            let Some(d) = dir else { break };
            let candidate = d.join("rdb-debug-host");
            if candidate.is_file() {
                return Ok(candidate);
            }
            tried.push(candidate);
            dir = d.parent().map(Path::to_path_buf);
        }
    }
    Err(HostError::HostProgramNotFound { tried })
}

fn current_ranges(tracee: &dyn Target) -> Result<Vec<protocol::RangeSpec>, HostError> {
    let maps = tracee.mappings().map_err(HostError::Mappings)?;
    let mut out: Vec<protocol::RangeSpec> = maps.iter().filter(|m| mirrored(m)).map(spec).collect();
    out.truncate(protocol::MAX_RANGES);
    Ok(out)
}

/// Whether the host mirrors this mapping. Kernel pseudo mappings that are either unreadable
/// (`[vvar]`) or identical in every process at a fixed address (`[vsyscall]`) are left out.
fn mirrored(m: &Mapping) -> bool {
    !(m.name.starts_with("[vvar") || m.name == "[vsyscall]")
}

/// The range as the host reserves it: readable mappings read-only (read+exec for code).
fn spec(m: &Mapping) -> protocol::RangeSpec {
    let mut prot = 0;
    if m.readable {
        prot |= libc::PROT_READ as u32;
        if m.executable {
            prot |= libc::PROT_EXEC as u32;
        }
    }
    protocol::RangeSpec { start: m.start, end: m.end, prot }
}

/// The registers in `user_regs_struct` order.
fn regs_array(r: &rdb_tracee::Regs) -> [u64; 27] {
    [
        r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx, r.r11, r.r10, r.r9, r.r8, r.rax, r.rcx, r.rdx, r.rsi, r.rdi,
        r.orig_rax, r.rip, r.cs, r.eflags, r.rsp, r.ss, r.fs_base, r.gs_base, r.ds, r.es, r.fs, r.gs,
    ]
}

fn socket_pair() -> Result<(OwnedFd, OwnedFd), HostError> {
    crate::sys::socket_pair().map_err(|source| HostError::Io { what: "creating the host socket", source })
}

use crate::protocol::{recv, send};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_pseudo_mappings_are_not_mirrored_and_protections_follow_the_program() {
        let maps = rdb_tracee::procfs::parse_maps(
            "\
555555554000-555555555000 r--p 00000000 fe:01 1234    /tmp/a b/prog
7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0       [vvar]
7ffff7fc5000-7ffff7fc7000 r-xp 00000000 00:00 0       [vdso]
7ffff7fc7000-7ffff7fc8000 ---p 00000000 00:00 0
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
",
        );
        assert!(mirrored(&maps[0]) && spec(&maps[0]).prot == libc::PROT_READ as u32);
        assert!(!mirrored(&maps[1]));
        assert!(mirrored(&maps[2]));
        assert_eq!(spec(&maps[2]).prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert_eq!(spec(&maps[3]).prot, 0);
        assert!(!mirrored(&maps[4]));
    }
}
