//! The recorder: run a program under ptrace and log everything non-deterministic.
//!
//! Every syscall stops twice (entry, exit). At exit the result and the memory the kernel wrote
//! (per the syscall table) become a `Syscall` event. Process creation, exec, signals, `rdtsc`
//! and exits are events too, in the order the recorder saw them: that order is the schedule the
//! replayer enforces.
//!
//! Threads of one process take turns running user code (see the crate docs): the recorder
//! keeps, per thread group, the thread whose turn it is and the threads ready for one.
//!
//! Asynchronous signals are delivered at syscall boundaries: one that arrives while the process
//! runs user code is held back and re-sent at its next syscall stop, so replay can deliver it
//! at the same point without counting instructions.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdb_tracee::ptrace::{self, is_synchronous, si_code, si_signo, SigInfo, SyscallStop, Wait};
use rdb_tracee::{mem, procfs, this_process as sys, Memory, Pid};

use crate::clock::Clock;
use crate::cpuid;
use crate::effects;
use crate::location;
use crate::observer::ProcessImage;
use crate::process::{self, FileHashes};
use crate::syscalls::{self, In, Policy, SyscallDesc, Sysno};
use crate::trace::{self, Event, Header, KeepFiles, MappedFile, Stream, Summary, Tid, TraceWriter};
use crate::Error;

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The program as the user named it (looked up in `PATH` when it has no slash).
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Trace directory to create.
    pub trace_dir: PathBuf,
    /// Pin the recorder and the program to one CPU (much cheaper ptrace stops).
    pub pin_cpu: bool,
    /// Keep the executables and mapped files in the trace (see `trace::files`).
    pub keep_files: KeepFiles,
    /// What the executable tells about its build, for the header (`rdb_locate::build::describe`);
    /// kept only when it describes the file recorded (same hash).
    pub program_build: Option<rdb_descriptors::ProgramBuild>,
    /// Trap `cpuid` where the host offers CPUID faulting (see `cpuid`); off records the
    /// program's `cpuid` running natively, as on a host without it.
    pub trap_cpuid: bool,
}

/// How the recorder interleaves the threads of a process (see the crate docs).
#[derive(Debug, Clone)]
pub struct Schedule {
    /// A thread that has had its turn this long is switched out at its next syscall exit when
    /// another thread of its group is ready.
    pub slice: Duration,
    /// Randomise switch points and the choice of the next thread with this seed (stored in
    /// the trace header), to expose rare interleavings.
    pub chaos: Option<u64>,
    /// Stop the recording, naming the thread and where it spins, when one thread runs user
    /// code this long without a syscall while other threads of its group wait for their turn.
    pub watchdog: Duration,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule { slice: Duration::from_millis(1), chaos: None, watchdog: Duration::from_secs(10) }
    }
}

/// The kernel's restart code for calls resumed by `restart_syscall` (never seen by programs).
const ERESTART_RESTARTBLOCK: i64 = -516;

/// A syscall kept running with the turn held is given up as blocking after this long.
const BLOCKING_AFTER: Duration = Duration::from_millis(2);

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct RecordOutcome {
    pub trace_dir: PathBuf,
    /// Raw wait status of the root process.
    pub exit_status: i32,
    pub events: u64,
    pub syscalls: u64,
    pub processes: u64,
    pub event_bytes: u64,
}

/// Find `program` like `execvp` does: the path to pass to `execve` (as typed when it has a
/// slash, else `PATH` entry + name), not canonicalized, so the program sees what it would
/// natively.
pub fn resolve_program(program: &std::ffi::OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(p);
        if let Ok(md) = std::fs::metadata(&cand) {
            if md.is_file() && md.mode() & 0o111 != 0 {
                return Some(cand);
            }
        }
    }
    None
}

/// Files under these prefixes are verified by hash rather than copied into the trace.
const SYSTEM_PREFIXES: &[&str] =
    &["/usr/", "/lib/", "/lib64/", "/lib32/", "/bin/", "/sbin/", "/opt/", "/etc/", "/nix/", "/snap/"];
/// Largest data-file mapping whose bytes go into the trace.
const MAX_DATA_SNAPSHOT: u64 = 4 << 20;

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && &magic == b"\x7fELF"
}

/// Hashes thread ids and fds with one multiplication. The recorder looks threads up about ten
/// times per syscall; SipHash's resistance to chosen keys buys nothing for kernel-assigned ids.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_i32(&mut self, n: i32) {
        self.write_u64(n as u32 as u64);
    }
    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the product's high bits (which hashbrown uses) depend on all of n.
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// What a thread waiting for its turn does when it gets it.
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// Finish the syscall it stopped at the exit of (log it, resume).
    SyscallExit { ret: i64, pc: u64, sp: u64 },
    /// A new thread's first turn.
    Start,
}

/// The threads of one process (thread group): at most one runs user code.
#[derive(Default)]
struct Group {
    /// The thread whose turn it is (running user code, or in a syscall it did not give the
    /// turn up for).
    running: Option<Pid>,
    /// Since when `running` has had the turn.
    since: Option<Instant>,
    /// Threads stopped and waiting for their turn, in arrival order.
    ready: VecDeque<Pid>,
    /// `exit_group` was called: no more turns.
    dying: bool,
}

