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
//! Asynchronous signals are delivered at syscall boundaries when one comes: one that arrives
//! while the process runs user code is held back and re-sent at its next syscall stop, so replay
//! can deliver it at the same point without counting instructions. Meanwhile the recorder looks
//! for an *interruption point* in the user code (module `interrupt`): a point replay can find
//! again by its registers and stack; found, the signal is delivered there. A thread that runs
//! user code for [`Schedule::preempt`] while another thread of its process waits is switched
//! out at such a point too.

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
use crate::interrupt::{self, PointKey, Reason, Seek, Verdict};
use crate::location;
use crate::observer::ProcessImage;
use crate::point_stub;
use crate::process::{self, FileHashes};
use crate::share::{self, Merge, UnitKey, Units};
use crate::syscalls::{self, In, Output, Policy, SyscallDesc, Sysno};
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
    /// A thread that runs user code this long without a syscall while another thread of its
    /// group waits is switched out at an interruption point (see `interrupt`).
    pub preempt: Duration,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            slice: Duration::from_millis(1),
            chaos: None,
            watchdog: Duration::from_secs(10),
            preempt: Duration::from_millis(20),
        }
    }
}

/// An ambiguous interruption point is tried again this much later.
const RETRY_AFTER: Duration = Duration::from_millis(2);
/// A search at a return address that has not come this long goes on at the pc of a new stop.
const CLIMB_WAIT: Duration = Duration::from_millis(10);

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

/// A 32-bit ELF file (`ELFCLASS32`).
fn is_elf32(path: &Path) -> bool {
    use std::io::Read;
    let mut ident = [0u8; 5];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut ident)).is_ok() && ident == *b"\x7fELF\x01"
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
#[derive(Debug, Clone)]
enum Pending {
    /// Finish the syscall it stopped at the exit of (log it, resume).
    SyscallExit { ret: i64, pc: u64, sp: u64 },
    /// A new thread's first turn.
    Start,
    /// Go on from the interruption point where it was switched out.
    Interrupted(Box<PointKey>),
}

/// How the recorder captures the bytes a call writes to its own stdout/stderr (decided at the
/// call's entry from the table's [`Output`] and the kinds of files involved).
#[derive(Debug, Clone, Copy)]
enum Capture {
    /// From the program's memory (`write`, `writev`, `sendto`, `sendmsg`, `vmsplice`).
    Memory(In),
    /// Read again from a regular file of the tracee, `fd`, at the offset the kernel advanced
    /// past the bytes: the one in the pointer `offset_ptr`, or the file position when it is
    /// null. The source of `sendfile`/`copy_file_range`/`splice`, or their destination when
    /// the source is a pipe or socket.
    File { fd: u64, offset_ptr: u64 },
    /// A `splice` from a pipe to a pipe, run as `tee` (its argument registers restored at
    /// exit): the kernel copies the bytes to the destination and leaves them in the source,
    /// from which the recorder then reads them itself, which consumes them as `splice` would.
    SpliceAsTee { source: u64 },
    /// Copied out of a pipe that keeps them (`tee`).
    PipeCopy { source: u64 },
}

/// Who may write to one of the recorder's output files (see [`Recorder::leave_output`]).
#[derive(Default)]
struct OutputTurn {
    holder: Option<Pid>,
    waiting: VecDeque<Pid>,
}

/// A call writing to the recorder's own stdout/stderr, from its entry to its event.
#[derive(Debug, Clone)]
struct OutputCall {
    stream: Stream,
    capture: Capture,
    /// The bytes, read at the exit stop.
    bytes: Option<Vec<u8>>,
}

/// The scheduling unit of a thread: its process, or the processes it shares memory with
/// (see `share`).
type Unit = UnitKey<Pid>;

/// The threads of one scheduling unit (a process, or processes sharing memory): at most one
/// runs user code.
#[derive(Default)]
struct Group {
    /// The thread whose turn it is (running user code, or in a syscall it did not give the
    /// turn up for).
    running: Option<Pid>,
    /// Since when `running` has had the turn.
    since: Option<Instant>,
    /// Threads stopped and waiting for their turn, in arrival order.
    ready: VecDeque<Pid>,
    /// Processes (thread group ids) that called `exit_group`: no more turns for their threads.
    dying: HashSet<Pid>,
}

impl Group {
    /// Take the threads and the turn of `other`, a unit merged into this one. Its running
    /// thread keeps the turn when this unit has none running; otherwise it must be `waiting`
    /// (the thread at whose syscall exit the units merge, which then waits for its turn).
    fn absorb(&mut self, other: Group, waiting: Pid) -> Result<(), Pid> {
        self.ready.extend(other.ready);
        self.dying.extend(other.dying);
        match (self.running, other.running) {
            (_, None) => {}
            (None, Some(r)) => (self.running, self.since) = (Some(r), other.since),
            (Some(_), Some(r)) if r == waiting => {}
            (Some(_), Some(r)) => return Err(r),
        }
        Ok(())
    }
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
    /// The call it is in writes to our stdout/stderr.
    output: Option<OutputCall>,
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
    /// The path of the file a `MAP_SHARED` `mmap` mapped, as read at its exit stop: the trace
    /// records this one, from which replay forms the same units (see `share`).
    shared_path: Option<PathBuf>,
    /// Looking for an interruption point: the breakpoint at its pc is armed (until when a
    /// climbed search waits for its return address).
    seek: Option<(Seek, Instant)>,
    /// A SIGSTOP was sent to begin a search (why, and the searches tried before).
    interrupting: Option<(Reason, u32)>,
    /// Send that SIGSTOP at this time.
    interrupt_at: Option<(Instant, Reason, u32)>,
    /// No point was found to switch the thread out in its current stretch of user code.
    preempt_gave_up: bool,
    /// The stack pointer at the entry of the `rt_sigreturn` it is in (see
    /// `interrupt::clear_signal_frame`).
    sigreturn_sp: Option<u64>,
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
    groups: IdMap<Unit, Group>,
    /// Which processes share memory (their threads take turns as one unit).
    units: Units<Pid>,
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
    /// Per output file (stdout's, and stderr's when it is another file): the thread whose
    /// call writing to it is in the kernel or not yet logged, and the threads stopped at the
    /// entry of such a call until it is, in order (see [`Recorder::leave_output`]).
    output_turns: [OutputTurn; 2],
    /// A pipe of the recorder's into which it copies bytes a tracee's pipe keeps (`tee`).
    scratch: Option<(std::io::PipeReader, std::io::PipeWriter)>,
    /// Interruption points seen (see `interrupt`).
    points: interrupt::Stats,
    /// `cpuid` is trapped in every tracee (the header's `cpuid_trapped`).
    cpuid_trapped: bool,
    cpuid_cache: cpuid::Cache,
}