/// Per-thread recorder state.
#[derive(Default)]
struct Proc {
    /// Thread group id (the process).
    tgid: Pid,
    /// The action to take when the thread gets its turn.
    pending: Option<Pending>,
    /// Inside a syscall: since when, and whether the thread gave its turn up at entry.
    in_kernel: Option<(Instant, bool)>,
    /// The syscall it is in is re-executed at replay, so it keeps the turn however long it
    /// takes (replay must see it complete before the next thread runs).
    keeps_turn: bool,
    /// Last time the thread was resumed into user code.
    user_since: Option<Instant>,
    /// The watchdog sent SIGSTOP at this time to learn where the thread spins.
    probing: Option<Instant>,
    /// The watchdog already warned about the current stretch of user code.
    warned: bool,
    /// The syscall the process is in, with its arguments.
    entry: Option<(&'static SyscallDesc, [u64; 6])>,
    exec_pending: bool,
    /// Absolute path of the file the pending `execve` names.
    exec_path: Option<PathBuf>,
    /// Which of our output streams each fd writes to (cleared when fds change).
    fd_streams: IdMap<u64, Option<Stream>>,
    /// Asynchronous signals held back until the next syscall stop (siginfo bytes).
    deferred: VecDeque<SigInfo>,
    /// A held-back signal re-sent at a syscall stop, awaiting its delivery stop.
    injecting: Option<SigInfo>,
    /// Program counter, stack pointer and result at the last syscall exit, to recognise a
    /// signal stop that happens right at that boundary.
    last_exit: Option<(u64, u64, i64)>,
    /// The call (number, arguments) that returned `-ERESTART_RESTARTBLOCK` at the thread's
    /// last syscall exit: the one a following `restart_syscall` resumes.
    restart_block: Option<(&'static SyscallDesc, [u64; 6])>,
}

struct Recorder {
    w: TraceWriter,
    /// The recorder thread's time (it runs with the TSC disabled).
    clock: Clock,
    /// Set while the recorder thread runs with the TSC disabled.
    tsc_off: Option<sys::TscDisabled>,
    /// The CPUs rdb itself could use before pinning everything to one CPU: what the program is
    /// told by `sched_getaffinity`, so that it sizes its thread pools as it would natively
    /// (pinning is a cost measure of rdb's, not a property of the recorded run).
    native_affinity: Option<Vec<u8>>,
    procs: IdMap<Pid, Proc>,
    groups: IdMap<Pid, Group>,
    schedule: Schedule,
    rng: u64,
    waits: Option<Waiter>,
    /// Executable image of each thread group, for watchdog reports.
    images: HashMap<Pid, ProcessImage>,
    /// Children whose first stop came before their parent's fork event.
    early_children: HashSet<Pid>,
    /// Children announced by a fork event whose first stop has not come yet, with the thread
    /// group they join.
    awaited_children: HashMap<Pid, Pid>,
    hashes: FileHashes,
    mapped: HashMap<Vec<u8>, [u8; 32]>,
    stdout_id: Option<(u64, u64)>,
    stderr_id: Option<(u64, u64)>,
    root: Pid,
    root_status: Option<i32>,
    syscalls: u64,
    processes: u64,
    /// `cpuid` is trapped in every tracee (the header's `cpuid_trapped`).
    cpuid_trapped: bool,
    cpuid_cache: cpuid::Cache,
}

/// Identity (device, inode) of what our `fd` writes to, to recognise the program's writes that
/// reach it. `None` for `/dev/null`: nothing written there was seen, so there is nothing to
/// re-emit at replay (and a program writing to its own `/dev/null` would otherwise have every
/// write copied into the trace whenever rdb's output is discarded).
fn file_id_of_fd(fd: i32) -> Option<(u64, u64)> {
    use std::os::unix::fs::FileTypeExt;
    let md = std::fs::metadata(format!("/proc/self/fd/{fd}")).ok()?;
    const DEV_NULL: u64 = (1 << 8) | 3; // character device 1:3
    if md.file_type().is_char_device() && md.rdev() == DEV_NULL {
        return None;
    }
    Some((md.dev(), md.ino()))
}

/// The absolute path an `execve(at)` names, resolved against the process's cwd or dirfd.
fn exec_target(pid: Pid, dirfd: u64, path_ptr: u64) -> Option<PathBuf> {
    let name = mem::read_cstring(pid, path_ptr).ok()?;
    if name.is_empty() {
        return None; // AT_EMPTY_PATH: the fd itself; /proc/PID/exe will tell after exec
    }
    let name = PathBuf::from(std::ffi::OsStr::from_bytes(&name));
    if name.is_absolute() {
        return Some(name);
    }
    let base =
        if dirfd as i32 == libc::AT_FDCWD { procfs::cwd(pid).ok()? } else { procfs::fd_path(pid, dirfd).ok()? };
    Some(base.join(name))
}

/// Record a program into a new trace directory, with the default thread schedule.
pub fn record(opts: &RecordOptions) -> Result<RecordOutcome, Error> {
    record_with(opts, &Schedule::default())
}

/// Record a program into a new trace directory, interleaving its threads as `schedule` says.
pub fn record_with(opts: &RecordOptions, schedule: &Schedule) -> Result<RecordOutcome, Error> {
    let started = Instant::now();
    let exe = resolve_program(&opts.program).ok_or_else(|| Error::Spawn {
        program: opts.program.to_string_lossy().into_owned(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "not found (or not executable)"),
    })?;
    let mut hashes = FileHashes::default();
    let (exe_hash, _) =
        hashes.hash(&exe).map_err(|source| Error::Spawn { program: exe.display().to_string(), source })?;
    let cwd = std::env::current_dir().unwrap_or_default();
    // What execve is given (as the user typed it) and the absolute path replay will use.
    let exec_name = exe;
    let exe: PathBuf = cwd.join(&exec_name).components().collect(); // drops `./`
    let native_affinity = sys::affinity_mask().ok();
    let pinned = if opts.pin_cpu {
        let cpu = sys::current_cpu();
        sys::pin_to_cpu(cpu).ok().map(|_| cpu)
    } else {
        None
    };
    let mut argv: Vec<Vec<u8>> = vec![opts.program.as_bytes().to_vec()];
    argv.extend(opts.args.iter().map(|a| a.as_bytes().to_vec()));
    let envp: Vec<Vec<u8>> = std::env::vars_os()
        .map(|(k, v)| {
            let mut e = k.into_vec();
            e.push(b'=');
            e.extend(v.into_vec());
            e
        })
        .collect();
    let (cpu, cpu_flags) = trace::cpu_identity();
    let cpuid_trapped = opts.trap_cpuid && cpuid::available();
    let header = Header {
        format: trace::FORMAT_NAME.into(),
        version: trace::FORMAT_VERSION,
        rdb_version: env!("CARGO_PKG_VERSION").into(),
        program: exe.display().to_string(),
        argv: argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect(),
        program_blake3: trace::hex(&exe_hash),
        cwd: cwd.display().to_string(),
        started_unix: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        pinned_cpu: pinned,
        cpu,
        cpu_flags,
        kernel: trace::kernel_release(),
        chaos_seed: schedule.chaos,
        cpuid_trapped,
        program_build: opts.program_build.clone().filter(|b| b.blake3 == trace::hex(&exe_hash)),
    };
    let w = TraceWriter::create(&opts.trace_dir, &header, &opts.keep_files)?;

    sys::ignore_terminal_signals();
    let mut cmd = Command::new(&exec_name);
    cmd.arg0(&opts.program).args(&opts.args);
    // SAFETY: the closure only makes two async-signal-safe syscalls (see the callee).
    unsafe {
        cmd.pre_exec(ptrace::child_prepare_for_trace);
    }
    let child = cmd.spawn().map_err(|source| Error::Spawn { program: exe.display().to_string(), source })?;
    let root = Pid::of(&child);
    // The child stops with SIGTRAP right after its exec.
    match ptrace::wait_pid(root).map_err(Error::ptrace(root, "waiting for the first stop"))? {
        Wait::Stopped { sig: libc::SIGTRAP, .. } => {}
        other => {
            return Err(Error::Spawn {
                program: exe.display().to_string(),
                source: std::io::Error::other(format!("unexpected first stop {other:?}")),
            })
        }
    }
    ptrace::set_options(root, ptrace::TRACE_OPTIONS).map_err(Error::ptrace(root, "setting options"))?;

    let mut rec = Recorder {
        w,
        clock: Clock::new(),
        tsc_off: None,
        native_affinity: native_affinity.filter(|_| pinned.is_some()),
        procs: IdMap::default(),
        groups: IdMap::default(),
        schedule: schedule.clone(),
        rng: schedule.chaos.map_or(0, |s| s ^ 0x9e37_79b9_7f4a_7c15).max(1),
        waits: None,
        images: HashMap::new(),
        early_children: HashSet::new(),
        awaited_children: HashMap::new(),
        hashes,
        mapped: HashMap::new(),
        stdout_id: file_id_of_fd(1),
        stderr_id: file_id_of_fd(2),
        root,
        root_status: None,
        syscalls: 0,
        processes: 1,
        cpuid_trapped,
        cpuid_cache: cpuid::Cache::default(),
    };
    rec.procs.insert(root, Proc { tgid: root, ..Proc::default() });
    rec.groups.insert(root, Group { running: Some(root), since: Some(Instant::now()), ..Group::default() });
    rec.w.push(&Event::Start {
        tid: Tid(root.0 as u32),
        exe: exe.as_os_str().as_bytes().to_vec(),
        argv,
        envp,
        cwd: cwd.as_os_str().as_bytes().to_vec(),
    })?;
    let result = rec.after_exec(root, exe.clone()).and_then(|_| {
        ptrace::resume_syscall(root, 0).map_err(Error::ptrace(root, "resuming"))?;
        // Like the tracees (see `rdb_tracee::this_process`): no CR4 write at each switch
        // between them. The waiter's helper thread, spawned next, inherits it (it wakes at
        // tracee stops too).
        rec.tsc_off = sys::disable_tsc_for_this_thread().ok();
        rec.waits = Some(Waiter::spawn()?);
        let result = rec.run();
        rec.tsc_off = None;
        result
    });
    if let Err(e) = result {
        for &pid in rec.procs.keys() {
            let _ = ptrace::kill(pid, libc::SIGKILL);
        }
        while let Ok(Some(_)) = ptrace::wait_any() {}
        let _ = rec.w.flush();
        return Err(e);
    }
    let status = rec.root_status.unwrap_or(0);
    let summary = Summary {
        exit_status: status,
        syscalls: rec.syscalls,
        processes: rec.processes,
        duration_ms: started.elapsed().as_millis() as u64,
        mapped_files: rec
            .mapped
            .iter()
            .map(|(p, h)| (String::from_utf8_lossy(p).into_owned(), trace::hex(h)))
            .collect(),
        ..Summary::default()
    };
    let events = rec.w.events_written;
    let syscalls = rec.syscalls;
    let processes = rec.processes;
    let mut w = rec.w;
    w.flush()?;
    let event_bytes = w.bytes_written;
    let dir = w.finish(summary)?;
    Ok(RecordOutcome { trace_dir: dir, exit_status: status, events, syscalls, processes, event_bytes })
}

/// Waiting for tracee stops with a timeout (blocked syscalls, the watchdog). A helper thread
/// blocks in `waitid(WNOWAIT)` (any thread of the tracer's process may wait for its tracees)
/// and only says that a status is ready; the tracer thread collects it itself with `WNOHANG`.
/// So the tracer's own synchronous waits (syscall injection) keep working, and the helper
/// never takes a status away from them. The helper ends when no child is left.
///
/// The helper reports through a pipe (one byte: 1 = a status is ready, 0 = no children left)
/// that the tracer waits on with `ppoll`: the kernel keeps the deadline, whereas a channel's
/// `recv_timeout` reads the TSC, which the recorder thread has disabled (see
/// `rdb_tracee::this_process`).
struct Waiter {
    ready: std::io::PipeReader,
    again: mpsc::Sender<()>,
    /// The helper has reported and waits for `again` before looking once more.
    parked: bool,
}

enum Waited {
    Status(Pid, Wait),
    Timeout,
    NoChildren,
}

impl Waiter {
    fn spawn() -> Result<Waiter, Error> {
        use std::io::Write;
        let (ready, mut tx) = std::io::pipe().map_err(Error::ptrace(Pid(-1), "creating the waiter's pipe"))?;
        let (again, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || loop {
            let more = ptrace::wait_any_peek().unwrap_or(false);
            if tx.write_all(&[more as u8]).is_err() || !more || rx.recv().is_err() {
                break;
            }
        });
        Ok(Waiter { ready, again, parked: false })
    }

    /// What the helper said within `timeout`: `Some(true)` a status is ready, `Some(false)` no
    /// children are left (or the helper is gone), `None` nothing yet.
    fn helper_report(&mut self, timeout: Duration) -> Result<Option<bool>, Error> {
        use std::io::Read;
        use std::os::fd::AsFd;
        if !sys::wait_readable(self.ready.as_fd(), timeout).map_err(Error::ptrace(Pid(-1), "waiting for the waiter"))? {
            return Ok(None);
        }
        let mut b = [0u8; 1];
        Ok(Some(matches!(self.ready.read(&mut b), Ok(1) if b[0] == 1)))
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<Waited, Error> {
        if timeout.is_none() {
            // No deadline: a plain blocking wait, the cheapest. The helper only peeks, so it
            // cannot take this status away (at worst it reports one already collected).
            return Ok(match ptrace::wait_any().map_err(Error::ptrace(Pid(-1), "waitpid"))? {
                Some((pid, w)) => Waited::Status(pid, w),
                None => Waited::NoChildren,
            });
        }
        loop {
            match ptrace::wait_any_nohang().map_err(Error::ptrace(Pid(-1), "waitpid"))? {
                None => return Ok(Waited::NoChildren),
                Some(Some((pid, w))) => return Ok(Waited::Status(pid, w)),
                Some(None) => {}
            }
            if self.parked {
                self.parked = false;
                if self.again.send(()).is_err() {
                    return Ok(Waited::NoChildren);
                }
            }
            let t = timeout.unwrap_or(Duration::MAX);
            match self.helper_report(t)? {
                Some(true) => self.parked = true,
                Some(false) => {
                    // The helper saw no children; collect whatever is left ourselves.
                    return Ok(match ptrace::wait_any().map_err(Error::ptrace(Pid(-1), "waitpid"))? {
                        Some((pid, w)) => Waited::Status(pid, w),
                        None => Waited::NoChildren,
                    });
                }
                None => return Ok(Waited::Timeout),
            }
        }
    }
}

impl Recorder {
    fn run(&mut self) -> Result<(), Error> {
        while !self.procs.is_empty() {
            let timeout = self.next_deadline().map(|d| d.saturating_duration_since(self.clock.now()));
            let waiter = self.waits.as_mut().expect("waiter started");
            match waiter.wait(timeout)? {
                Waited::Timeout => self.on_timeout()?,
                Waited::NoChildren => break,
                Waited::Status(pid, w) => match w {
                    Wait::Exited(_) | Wait::Signaled(_) => self.on_exit(pid, w.raw_exit_status())?,
                    Wait::Stopped { sig, event } => self.on_stop(pid, sig, event)?,
                },
            }
        }
        Ok(())
    }

    /// When the scheduler must look again without a stop: a syscall run with the turn held
    /// that may block, or a thread running user code for long while others wait.
    fn next_deadline(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        for g in self.groups.values() {
            let (Some(pid), false) = (g.running, g.ready.is_empty()) else { continue };
            let Some(p) = self.procs.get(&pid) else { continue };
            let d = match (p.in_kernel, p.user_since) {
                (Some((_, false)), _) if p.keeps_turn => continue,
                (Some((t, false)), _) => t + BLOCKING_AFTER,
                (None, Some(t)) if p.probing.is_none() => t + self.schedule.watchdog,
                _ => continue,
            };
            best = Some(best.map_or(d, |b| b.min(d)));
        }
        best
    }

    fn on_timeout(&mut self) -> Result<(), Error> {
        let now = self.clock.now();
        let tgids: Vec<Pid> = self.groups.keys().copied().collect();
        for tgid in tgids {
            let g = &self.groups[&tgid];
            let (Some(pid), false) = (g.running, g.ready.is_empty()) else { continue };
            let Some(p) = self.procs.get_mut(&pid) else { continue };
            match (p.in_kernel, p.user_since) {
                (Some((t, false)), _) if !p.keeps_turn && now >= t + BLOCKING_AFTER => {
                    // Taking long in the kernel: maybe waiting for a thread that needs a turn.
                    p.in_kernel = Some((t, true));
                    self.groups.get_mut(&tgid).expect("group").running = None;
                    self.schedule(tgid)?;
                }
                (None, Some(t)) if p.probing.is_none() && now >= t + self.schedule.watchdog => {
                    // Learn where it spins: SIGSTOP it (the stop is swallowed in `on_signal`).
                    p.probing = Some(now);
                    ptrace::tgkill(tgid, pid, libc::SIGSTOP)
                        .map_err(Error::ptrace(pid, "interrupting a spinning thread"))?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Give the turn of an idle group to one of its ready threads.
    fn schedule(&mut self, tgid: Pid) -> Result<(), Error> {
        let n = match self.groups.get(&tgid) {
            Some(g) if g.running.is_none() && !g.dying && !g.ready.is_empty() => g.ready.len(),
            _ => return Ok(()),
        };
        let i = if self.schedule.chaos.is_some() { (self.random() % n as u64) as usize } else { 0 };
        // A blocking call of a single-threaded process comes through here at every exit. The
        // turn's start is measured against the 1 ms slice: exact.
        let now = self.stamp(true);
        let g = self.groups.get_mut(&tgid).expect("group");
        let pid = g.ready.remove(i).expect("index in range");
        g.running = Some(pid);
        g.since = Some(now);
        self.activate(pid)
    }

    /// `pid` got the turn: do what it was waiting to do.
    fn activate(&mut self, pid: Pid) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known thread");
        match p.pending.take() {
            Some(Pending::SyscallExit { ret, pc, sp }) => self.finish_syscall(pid, ret, pc, sp),
            Some(Pending::Start) => {
                p.user_since = Some(self.clock.now());
                p.warned = false;
                self.w.push(&Event::ThreadStart { tid: Tid(pid.0 as u32) })?;
                ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "starting a thread"))
            }
            None => ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming")),
        }
    }

    /// A time stamp for the per-syscall path. The scheduler only reads the stamps of a thread
    /// that others wait for, so with a single tracee thread nobody ever will; and some stamps
    /// are only read against the 10 s watchdog. Those get the free coarse clock (up to a tick
    /// early), the others the exact one (a syscall, ~0.4 µs).
    fn stamp(&self, exact: bool) -> Instant {
        if exact && self.procs.len() > 1 {
            self.clock.now()
        } else {
            self.clock.coarse()
        }
    }

    /// xorshift64: the chaos schedule must come out the same for the same seed and the same
    /// sequence of scheduling decisions, without a dependency.
    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// A new child was announced and has stopped for the first time: start tracking it.
    fn adopt(&mut self, child: Pid, tgid: Pid) -> Result<(), Error> {
        self.procs.insert(child, Proc { tgid, ..Proc::default() });
        if tgid == child {
            // A process of its own: its own group, running at once.
            let now = self.clock.now();
            self.groups.insert(child, Group { running: Some(child), since: Some(now), ..Group::default() });
            self.procs.get_mut(&child).expect("just inserted").user_since = Some(now);
            return ptrace::resume_syscall(child, 0).map_err(Error::ptrace(child, "starting child"));
        }
        self.procs.get_mut(&child).expect("just inserted").pending = Some(Pending::Start);
        self.groups.entry(tgid).or_default().ready.push_back(child);
        self.schedule(tgid)
    }

    fn on_exit(&mut self, pid: Pid, status: i32) -> Result<(), Error> {
        if let Some(p) = self.procs.remove(&pid) {
            self.w.push(&Event::Exit { tid: Tid(pid.0 as u32), status })?;
            if pid == self.root {
                self.root_status = Some(status);
            }
            let tgid = p.tgid;
            if let Some(g) = self.groups.get_mut(&tgid) {
                g.ready.retain(|&t| t != pid);
                if g.running == Some(pid) {
                    g.running = None;
                }
                if self.procs.values().any(|q| q.tgid == tgid) {
                    self.schedule(tgid)?;
                } else {
                    self.groups.remove(&tgid);
                    self.images.remove(&tgid);
                }
            }
        }
        Ok(())
    }

    fn on_stop(&mut self, pid: Pid, sig: i32, event: i32) -> Result<(), Error> {
        if !self.procs.contains_key(&pid) {
            // A new child's first stop, possibly before its parent's fork event.
            if let Some(tgid) = self.awaited_children.remove(&pid) {
                return self.adopt(pid, tgid);
            }
            self.early_children.insert(pid);
            return Ok(());
        }
        if sig == libc::SIGTRAP | 0x80 {
            return self.on_syscall_stop(pid);
        }
        if sig == libc::SIGTRAP && event != 0 {
            return self.on_ptrace_event(pid, event);
        }
        if event != 0 {
            // Group-stop reported through an event (not used without PTRACE_SEIZE).
            return ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"));
        }
        self.on_signal(pid, sig)
    }

    fn on_ptrace_event(&mut self, pid: Pid, event: i32) -> Result<(), Error> {
        match event {
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                let child = ptrace::new_child(pid).map_err(Error::ptrace(pid, "reading new pid"))?;
                let flags = match self.procs[&pid].entry.map(|(d, a)| (d.sysno, a)) {
                    Some((Sysno::clone, a)) => a[0],
                    Some((Sysno::vfork, _)) => (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as u64,
                    Some((Sysno::clone3, a)) => {
                        let mut b = [0u8; 8];
                        mem::read(pid, a[0], &mut b).ok();
                        u64::from_le_bytes(b)
                    }
                    _ => libc::SIGCHLD as u64,
                };
                self.w.push(&Event::NewProcess { tid: Tid(pid.0 as u32), child: Tid(child.0 as u32), flags })?;
                let tgid = if flags & libc::CLONE_THREAD as u64 != 0 {
                    self.procs[&pid].tgid
                } else {
                    self.processes += 1;
                    child
                };
                if self.early_children.remove(&child) {
                    self.adopt(child, tgid)?;
                } else {
                    self.awaited_children.insert(child, tgid);
                }
            }
            libc::PTRACE_EVENT_EXEC => {
                if let Some(p) = self.procs.get_mut(&pid) {
                    p.exec_pending = true;
                }
            }
            _ => {}
        }
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))
    }

    /// After exec (or the initial start): hide the vDSO, trap `rdtsc`, log the image.
    /// `path` is the absolute path of the file exec'ed.
    fn after_exec(&mut self, pid: Pid, path: PathBuf) -> Result<(), Error> {
        process::trap_rdtsc(pid).map_err(Error::ptrace(pid, "arming rdtsc trapping"))?;
        if self.cpuid_trapped && !cpuid::arm(pid).map_err(Error::ptrace(pid, "arming cpuid trapping"))? {
            let why = "the host offered CPUID faulting when the recording started and refuses it now";
            return Err(Error::Ptrace { pid, what: "arming cpuid trapping", source: std::io::Error::other(why) });
        }
        let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        let mut stack =
            process::read_initial_stack(pid, regs.rsp).map_err(Error::ptrace(pid, "reading the initial stack"))?;
        if let Some(off) = procfs::hide_vdso(&mut stack) {
            mem::write(pid, regs.rsp + off as u64, &stack[off..off + 8])
                .map_err(Error::ptrace(pid, "hiding the vDSO"))?;
        }
        let image = procfs::exe(pid).map_err(Error::ptrace(pid, "reading /proc/PID/exe"))?;
        let (image_blake3, _) =
            self.hashes.hash(&image).map_err(|source| Error::FileMissing { path: image.clone(), source })?;
        let (blake3, _) =
            self.hashes.hash(&path).map_err(|source| Error::FileMissing { path: path.clone(), source })?;
        // The loader the kernel mapped with the image: replay checks it (the kernel loads it by
        // path); the files themselves are kept with the trace.
        let interp = trace::files::elf_interpreter(&image).and_then(|p| {
            let (h, _) = self.hashes.hash(&p).ok()?;
            Some((p, h))
        });
        self.w.keep_file(&path, &blake3);
        self.w.keep_file(&image, &image_blake3);
        if let Some((p, h)) = &interp {
            self.w.keep_file(p, h);
        }
        let stack_copy = stack.clone();
        self.w.push(&Event::Exec {
            tid: Tid(pid.0 as u32),
            exe: path.as_os_str().as_bytes().to_vec(),
            blake3,
            image: image.as_os_str().as_bytes().to_vec(),
            image_blake3,
            sp: regs.rsp,
            stack,
            interp: interp.map(|(p, h)| (p.into_os_string().into_vec(), h)),
        })?;
        if let Some(p) = self.procs.get_mut(&pid) {
            p.fd_streams.clear();
        }
        let load_bias = process::load_bias(&image, &stack_copy);
        self.images
            .insert(pid, ProcessImage { tid: Tid(pid.0 as u32), pid, file: image.clone(), exe: image, load_bias });
        Ok(())
    }

    fn on_syscall_stop(&mut self, pid: Pid) -> Result<(), Error> {
        let info = ptrace::syscall_info(pid).map_err(Error::ptrace(pid, "reading syscall info"))?;
        match info.stop {
            SyscallStop::Entry { nr, args } => self.on_entry(pid, nr, args),
            SyscallStop::Exit { ret } => self.on_exit_stop(pid, ret, info.pc, info.sp),
            SyscallStop::Other => ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming")),
        }
    }

    fn on_entry(&mut self, pid: Pid, nr: u64, args: [u64; 6]) -> Result<(), Error> {
        let Some(desc) = syscalls::lookup(nr).filter(|d| d.policy != Policy::Unsupported) else {
            return Err(Error::UnsupportedSyscall { pid, nr, name: syscalls::name(nr) });
        };
        let call = desc.sysno;
        let clone_flags = match call {
            Sysno::clone => Some(args[0]),
            Sysno::clone3 => {
                let mut b = [0u8; 8];
                mem::read(pid, args[0], &mut b).map_err(Error::ptrace(pid, "reading clone3 args"))?;
                Some(u64::from_le_bytes(b))
            }
            _ => None,
        };
        if let Some(flags) = clone_flags {
            let thread = flags & libc::CLONE_THREAD as u64 != 0;
            if !thread && flags & libc::CLONE_VM as u64 != 0 && flags & libc::CLONE_VFORK as u64 == 0 {
                return Err(Error::Unsupported {
                    pid,
                    what: "clone with CLONE_VM but without CLONE_VFORK (shared memory)".into(),
                });
            }
        }
        if call == Sysno::prctl && args[0] == syscalls::PR_SET_TSC {
            return Err(Error::Unsupported { pid, what: "prctl(PR_SET_TSC): rdb traps rdtsc itself".into() });
        }
        if self.cpuid_trapped && call == Sysno::arch_prctl && args[0] == sys::ARCH_SET_CPUID {
            return Err(Error::Unsupported {
                pid,
                what: "arch_prctl(ARCH_SET_CPUID): rdb decides itself whether cpuid faults".into(),
            });
        }
        if call == Sysno::rseq {
            // The kernel would write the current CPU into rseq areas at any time: make the
            // call fail with ENOSYS (glibc copes) by skipping it.
            ptrace::poke_user(pid, ptrace::ORIG_RAX_OFFSET, u64::MAX).map_err(Error::ptrace(pid, "skipping rseq"))?;
        }
        if trace::progress::active() && self.stream_of(pid, desc, args[0]).is_some() {
            // A progress display on our terminal steps aside before the program writes there.
            trace::progress::before_output();
        }
        let exec_path = match call {
            Sysno::execve => exec_target(pid, libc::AT_FDCWD as u64, args[0]),
            Sysno::execveat => exec_target(pid, args[0], args[1]),
            _ => None,
        };
        // A thread keeps its turn through `exit` until it is gone: the kernel clears its
        // CLONE_CHILD_CLEARTID word on the way out, which a joining thread reads (replay waits
        // for the exit the same way). A group leader's exit is only reported once all its
        // threads are gone, so it gives its turn up. `restart_syscall` goes on with an
        // interrupted call, and gives the turn up when that call would have.
        let tgid = self.procs[&pid].tgid;
        let resumes_blocking =
            call == Sysno::restart_syscall && self.procs[&pid].restart_block.is_some_and(|(d, a)| d.gives_turn_up(&a));
        let release = desc.gives_turn_up(&args) || resumes_blocking || (call == Sysno::exit && pid == tgid);
        // Read only for a call that neither gives its turn up nor keeps it (2 ms deadline).
        let now = self.stamp(!release && !desc.policy.re_executed());
        let p = self.procs.get_mut(&pid).expect("known process");
        p.entry = Some((desc, args));
        p.exec_path = exec_path;
        p.last_exit = None;
        p.in_kernel = Some((now, release));
        p.keeps_turn = desc.policy.re_executed();
        p.user_since = None;
        p.probing = None;
        let tgid = p.tgid;
        let mut sig = 0;
        if p.injecting.is_none() {
            if let Some(info) = p.deferred.pop_front() {
                sig = si_signo(&info);
                p.injecting = Some(info);
            }
        }
        ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, "resuming"))?;
        let g = self.groups.get_mut(&tgid).expect("thread group");
        if call == Sysno::exit_group {
            // The other threads are about to be killed: nobody gets another turn.
            g.dying = true;
        }
        if release && g.running == Some(pid) {
            g.running = None;
            self.schedule(tgid)?;
        }
        Ok(())
    }