/// Identity (device, inode) of what our `fd` writes to, to recognise the program's writes that
/// reach it. `None` for `/dev/null`: nothing written there was seen, so there is nothing to
/// re-emit at replay (and a program writing to its own `/dev/null` would otherwise have every
/// write copied into the trace whenever rdb's output is discarded).
/// Resume `pid` to its next stop (`PTRACE_SYSCALL`), delivering `sig`. A tracee is killed,
/// even in a ptrace stop, when another thread of its process ends the process (`exit_group`, a
/// fatal signal, an `exec`): the recorder still holds it for stopped (waiting for its turn or
/// its output turn, say) and resumes it, and ptrace fails with `ESRCH`. That is no failure of
/// the recording: the thread's exit comes through `wait` and is logged then (`on_exit`), as
/// for the process's other threads. Found with pbzip2 at load 12 ("tracing pid N failed
/// (resuming)"). Any other failure, and `ESRCH` for a thread that is not dying, is an error.
fn resume(pid: Pid, sig: i32, what: &'static str) -> Result<(), Error> {
    match ptrace::resume_syscall(pid, sig) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) && killed(pid) => Ok(()),
        r => r.map_err(Error::ptrace(pid, what)),
    }
}

/// Whether `pid`, which a ptrace request just found out of its stop, is being killed. Between
/// taking the `SIGKILL` and starting to exit a thread shows neither (microseconds, unless it
/// loses its CPU there): look again a little while.
fn killed(pid: Pid) -> bool {
    (0..50).any(|i| {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        procfs::dying(pid)
    })
}

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
    // A standard descriptor closed when rdb started (`prog <&-`) is closed for the program too,
    // as it would be natively: not the `/dev/null` Rust's runtime put there for rdb.
    let closed = sys::standard_fds_closed_at_start();
    // SAFETY: the closure only makes async-signal-safe syscalls (close, and see the callee).
    unsafe {
        cmd.pre_exec(move || {
            sys::close_standard_fds(closed);
            ptrace::child_prepare_for_trace()
        });
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
        units: Units::default(),
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
        output_turns: Default::default(),
        scratch: None,
        points: interrupt::Stats::default(),
        cpuid_trapped,
        cpuid_cache: cpuid::Cache::default(),
    };
    rec.procs.insert(root, Proc { tgid: root, ..Proc::default() });
    rec.groups.insert(Unit::Own(root), Group { running: Some(root), since: Some(Instant::now()), ..Group::default() });
    rec.w.push(&Event::Start {
        tid: Tid(root.0 as u32),
        exe: exe.as_os_str().as_bytes().to_vec(),
        argv,
        envp,
        cwd: cwd.as_os_str().as_bytes().to_vec(),
    })?;
    let result = rec.after_exec(root, exe.clone()).and_then(|_| {
        resume(root, 0, "resuming")?;
        // Like the tracees (see `rdb_tracee::this_process`): no CR4 write at each switch
        // between them. The waiter's helper thread, spawned next, inherits it (it wakes at
        // tracee stops too).
        rec.tsc_off = sys::disable_tsc_for_this_thread().ok();
        rec.waits = Some(Waiter::spawn()?);
        let result = rec.run();
        rec.tsc_off = None;
        result
    });
    if std::env::var_os("RDB_INTERRUPT_STATS").is_some() {
        let s = rec.points;
        eprintln!(
            "rdb: interruption points: {} recorded ({} fixed points, {} keyed with memory pages, {} where a stub fits), {} ambiguous searches, {} given up, {} overtaken by an event, {} return addresses that never came, {} computations not switched",
            s.points, s.fixed, s.with_pages, s.patchable, s.ambiguous, s.given_up, s.overtaken, s.stale_returns, s.not_spins
        );
    }
    if let Err(e) = result {
        rec.kill_all();
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

impl Proc {
    /// A switch at an interruption point may be started now.
    fn may_preempt(&self) -> bool {
        self.seek.is_none()
            && self.interrupting.is_none()
            && self.interrupt_at.is_none()
            && self.probing.is_none()
            && !self.preempt_gave_up
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
                (None, Some(t)) if p.may_preempt() => t + self.schedule.preempt.min(self.schedule.watchdog),
                (None, Some(t)) if p.probing.is_none() && p.interrupting.is_none() => t + self.schedule.watchdog,
                _ => continue,
            };
            best = Some(best.map_or(d, |b| b.min(d)));
        }
        for p in self.procs.values() {
            if let (Some((t, ..)), None) = (p.interrupt_at, p.interrupting) {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
            if let (Some((seek, t)), None) = (&p.seek, p.interrupting) {
                if seek.climbed {
                    best = Some(best.map_or(*t, |b| b.min(*t)));
                }
            }
        }
        best
    }

    fn on_timeout(&mut self) -> Result<(), Error> {
        let now = self.clock.now();
        let retries: Vec<Pid> = self
            .procs
            .iter()
            .filter(|(_, p)| p.interrupt_at.is_some_and(|(t, ..)| t <= now))
            .map(|(&t, _)| t)
            .collect();
        let stale: Vec<Pid> = self
            .procs
            .iter()
            .filter(|(_, p)| p.interrupting.is_none() && p.seek.as_ref().is_some_and(|(s, t)| s.climbed && *t <= now))
            .map(|(&t, _)| t)
            .collect();
        for pid in stale {
            // Stop it to search at the pc where it is instead (see `on_interrupt`).
            let p = self.procs.get_mut(&pid).expect("known thread");
            let (seek, _) = p.seek.as_ref().expect("searching");
            p.interrupting = Some((seek.reason, seek.tries));
            let tgid = p.tgid;
            ptrace::tgkill(tgid, pid, libc::SIGSTOP).map_err(Error::ptrace(pid, "interrupting a thread"))?;
        }
        for pid in retries {
            let p = self.procs.get_mut(&pid).expect("known thread");
            let (_, reason, tries) = p.interrupt_at.take().expect("due");
            if p.interrupting.is_none() && p.seek.is_none() && p.in_kernel.is_none() {
                p.interrupting = Some((reason, tries));
                let tgid = p.tgid;
                ptrace::tgkill(tgid, pid, libc::SIGSTOP).map_err(Error::ptrace(pid, "interrupting a thread"))?;
            }
        }
        let units: Vec<Unit> = self.groups.keys().copied().collect();
        for unit in units {
            let g = &self.groups[&unit];
            let (Some(pid), false) = (g.running, g.ready.is_empty()) else { continue };
            let Some(p) = self.procs.get_mut(&pid) else { continue };
            match (p.in_kernel, p.user_since) {
                (None, Some(t)) if p.may_preempt() && now >= t + self.schedule.preempt => {
                    // Switch it out at an interruption point (the search begins at the stop).
                    p.interrupting = Some((Reason::Preempt, 0));
                    ptrace::tgkill(p.tgid, pid, libc::SIGSTOP).map_err(Error::ptrace(pid, "interrupting a thread"))?;
                }
                (Some((t, false)), _) if !p.keeps_turn && now >= t + BLOCKING_AFTER => {
                    // Taking long in the kernel: maybe waiting for a thread that needs a turn.
                    p.in_kernel = Some((t, true));
                    self.groups.get_mut(&unit).expect("group").running = None;
                    self.schedule(unit)?;
                }
                (None, Some(t))
                    if p.probing.is_none() && p.interrupting.is_none() && now >= t + self.schedule.watchdog =>
                {
                    // Learn where it spins: SIGSTOP it (the stop is swallowed in `on_signal`).
                    p.probing = Some(now);
                    ptrace::tgkill(p.tgid, pid, libc::SIGSTOP)
                        .map_err(Error::ptrace(pid, "interrupting a spinning thread"))?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Give the turn of an idle unit to one of its ready threads (not of a dying process).
    fn schedule(&mut self, unit: Unit) -> Result<(), Error> {
        let n = match self.groups.get(&unit) {
            Some(g) if g.running.is_none() && !g.ready.is_empty() && g.dying.is_empty() => g.ready.len(),
            Some(g) if g.running.is_none() && !g.ready.is_empty() => {
                g.ready.iter().filter(|t| self.procs.get(t).is_none_or(|p| !g.dying.contains(&p.tgid))).count()
            }
            _ => return Ok(()),
        };
        if n == 0 {
            return Ok(());
        }
        let i = if self.schedule.chaos.is_some() { (self.random() % n as u64) as usize } else { 0 };
        // A blocking call of a single-threaded process comes through here at every exit. The
        // turn's start is measured against the 1 ms slice: exact.
        let now = self.stamp(true);
        let g = self.groups.get_mut(&unit).expect("group");
        let procs = &self.procs;
        let i = if g.dying.is_empty() {
            i
        } else {
            let eligible = |t: &Pid| procs.get(t).is_none_or(|p| !g.dying.contains(&p.tgid));
            g.ready.iter().enumerate().filter(|(_, t)| eligible(t)).nth(i).map(|(k, _)| k).expect("eligible")
        };
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
            Some(Pending::Interrupted(key)) => {
                p.user_since = Some(self.clock.now());
                p.warned = false;
                p.preempt_gave_up = false;
                let PointKey { regs, stack, pages, digest } = *key;
                self.w.push(&Event::Interrupt { tid: Tid(pid.0 as u32), regs, stack, pages, digest })?;
                resume(pid, 0, "resuming an interrupted thread")
            }
            Some(Pending::Start) => {
                p.user_since = Some(self.clock.now());
                p.warned = false;
                self.w.push(&Event::ThreadStart { tid: Tid(pid.0 as u32) })?;
                resume(pid, 0, "starting a thread")
            }
            None => resume(pid, 0, "resuming"),
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
        let unit = self.units.unit(tgid);
        if unit == Unit::Own(child) {
            // A process of its own: its own unit, running at once.
            let now = self.clock.now();
            self.groups.insert(unit, Group { running: Some(child), since: Some(now), ..Group::default() });
            self.procs.get_mut(&child).expect("just inserted").user_since = Some(now);
            return resume(child, 0, "starting child");
        }
        // A thread, or a process sharing memory with its parent: it waits for a turn in the
        // unit, which its `ThreadStart` event marks.
        self.procs.get_mut(&child).expect("just inserted").pending = Some(Pending::Start);
        self.groups.entry(unit).or_default().ready.push_back(child);
        self.schedule(unit)
    }

    /// Units merged (see `share`): their groups become one. `waiting` is the thread at whose
    /// stop they merged (it may have to wait for its turn in the merged unit).
    fn merge_units(&mut self, merge: Merge<Pid>, waiting: Pid) -> Result<(), Error> {
        let mut into = self.groups.remove(&merge.into).unwrap_or_default();
        for from in merge.from {
            if let Some(g) = self.groups.remove(&from) {
                if let Err(other) = into.absorb(g, waiting) {
                    return Err(Error::Unsupported {
                        pid: waiting,
                        what: format!(
                            "processes came to share memory while threads {other} and {waiting} both ran: rdb cannot order their accesses"
                        ),
                    });
                }
            }
        }
        self.groups.insert(merge.into, into);
        Ok(())
    }

    /// Process `tgid` (its thread `pid` holding the turn) left a shared unit (`execve`): it is
    /// its own unit again, running, and the unit it left gives its turn to another thread.
    fn leave_unit(&mut self, pid: Pid, tgid: Pid) -> Result<(), Error> {
        let Some(left) = self.units.leave(tgid) else { return Ok(()) };
        let now = self.clock.now();
        let mut own = Group { running: Some(pid), since: Some(now), ..Group::default() };
        if let Some(g) = self.groups.get_mut(&left) {
            // The process's other threads (ending with the exec) go with it.
            let procs = &self.procs;
            let (mine, others) = g.ready.drain(..).partition(|t| procs.get(t).is_some_and(|p| p.tgid == tgid));
            (own.ready, g.ready) = (mine, others);
            own.ready.retain(|t| *t != pid);
            g.dying.remove(&tgid);
            if g.running == Some(pid) {
                g.running = None;
            }
        }
        self.groups.insert(Unit::Own(tgid), own);
        self.schedule(left)
    }

    fn on_exit(&mut self, pid: Pid, status: i32) -> Result<(), Error> {
        if let Some(p) = self.procs.remove(&pid) {
            self.w.push(&Event::Exit { tid: Tid(pid.0 as u32), status })?;
            for turn in &mut self.output_turns {
                turn.waiting.retain(|&t| t != pid);
            }
            self.leave_output(pid)?;
            if pid == self.root {
                self.root_status = Some(status);
            }
            let tgid = p.tgid;
            let unit = self.units.unit(tgid);
            let gone = !self.procs.values().any(|q| q.tgid == tgid);
            if gone {
                // The process is gone.
                self.images.remove(&tgid);
                self.units.leave(tgid);
            }
            if let Some(g) = self.groups.get_mut(&unit) {
                if gone {
                    // Its id may come back as another process of the unit.
                    g.dying.remove(&tgid);
                }
                g.ready.retain(|&t| t != pid);
                if g.running == Some(pid) {
                    g.running = None;
                }
                let units = &self.units;
                if self.procs.values().any(|q| units.unit(q.tgid) == unit) {
                    self.schedule(unit)?;
                } else {
                    self.groups.remove(&unit);
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
            return resume(pid, 0, "resuming");
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
                    // A child of a process holding shared memory shares it: one unit. Not a
                    // vfork child: its parent waits in the kernel until it execs or exits.
                    let vfork = flags & libc::CLONE_VFORK as u64 != 0;
                    let shares = if vfork { None } else { self.units.fork(self.procs[&pid].tgid, child) };
                    if let Some(merge) = shares {
                        self.merge_units(merge, pid)?;
                    }
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
        resume(pid, 0, "resuming")
    }

    /// After exec (or the initial start): hide the vDSO, trap `rdtsc`, log the image.
    /// `path` is the absolute path of the file exec'ed.
    fn after_exec(&mut self, pid: Pid, path: PathBuf) -> Result<(), Error> {
        let image = procfs::exe(pid).map_err(Error::ptrace(pid, "reading /proc/PID/exe"))?;
        if is_elf32(&image) {
            return Err(Error::Unsupported {
                pid,
                what: format!(
                    "{} is a 32-bit program: rdb records x86-64 programs only (a 32-bit program's system calls \
                     are numbered and passed differently); build it for x86-64",
                    image.display()
                ),
            });
        }
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
        if let (true, SyscallStop::Entry { nr, .. }) = (info.compat, info.stop) {
            return Err(Error::Unsupported {
                pid,
                what: format!(
                    "a 32-bit system call (int 0x80, number {nr}) at pc {:#x}: rdb records the x86-64 system call \
                     interface only (32-bit calls are numbered and passed differently)",
                    info.pc
                ),
            });
        }
        match info.stop {
            SyscallStop::Entry { nr, args } => self.on_entry(pid, nr, args),
            SyscallStop::Exit { ret } => self.on_exit_stop(pid, ret, info.pc, info.sp),
            SyscallStop::Other => resume(pid, 0, "resuming"),
        }
    }

    fn on_entry(&mut self, pid: Pid, nr: u64, args: [u64; 6]) -> Result<(), Error> {
        let Some(desc) = syscalls::lookup(nr).filter(|d| d.policy != Policy::Unsupported) else {
            return Err(Error::UnsupportedSyscall { pid, nr, name: syscalls::name(nr), why: syscalls::refusal(nr) });
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
        if syscalls::maps_a_file(call, &args) && self.writes_our_output_through_memory(pid, &args) {
            return Err(Error::Unsupported {
                pid,
                what: format!(
                    "mmap of rdb's own output file (fd {}) shared and writable: output written through memory cannot \
                     be replayed; redirect the program's output elsewhere",
                    args[4]
                ),
            });
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
        let stream = self.stream_of(pid, desc, &args);
        if trace::progress::active() && stream.is_some() {
            // A progress display on our terminal steps aside before the program writes there.
            trace::progress::before_output();
        }
        let output = match (stream, desc.output) {
            (Some(stream), Some(out)) => {
                Some(OutputCall { stream, capture: self.plan_capture(pid, desc, out, &args)?, bytes: None })
            }
            _ => None,
        };
        // A call writing to our output waits at its entry while another thread's is under way.
        let turn = stream.map(|s| self.output_file(s));
        let parked = turn.is_some_and(|i| self.output_turns[i].holder.is_some_and(|t| t != pid));
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
        let release = desc.gives_turn_up(&args) || resumes_blocking || (call == Sysno::exit && pid == tgid) || parked;
        // Read only for a call that neither gives its turn up nor keeps it (2 ms deadline).
        let now = self.stamp(!release && !desc.policy.re_executed());
        let sigreturn_sp = match call {
            Sysno::rt_sigreturn => Some(ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?.rsp),
            _ => None,
        };
        let p = self.procs.get_mut(&pid).expect("known process");
        p.sigreturn_sp = sigreturn_sp;
        p.entry = Some((desc, args));
        p.exec_path = exec_path;
        p.last_exit = None;
        p.in_kernel = Some((now, release));
        p.keeps_turn = desc.policy.re_executed();
        p.user_since = None;
        p.probing = None;
        p.interrupt_at = None;
        if p.seek.take().is_some() {
            // The syscall came first: a held signal is delivered at it, a switch happens at
            // its exit.
            self.points.overtaken += 1;
            rdb_tracee::debugreg::clear_watchpoint(pid, interrupt::RECORD_SLOT)
                .map_err(Error::ptrace(pid, "clearing a debug register"))?;
        }
        let p = self.procs.get_mut(&pid).expect("known process");
        let tgid = p.tgid;
        p.output = output;
        match turn {
            Some(i) if parked => self.output_turns[i].waiting.push_back(pid),
            Some(i) => {
                self.output_turns[i].holder = Some(pid);
                self.resume_at_syscall_stop(pid)?;
            }
            None => self.resume_at_syscall_stop(pid)?,
        }
        let unit = self.units.unit(tgid);
        let g = self.groups.get_mut(&unit).expect("thread group");
        if call == Sysno::exit_group {
            // The other threads are about to be killed: none of them gets another turn.
            g.dying.insert(tgid);
        }
        if release && g.running == Some(pid) {
            g.running = None;
            self.schedule(unit)?;
        }
        Ok(())
    }

    fn on_exit_stop(&mut self, pid: Pid, ret: i64, pc: u64, sp: u64) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        p.in_kernel = None;
        if p.entry.is_none() {
            // A new child returning from fork: nothing to log.
            p.user_since = Some(self.clock.now());
            return resume(pid, 0, "resuming");
        }
        let tgid = p.tgid;
        let shared_mapping = p.entry.filter(|(d, a)| d.sysno == Sysno::mmap && share::is_shared_mapping(a[3]));
        if p.output.is_some() {
            self.capture_output(pid, ret)?;
        }
        if let Some((desc, args)) = shared_mapping {
            if ret >= 0 {
                self.map_shared(pid, tgid, desc, args)?;
            }
        }
        let chaos_coin = self.schedule.chaos.is_some() && self.random().is_multiple_of(4);
        let (clock, slice) = (self.clock, self.schedule.slice);
        let unit = self.units.unit(tgid);
        let g = self.groups.get_mut(&unit).expect("thread group");
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
        self.schedule(unit)
    }

    /// Thread `pid` of process `tgid` mapped memory `MAP_SHARED` (a successful `mmap`, at its
    /// exit stop): the process joins the unit of the processes it now shares memory with.
    fn map_shared(&mut self, pid: Pid, tgid: Pid, desc: &SyscallDesc, args: [u64; 6]) -> Result<(), Error> {
        let object = if syscalls::maps_a_file(desc.sysno, &args) {
            let path = procfs::fd_path(pid, args[4]).map_err(Error::ptrace(pid, "reading the mapped fd"))?;
            let bytes = path.as_os_str().as_bytes().to_vec();
            self.procs.get_mut(&pid).expect("known process").shared_path = Some(path);
            Some(bytes).filter(|p| p != b"/dev/zero")
        } else {
            None
        };
        match self.units.map_shared(tgid, object.as_deref()) {
            Some(merge) => self.merge_units(merge, pid),
            None => Ok(()),
        }
    }

    /// Log a completed syscall and let the thread run on: it has the turn.
    fn finish_syscall(&mut self, pid: Pid, ret: i64, pc: u64, sp: u64) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        let (desc, args) = p.entry.take().expect("finishing a syscall that was entered");
        let nr = desc.sysno as u64;
        let exec_path = p.exec_path.take();
        let execed = std::mem::take(&mut p.exec_pending) && ret == 0;
        if execed {
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
        let p = self.procs.get_mut(&pid).expect("known process");
        let output = p.output.take().and_then(|o| Some((o.stream, o.bytes?)));
        let file = if syscalls::maps_a_file(desc.sysno, &args) && ret >= 0 {
            self.mapped_file(pid, &args, ret as u64)?
        } else {
            None
        };
        self.w.push(&Event::Syscall { tid: Tid(pid.0 as u32), nr, args, ret, writes, output, file })?;
        self.leave_output(pid)?;
        if let Some(entry_sp) = self.procs.get_mut(&pid).and_then(|p| p.sigreturn_sp.take()) {
            interrupt::clear_signal_frame(pid, entry_sp, sp).map_err(Error::ptrace(pid, "clearing a signal frame"))?;
        }
        // Read against the watchdog, and to tell a stale probe (sent 10 s after it) apart.
        let now = self.stamp(false);
        let p = self.procs.get_mut(&pid).expect("known process");
        if desc.changes_fds {
            p.fd_streams.clear();
        }
        p.last_exit = Some((pc, sp, ret));
        p.user_since = Some(now);
        p.warned = false;
        p.preempt_gave_up = false;
        let tgid = p.tgid;
        self.resume_at_syscall_stop(pid)?;
        if execed {
            // A new address space shares nothing (replay leaves the unit at the same event).
            self.leave_unit(pid, tgid)?;
        }
        Ok(())
    }

    /// A recording that fails ends every tracee, and waits until each is gone: the threads it
    /// knows, children announced or stopped whose adoption was pending, and any tracee still
    /// reporting a stop (a child forked just before the failure stops for its tracer, which is
    /// gone only once it is killed; waiting for it without killing it never ends).
    fn kill_all(&mut self) {
        let known = self.procs.keys().chain(&self.early_children).chain(self.awaited_children.keys());
        for &pid in known {
            let _ = ptrace::kill(pid, libc::SIGKILL);
        }
        while let Ok(Some((pid, status))) = ptrace::wait_any() {
            if matches!(status, Wait::Stopped { .. }) {
                let _ = ptrace::kill(pid, libc::SIGKILL);
            }
        }
    }

    /// Resume a thread from a syscall stop, re-sending a held-back signal if it has one.
    fn resume_at_syscall_stop(&mut self, pid: Pid) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        let mut sig = 0;
        if p.injecting.is_none() {
            if let Some(info) = p.deferred.pop_front() {
                sig = si_signo(&info);
                p.injecting = Some(info);
            }
        }
        resume(pid, sig, "resuming")
    }

    /// Output calls in the kernel's order. Calls that write to one of the recorder's output
    /// files (stdout's; stderr's, the same one or another) enter the kernel one at a time: a thread entering one while another thread's is in the
    /// kernel, or done but not yet logged, stays stopped at its entry (giving its turn up, so
    /// the threads it may wait for run) until that call's event is written. Without this, a
    /// write that blocks past the 2 ms deadline (a full pipe) lets another thread run and
    /// write, and the kernel may complete the two in one order (or interleave their bytes)
    /// while the events are logged in another, which replay then prints. With it, the order
    /// of the output events is the order in which the kernel wrote the bytes. Writes to two
    /// different files do not wait for each other (a reader may need one before it drains
    /// the other, as natively).
    ///
    /// Here: `pid`'s output call is logged (or `pid` is gone), so the next waiting one goes in.
    fn leave_output(&mut self, pid: Pid) -> Result<(), Error> {
        for i in 0..self.output_turns.len() {
            if self.output_turns[i].holder != Some(pid) {
                continue;
            }
            let next = self.output_turns[i].waiting.pop_front();
            self.output_turns[i].holder = next;
            if let Some(next) = next {
                self.resume_at_syscall_stop(next)?;
            }
        }
        Ok(())
    }

    /// Which output file a stream is (an index of `output_turns`): stderr's is stdout's when
    /// both are the same file.
    fn output_file(&self, stream: Stream) -> usize {
        match stream {
            Stream::Stderr if self.stderr_id != self.stdout_id => 1,
            _ => 0,
        }
    }

    /// A shared writable `mmap` of the recorder's own stdout/stderr file: writing to that
    /// memory changes the output without any call that replay could re-emit.
    fn writes_our_output_through_memory(&self, pid: Pid, args: &[u64; 6]) -> bool {
        let shared_writable = args[3] & libc::MAP_SHARED as u64 != 0 && args[2] & libc::PROT_WRITE as u64 != 0;
        shared_writable
            && procfs::fd_metadata(pid, args[4])
                .is_ok_and(|md| [self.stdout_id, self.stderr_id].contains(&Some((md.dev(), md.ino()))))
    }

    /// Which of the recorder's own output streams a call writing to a descriptor reaches.
    fn stream_of(&mut self, pid: Pid, desc: &SyscallDesc, args: &[u64; 6]) -> Option<Stream> {
        let fd = args[desc.output?.fd as usize];
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

    /// How to capture what a call about to write to our output writes (at its entry stop).
    /// A call moving bytes between descriptors is captured from wherever the bytes can still
    /// be read after it: a regular file it read or wrote, or the source pipe; a transfer whose
    /// bytes cannot be read again is refused.
    fn plan_capture(&mut self, pid: Pid, desc: &SyscallDesc, out: Output, args: &[u64; 6]) -> Result<Capture, Error> {
        let In::Fd { fd, offset } = out.data else {
            return Ok(match out.data {
                In::PipeCopy(source) => Capture::PipeCopy { source: args[source as usize] },
                data => Capture::Memory(data),
            });
        };
        use std::os::unix::fs::FileTypeExt;
        let kind = |fd: u64| procfs::fd_metadata(pid, fd).map(|m| m.file_type()).ok();
        let (source, dest) = (args[fd as usize], args[out.fd as usize]);
        if kind(source).is_some_and(|k| k.is_file()) {
            return Ok(Capture::File { fd: source, offset_ptr: args[offset as usize] });
        }
        if kind(dest).is_some_and(|k| k.is_file()) {
            let offset_ptr = out.offset.map_or(0, |o| args[o as usize]);
            return Ok(Capture::File { fd: dest, offset_ptr });
        }
        let offsets = args[offset as usize] != 0 || out.offset.is_some_and(|o| args[o as usize] != 0);
        if desc.sysno == Sysno::splice
            && kind(source).is_some_and(|k| k.is_fifo())
            && kind(dest).is_some_and(|k| k.is_fifo())
            && !offsets
        {
            // splice(in, NULL, out, NULL, len, flags) becomes tee(in, out, len, flags).
            let mut tee = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
            tee.orig_rax = Sysno::tee as u64;
            (tee.rdi, tee.rsi, tee.rdx, tee.r10) = (args[0], args[2], args[4], args[5]);
            ptrace::set_regs(pid, &tee).map_err(Error::ptrace(pid, "turning splice into tee"))?;
            return Ok(Capture::SpliceAsTee { source });
        }
        Err(Error::Unsupported {
            pid,
            what: format!(
                "{} from fd {source} to rdb's own output (fd {dest}): rdb cannot read those bytes again to replay them; \
                 redirect the program's standard output to a file or a pipe",
                desc.name()
            ),
        })
    }

    /// At the exit stop of a call writing to our output: read the bytes it wrote (and put the
    /// registers back for a `splice` run as `tee`).
    fn capture_output(&mut self, pid: Pid, ret: i64) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        let (Some(out), Some((desc, args))) = (p.output.as_ref(), p.entry) else { return Ok(()) };
        let capture = out.capture;
        let len = ret.max(0) as u64;
        let bytes = match capture {
            Capture::Memory(data) => Some(self.memory_output(pid, data, &args, len)),
            Capture::File { fd, offset_ptr } if len > 0 => Some(self.file_output(pid, desc, fd, offset_ptr, len)?),
            Capture::PipeCopy { source } if len > 0 => Some(self.pipe_output(pid, desc, source, len, false)?),
            Capture::SpliceAsTee { source } => {
                let mut regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
                (regs.orig_rax, regs.rax) = (desc.sysno as u64, ret as u64);
                (regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9) =
                    (args[0], args[1], args[2], args[3], args[4], args[5]);
                ptrace::set_regs(pid, &regs).map_err(Error::ptrace(pid, "restoring splice's registers"))?;
                (len > 0).then(|| self.pipe_output(pid, desc, source, len, true)).transpose()?
            }
            _ => None,
        };
        if let Some(o) = self.procs.get_mut(&pid).and_then(|p| p.output.as_mut()) {
            o.bytes = bytes.filter(|b| !b.is_empty());
        }
        Ok(())
    }

    /// The bytes a call wrote from the program's memory.
    fn memory_output(&self, pid: Pid, data: In, args: &[u64; 6], len: u64) -> Vec<u8> {
        let mem = pid;
        let mut ranges = Vec::new();
        let iov_at = |iov: u64, count: u64, ranges: &mut Vec<(u64, u64)>| {
            let mut left = len;
            for (base, l) in effects::read_iovecs(&mem, iov, count) {
                let n = l.min(left);
                ranges.push((base, n));
                left -= n;
            }
        };
        match data {
            In::Buf(buf) => ranges.push((args[buf as usize], len)),
            In::Iov(iov, count) => iov_at(args[iov as usize], args[count as usize], &mut ranges),
            In::MsgHdr(h) => {
                let mut hdr = [0u8; 32];
                if mem.read_memory(args[h as usize], &mut hdr).unwrap_or(0) == 32 {
                    let word = |i: usize| u64::from_le_bytes(hdr[i..i + 8].try_into().expect("8 bytes"));
                    iov_at(word(16), word(24), &mut ranges);
                }
            }
            In::Fd { .. } | In::PipeCopy(_) => {}
        }
        let mut bytes = Vec::with_capacity(len.min(1 << 20) as usize);
        for (addr, n) in ranges {
            let mut buf = vec![0u8; n as usize];
            let got = mem.read_memory(addr, &mut buf).unwrap_or(0);
            bytes.extend_from_slice(&buf[..got]);
        }
        bytes
    }

    /// The `len` bytes before the offset a call advanced in the regular file `fd`.
    fn file_output(&self, pid: Pid, desc: &SyscallDesc, fd: u64, offset_ptr: u64, len: u64) -> Result<Vec<u8>, Error> {
        use std::os::unix::fs::FileExt;
        let fail = |why: String| Error::Unsupported {
            pid,
            what: format!("{} wrote {len} bytes to rdb's own output that rdb cannot read again: {why}", desc.name()),
        };
        let end = if offset_ptr != 0 {
            let mut b = [0u8; 8];
            mem::read(pid, offset_ptr, &mut b).map_err(|e| fail(format!("reading the offset: {e}")))?;
            u64::from_le_bytes(b)
        } else {
            procfs::fd_position(pid, fd).map_err(|e| fail(format!("the position of fd {fd}: {e}")))?
        };
        let start = end.checked_sub(len).ok_or_else(|| fail(format!("offset {end} is before the bytes")))?;
        let file = procfs::open_fd(pid, fd).map_err(|e| fail(format!("opening fd {fd}: {e}")))?;
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, start).map_err(|e| fail(format!("reading fd {fd} at {start}: {e}")))?;
        Ok(bytes)
    }

    /// The first `len` bytes in the tracee's pipe `source`: copied, or read (`consume`, which
    /// takes them out of the pipe as the `splice` that was run as `tee` would have).
    fn pipe_output(
        &mut self,
        pid: Pid,
        desc: &SyscallDesc,
        source: u64,
        len: u64,
        consume: bool,
    ) -> Result<Vec<u8>, Error> {
        use std::io::Read;
        use std::os::fd::AsFd;
        let fail = |why: String| Error::Unsupported {
            pid,
            what: format!(
                "{} wrote {len} bytes from a pipe to rdb's own output that rdb cannot read: {why}",
                desc.name()
            ),
        };
        let mut pipe = procfs::open_fd(pid, source).map_err(|e| fail(format!("opening fd {source}: {e}")))?;
        let mut bytes = vec![0u8; len as usize];
        if consume {
            pipe.read_exact(&mut bytes).map_err(|e| fail(format!("reading fd {source}: {e}")))?;
            return Ok(bytes);
        }
        if self.scratch.is_none() {
            self.scratch = Some(std::io::pipe().map_err(|e| fail(format!("creating a pipe: {e}")))?);
        }
        let (r, w) = self.scratch.as_mut().expect("just made");
        sys::set_pipe_size(w.as_fd(), len as usize).map_err(|e| fail(format!("sizing a pipe: {e}")))?;
        let n =
            sys::tee(pipe.as_fd(), w.as_fd(), len as usize).map_err(|e| fail(format!("copying fd {source}: {e}")))?;
        r.read_exact(&mut bytes[..n]).map_err(|e| fail(format!("reading the copy: {e}")))?;
        if (n as u64) < len {
            return Err(fail(format!("only {n} of them are still in the pipe")));
        }
        Ok(bytes)
    }

    /// Identity (and, when it cannot be found again by path, contents) of an mmap'ed file.
    fn mapped_file(&mut self, pid: Pid, args: &[u64; 6], addr: u64) -> Result<Option<MappedFile>, Error> {
        // A shared mapping's path was read at its exit stop (the descriptor's path may have
        // changed since, while the thread waited for its turn: unlinked, closed).
        let read_before = self.procs.get_mut(&pid).and_then(|p| p.shared_path.take());
        let vanished = read_before.is_some();
        let path = match read_before {
            Some(path) => path,
            None => procfs::fd_path(pid, args[4]).map_err(Error::ptrace(pid, "reading the mapped fd"))?,
        };
        let bytes = path.as_os_str().as_bytes().to_vec();
        if bytes == b"/dev/zero" {
            return Ok(None);
        }
        let md = std::fs::metadata(&path).ok();
        // Unlinked since the exit stop: its bytes are kept, as a deleted file's are.
        let vanished = vanished && md.is_none();
        let regular = md.as_ref().is_some_and(|m| m.is_file());
        let deleted = bytes.ends_with(b" (deleted)");
        let volatile = bytes.starts_with(b"/memfd:") || bytes.starts_with(b"/dev/shm/") || deleted;
        let shared_writable = args[3] & libc::MAP_SHARED as u64 != 0 && args[2] & libc::PROT_WRITE as u64 != 0;
        if !regular && !volatile && !vanished {
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
            return resume(pid, 0, "resuming");
        };
        let tid = Tid(pid.0 as u32);
        let regs = ptrace::get_regs(pid).map_err(Error::ptrace(pid, "reading registers"))?;
        if sig == libc::SIGTRAP && self.procs[&pid].seek.is_some() {
            let hits = rdb_tracee::debugreg::take_hits(pid).map_err(Error::ptrace(pid, "reading DR6"))?;
            if hits & (1 << interrupt::RECORD_SLOT) != 0 {
                return self.on_arrival(pid, &regs);
            }
        }
        if sig == libc::SIGSTOP {
            if let Some((reason, tries)) = self.procs.get_mut(&pid).and_then(|p| p.interrupting.take()) {
                return self.on_interrupt(pid, reason, tries, &regs);
            }
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
                return resume(pid, 0, "resuming");
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
                return resume(pid, 0, "resuming");
            }
        }
        let mut search = false;
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
                if p.seek.is_none() && p.injecting.is_none() && p.interrupting.is_none() {
                    // Look for a point to deliver it at, starting here.
                    p.interrupt_at = None;
                    search = true;
                }
                None
            }
        };
        if search {
            self.begin_search(pid, Reason::Signal, 0, &regs, true)?;
        }
        match deliver {
            Some((info, asynchronous)) => {
                self.w.push(&Event::Signal { tid, sig, asynchronous, siginfo: info.to_vec() })?;
                resume(pid, sig, "delivering a signal")
            }
            None => resume(pid, 0, "holding back a signal"),
        }
    }

    /// Start looking for an interruption point at the stop `regs` of `pid` (in user code):
    /// watch the next arrival at this pc.
    /// First at the return address of the function it is in (arrivals there are rarer, and
    /// each is a stop at replay), unless `climb` is false.
    fn begin_search(
        &mut self,
        pid: Pid,
        reason: Reason,
        tries: u32,
        regs: &ptrace::Regs,
        climb: bool,
    ) -> Result<(), Error> {
        // A switch is made where the thread spins, never at a return address.
        let climb = climb && reason == Reason::Signal;
        // Watched at an instruction replay can run to without stopping (see `point_stub`).
        let stub_friendly = |pc| point_stub::is_patchable(pid, point_stub::prefer_patchable(pid, pc));
        let seek = match climb.then(|| interrupt::return_address(pid, regs, stub_friendly)).flatten() {
            Some(ret) => Seek::climbed(reason, point_stub::prefer_patchable(pid, ret), tries),
            None => match point_stub::prefer_patchable(pid, regs.rip) {
                pc if pc == regs.rip => {
                    let key = PointKey::of(pid, regs, &[]).map_err(Error::ptrace(pid, "reading a point's state"))?;
                    Seek::new(reason, key, tries)
                }
                pc => Seek::ahead(reason, pc, tries),
            },
        };
        let watch = rdb_tracee::Watchpoint { addr: seek.pc, len: 1, kind: rdb_tracee::WatchKind::Execute };
        rdb_tracee::debugreg::set_watchpoint(pid, interrupt::RECORD_SLOT, watch)
            .map_err(Error::ptrace(pid, "setting a debug register"))?;
        let until = self.clock.now() + CLIMB_WAIT;
        self.procs.get_mut(&pid).expect("known process").seek = Some((seek, until));
        Ok(())
    }

    /// The SIGSTOP sent to begin a search arrived (swallowed): begin it here, unless the
    /// thread is at a syscall boundary (the signal or the switch happens there anyway) or
    /// the reason is gone.
    fn on_interrupt(&mut self, pid: Pid, reason: Reason, tries: u32, regs: &ptrace::Regs) -> Result<(), Error> {
        let p = &self.procs[&pid];
        let at_boundary = p.in_kernel.is_some()
            || p.last_exit.is_some_and(|(pc, sp, ret)| regs.rip == pc && regs.rsp == sp && regs.rax == ret as u64);
        let wanted = match reason {
            Reason::Signal => !p.deferred.is_empty() && p.injecting.is_none(),
            Reason::Preempt => {
                self.groups.get(&self.units.unit(p.tgid)).is_some_and(|g| g.running == Some(pid) && !g.ready.is_empty())
            }
        };
        if let Some((seek, _)) = &p.seek {
            if !seek.climbed {
                return resume(pid, 0, "resuming");
            }
            // Its return address never came: search here, at the pc of this stop.
            self.points.stale_returns += 1;
            self.procs.get_mut(&pid).expect("known process").seek = None;
            rdb_tracee::debugreg::clear_watchpoint(pid, interrupt::RECORD_SLOT)
                .map_err(Error::ptrace(pid, "clearing a debug register"))?;
            if !at_boundary && wanted {
                self.begin_search(pid, reason, tries, regs, false)?;
            }
        } else if !at_boundary && wanted {
            self.begin_search(pid, reason, tries, regs, true)?;
        } else if at_boundary && p.in_kernel.is_none() && reason == Reason::Preempt {
            // Stopped where its last syscall returned: it has not run an instruction of its
            // slice yet (on a busy machine it waits for a CPU longer than the slice). The
            // slice starts now; left as it was, the slice stays over, the next preemption is
            // due at once, and its SIGSTOP comes before the thread gets a CPU, again and
            // again: the recording stood still for minutes at load 15 on 2 CPUs.
            self.procs.get_mut(&pid).expect("known process").user_since = Some(self.clock.now());
        }
        resume(pid, 0, "resuming")
    }

    /// The thread arrived at the pc of its search again: is this the point?
    fn on_arrival(&mut self, pid: Pid, regs: &ptrace::Regs) -> Result<(), Error> {
        let p = self.procs.get_mut(&pid).expect("known process");
        let (mut seek, until) = p.seek.take().expect("searching");
        let tgid = p.tgid;
        let key = PointKey::of(pid, regs, &seek.pages).map_err(Error::ptrace(pid, "reading a point's state"))?;
        let verdict =
            seek.arrival(key.clone(), || interrupt::page_hashes(tgid)).map_err(Error::ptrace(pid, "reading memory"))?;
        if verdict == Verdict::Again {
            self.procs.get_mut(&pid).expect("known process").seek = Some((seek, until));
            return resume(pid, 0, "resuming");
        }
        rdb_tracee::debugreg::clear_watchpoint(pid, interrupt::RECORD_SLOT)
            .map_err(Error::ptrace(pid, "clearing a debug register"))?;
        if let Verdict::Point { fixed, pages } = verdict {
            self.points.points += 1;
            self.points.fixed += fixed as u64;
            self.points.with_pages += pages as u64;
            self.points.patchable += point_stub::is_patchable(pid, key.pc()) as u64;
            return self.at_point(pid, seek.reason, key);
        }
        if verdict == Verdict::NotASpin {
            self.points.not_spins += 1;
            self.procs.get_mut(&pid).expect("known process").preempt_gave_up = true;
            return resume(pid, 0, "resuming");
        }
        self.points.ambiguous += 1;
        let tries = seek.tries + 1;
        let p = self.procs.get_mut(&pid).expect("known process");
        if tries < interrupt::MAX_TRIES {
            p.interrupt_at = Some((self.clock.now() + RETRY_AFTER, seek.reason, tries));
        } else {
            self.points.given_up += 1;
            let what = match seek.reason {
                Reason::Signal => "the pending signal is held until the thread's next syscall",
                Reason::Preempt => {
                    p.preempt_gave_up = true;
                    "it keeps its turn until its next syscall"
                }
            };
            eprintln!(
                "rdb: warning: no exact point found to interrupt thread {pid} in user code at pc {:#x}: its loop comes back to the same registers and stack with other memory ({tries} tries); {what}",
                regs.rip
            );
        }
        resume(pid, 0, "resuming")
    }

    /// The thread stands at an interruption point: deliver the held signal here, or switch it
    /// out (its `Interrupt` event is logged when its turn comes back).
    fn at_point(&mut self, pid: Pid, reason: Reason, key: PointKey) -> Result<(), Error> {
        let tid = Tid(pid.0 as u32);
        let p = self.procs.get_mut(&pid).expect("known process");
        let tgid = p.tgid;
        match reason {
            Reason::Signal => {
                let Some(info) = p.deferred.pop_front().filter(|_| p.injecting.is_none()) else {
                    return resume(pid, 0, "resuming");
                };
                let sig = si_signo(&info);
                p.injecting = Some(info);
                p.user_since = Some(self.clock.now());
                p.warned = false;
                let PointKey { regs, stack, pages, digest } = key;
                self.w.push(&Event::Interrupt { tid, regs, stack, pages, digest })?;
                // Made pending again: delivered (its stop comes to `on_signal`) before the
                // thread runs another instruction.
                ptrace::tgkill(tgid, pid, sig).map_err(Error::ptrace(pid, "re-sending a signal"))?;
                resume(pid, 0, "resuming")
            }
            Reason::Preempt => {
                let unit = self.units.unit(tgid);
                let g = self.groups.get_mut(&unit).expect("thread group");
                if g.running != Some(pid) || g.ready.is_empty() {
                    return resume(pid, 0, "resuming");
                }
                g.running = None;
                g.ready.push_back(pid);
                p.pending = Some(Pending::Interrupted(Box::new(key)));
                p.user_since = None;
                self.schedule(unit)
            }
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
            let waiting = self.groups.get(&self.units.unit(tgid)).map_or(0, |g| g.ready.len());
            let spent = self.schedule.watchdog;
            let p = self.procs.get_mut(&pid).expect("known process");
            if p.warned {
                return Err(Error::Spinning { tid: pid, pc, location, waiting, secs: 2 * spent.as_secs() });
            }
            p.warned = true;
            p.user_since = Some(self.clock.now());
            let at = location.map(|l| format!(" ({l})")).unwrap_or_default();
            eprintln!(
                "rdb: warning: thread {pid} has run user code for {} s without a syscall while {waiting} other thread(s) wait, at pc {pc:#x}{at}; rdb switches threads at syscalls, or in user code at a point replay can find again, and found none here, so a thread spinning on another one never ends",
                spent.as_secs()
            );
        }
        resume(pid, 0, "resuming")
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