    fn on_exit_stop(&mut self, pid: Pid, ret: i64, pc: u64, sp: u64) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        p.in_kernel = None;
        if p.entry.is_none() {
            // A new child returning from fork: nothing to log.
            p.user_since = Some(self.clock.now());
            return ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"));
        }
        let tgid = p.tgid;
        let chaos_coin = self.schedule.chaos.is_some() && self.random().is_multiple_of(4);
        let (clock, slice) = (self.clock, self.schedule.slice);
        let g = self.groups.get_mut(&tgid).expect("thread group");
        if g.running == Some(pid) {
            // Nobody waiting: no need to read the clock.
            let switch = !g.ready.is_empty()
                && (chaos_coin || g.since.is_some_and(|t| clock.now().saturating_duration_since(t) >= slice));
            if !switch {
                return self.finish_syscall(pid, ret, pc, sp);
            }
            g.running = None;
        }
        // Wait for a turn (the syscall's effects are logged when it comes).
        g.ready.push_back(pid);
        self.procs.get_mut(&pid).expect("known").pending = Some(Pending::SyscallExit { ret, pc, sp });
        self.schedule(tgid)
    }

    /// Log a completed syscall and let the thread run on: it has the turn.
    fn finish_syscall(&mut self, pid: Pid, ret: i64, pc: u64, sp: u64) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        let (desc, args) = p.entry.take().expect("finishing a syscall that was entered");
        let nr = desc.sysno as u64;
        let exec_path = p.exec_path.take();
        if std::mem::take(&mut p.exec_pending) && ret == 0 {
            let path = match exec_path {
                Some(path) => path,
                None => procfs::exe(pid).map_err(Error::ptrace(pid, "reading /proc/PID/exe"))?,
            };
            self.after_exec(pid, path)?;
        }
        self.syscalls += 1;
        if desc.sysno == Sysno::sched_getaffinity && ret > 0 {
            if let Some(mask) = &self.native_affinity {
                // The kernel wrote the pinned mask; the program gets its native one (recorded
                // below like any emulated result, so replay gives it the same).
                let n = (ret as usize).min(mask.len());
                mem::write(pid, args[2], &mask[..n]).map_err(Error::ptrace(pid, "writing the CPU mask"))?;
            }
        }
        // `restart_syscall` resumes the call that a signal interrupted with
        // `-ERESTART_RESTARTBLOCK` (poll, nanosleep, clock_nanosleep, futex waits with a
        // timeout) and writes that call's memory (poll's `revents`, the time left): its effects
        // are those of the interrupted call, with the interrupted call's arguments.
        let p = self.procs.get_mut(&pid).expect("known process");
        let restarted = if desc.sysno == Sysno::restart_syscall { p.restart_block.take() } else { None };
        let (effect, effect_args) = restarted.unwrap_or((desc, args));
        p.restart_block = (ret == ERESTART_RESTARTBLOCK).then_some((effect, effect_args));
        let mem = pid;
        let mut writes = Vec::new();
        if desc.policy == Policy::Emulate {
            let ranges = effects::written_ranges(effect.sysno as u64, &effect_args, ret, &mem)
                .map_err(|e| Error::Unsupported { pid, what: e.0 })?;
            writes = effects::capture(&mem, &ranges);
        }
        let output = if ret > 0 { self.output_of(pid, desc, &args, ret as u64) } else { None };
        let file = if syscalls::maps_a_file(desc.sysno, &args) && ret >= 0 {
            self.mapped_file(pid, &args, ret as u64)?
        } else {
            None
        };
        self.w.push(&Event::Syscall { tid: Tid(pid.0 as u32), nr, args, ret, writes, output, file })?;
        // Read against the watchdog, and to tell a stale probe (sent 10 s after it) apart.
        let now = self.stamp(false);
        let p = self.procs.get_mut(&pid).expect("known process");
        if desc.changes_fds {
            p.fd_streams.clear();
        }
        p.last_exit = Some((pc, sp, ret));
        p.user_since = Some(now);
        p.warned = false;
        let mut sig = 0;
        if p.injecting.is_none() {
            if let Some(info) = p.deferred.pop_front() {
                sig = si_signo(&info);
                p.injecting = Some(info);
            }
        }
        ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, "resuming"))
    }

    /// Which of the recorder's own output streams a write-family call on `fd` reaches.
    fn stream_of(&mut self, pid: Pid, desc: &SyscallDesc, fd: u64) -> Option<Stream> {
        desc.reads?;
        let (stdout_id, stderr_id) = (self.stdout_id, self.stderr_id);
        let p = self.procs.get_mut(&pid)?;
        *p.fd_streams.entry(fd).or_insert_with(|| {
            let md = procfs::fd_metadata(pid, fd).ok()?;
            let id = Some((md.dev(), md.ino()));
            if id == stderr_id && (fd == 2 || id != stdout_id) {
                Some(Stream::Stderr)
            } else if id == stdout_id {
                Some(Stream::Stdout)
            } else {
                None
            }
        })
    }

    /// Bytes a write-family call sent to the recorder's own stdout/stderr.
    fn output_of(&mut self, pid: Pid, desc: &SyscallDesc, args: &[u64; 6], len: u64) -> Option<(Stream, Vec<u8>)> {
        let source = desc.reads?;
        let stream = self.stream_of(pid, desc, args[0])?;
        let mem = pid;
        let mut data = Vec::with_capacity(len as usize);
        let mut ranges = Vec::new();
        match source {
            In::Buf(buf) => ranges.push((args[buf as usize], len)),
            In::Iov(iov, count) => {
                let mut left = len;
                for (base, l) in effects::read_iovecs(&mem, args[iov as usize], args[count as usize]) {
                    let n = l.min(left);
                    ranges.push((base, n));
                    left -= n;
                }
            }
        }
        for (addr, n) in ranges {
            let mut buf = vec![0u8; n as usize];
            let got = mem.read_memory(addr, &mut buf).unwrap_or(0);
            data.extend_from_slice(&buf[..got]);
        }
        Some((stream, data))
    }

    /// Identity (and, when it cannot be found again by path, contents) of an mmap'ed file.
    fn mapped_file(&mut self, pid: Pid, args: &[u64; 6], addr: u64) -> Result<Option<MappedFile>, Error> {
        let path = procfs::fd_path(pid, args[4]).map_err(Error::ptrace(pid, "reading the mapped fd"))?;
        let bytes = path.as_os_str().as_bytes().to_vec();
        if bytes == b"/dev/zero" {
            return Ok(None);
        }
        let md = std::fs::metadata(&path).ok();
        let regular = md.as_ref().is_some_and(|m| m.is_file());
        let deleted = bytes.ends_with(b" (deleted)");
        let volatile = bytes.starts_with(b"/memfd:") || bytes.starts_with(b"/dev/shm/") || deleted;
        let shared_writable = args[3] & libc::MAP_SHARED as u64 != 0 && args[2] & libc::PROT_WRITE as u64 != 0;
        if !regular && !volatile {
            return Err(Error::Unsupported { pid, what: format!("mmap of {} (not a regular file)", path.display()) });
        }
        // Code and system files are verified by hash at replay (they must be the same files);
        // other files (a program's own data, which it may rewrite itself while running, like
        // git's config) are small enough to keep the mapped bytes.
        let system = SYSTEM_PREFIXES.iter().any(|p| bytes.starts_with(p.as_bytes()));
        let snapshot_data = !system && args[1] <= MAX_DATA_SNAPSHOT && !is_elf(&path);
        if volatile || shared_writable || !regular || snapshot_data {
            let mut snap = vec![0u8; args[1] as usize];
            let n = mem::read(pid, addr, &mut snap).unwrap_or(0);
            snap.truncate(n);
            let blake3 = *blake3::hash(&snap).as_bytes();
            return Ok(Some(MappedFile { path: bytes, blake3, size: n as u64, snapshot: Some(snap) }));
        }
        let (blake3, size) =
            self.hashes.hash(&path).map_err(|source| Error::FileMissing { path: path.clone(), source })?;
        self.mapped.insert(bytes.clone(), blake3);
        self.w.keep_file(&path, &blake3);
        Ok(Some(MappedFile { path: bytes, blake3, size, snapshot: None }))
    }

    fn on_signal(&mut self, pid: Pid, sig: i32) -> Result<(), Error> {
        let Ok(info) = ptrace::get_siginfo(pid) else {
            // Group-stop: just continue (job control is not recorded).
            return ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"));
        };
        let tid = Tid(pid.0 as u32);
        let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        if sig == libc::SIGSTOP {
            if let Some(sent) = self.procs.get_mut(&pid).and_then(|p| p.probing.take()) {
                return self.on_probe(pid, sent, regs.rip, regs.rsp);
            }
        }
        if sig == libc::SIGSEGV && self.cpuid_trapped {
            if let Some((leaf, subleaf)) = cpuid::trapped(pid, &regs, &info) {
                let result = self.cpuid_cache.execute(leaf, subleaf);
                let mut r = regs;
                cpuid::finish(&mut r, result);
                ptrace::set_regs(pid, &r).map_err(Error::ptrace(pid, "emulating cpuid"))?;
                self.w.push(&Event::Cpuid { tid, leaf, subleaf, result })?;
                return ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"));
            }
        }
        if sig == libc::SIGSEGV {
            if let Some((len, is_rdtscp)) = process::tsc_instruction(pid, regs.rip) {
                let read = || if is_rdtscp { sys::rdtscp() } else { (sys::rdtsc(), 0) };
                let (tsc, aux) = match &self.tsc_off {
                    Some(off) => off.enabled_for(read),
                    None => read(),
                };
                let (rax, rdx, rcx) = (tsc & 0xffff_ffff, tsc >> 32, is_rdtscp.then_some(aux as u64));
                let mut r = regs;
                process::finish_tsc(&mut r, len, rax, rdx, rcx);
                ptrace::set_regs(pid, &r).map_err(Error::ptrace(pid, "emulating rdtsc"))?;
                self.w.push(&Event::Rdtsc { tid, rax, rdx, rcx })?;
                return ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"));
            }
        }
        let p = self.procs.get_mut(&pid).expect("known process");
        let deliver = if let Some(saved) = p.injecting.take().filter(|s| si_signo(s) == sig) {
            // Our re-sent signal: give it back its original siginfo.
            ptrace::set_siginfo(pid, &saved).map_err(Error::ptrace(pid, "restoring siginfo"))?;
            Some((saved, true))
        } else if is_synchronous(sig, si_code(&info)) {
            Some((info, false))
        } else {
            let at_boundary =
                p.last_exit.is_some_and(|(pc, sp, ret)| regs.rip == pc && regs.rsp == sp && regs.rax == ret as u64);
            if at_boundary {
                Some((info, true))
            } else {
                p.deferred.push_back(info);
                None
            }
        };
        match deliver {
            Some((info, asynchronous)) => {
                self.w.push(&Event::Signal { tid, sig, asynchronous, siginfo: info.to_vec() })?;
                ptrace::resume_syscall(pid, sig).map_err(Error::ptrace(pid, "delivering a signal"))
            }
            None => ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "holding back a signal")),
        }
    }

    /// The watchdog's SIGSTOP arrived: report where the thread spins (swallowing the signal).
    fn on_probe(&mut self, pid: Pid, sent: Instant, pc: u64, sp: u64) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        let stale = p.user_since.is_none_or(|t| t > sent);
        if !stale {
            let tgid = p.tgid;
            let location = self.images.get(&tgid).and_then(|img| {
                let img = ProcessImage { pid, ..img.clone() };
                location::describe(&img, pc, sp)
            });
            let waiting = self.groups.get(&tgid).map_or(0, |g| g.ready.len());
            let spent = self.schedule.watchdog;
            let p = self.procs.get_mut(&pid).expect("known process");
            if p.warned {
                return Err(Error::Spinning { tid: pid, pc, location, waiting, secs: 2 * spent.as_secs() });
            }
            p.warned = true;
            p.user_since = Some(self.clock.now());
            let at = location.map(|l| format!(" ({l})")).unwrap_or_default();
            eprintln!(
                "rdb: warning: thread {pid} has run user code for {} s without a syscall while {waiting} other thread(s) wait, at pc {pc:#x}{at}; rdb switches threads only at syscalls, so a thread spinning on another one never ends",
                spent.as_secs()
            );
        }
        ptrace::resume_syscall(pid, 0).map_err(Error::ptrace(pid, "resuming"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn dev_null_is_no_output_stream_but_a_file_is() {
        let null = std::fs::File::options().write(true).open("/dev/null").unwrap();
        assert_eq!(file_id_of_fd(null.as_raw_fd()), None);
        let file = tempfile::tempfile().unwrap();
        let md = file.metadata().unwrap();
        assert_eq!(file_id_of_fd(file.as_raw_fd()), Some((md.dev(), md.ino())));
    }

    #[test]
    fn id_hashes_spread_over_the_high_bits() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let b = BuildHasherDefault::<IdHasher>::default();
        // hashbrown takes its 7-bit tags from the top of the hash: consecutive pids must not
        // all share one.
        let tags: HashSet<u64> = (1000..1064).map(|pid| b.hash_one(Pid(pid)) >> 57).collect();
        assert!(tags.len() > 32, "{} distinct tags", tags.len());
    }
}
