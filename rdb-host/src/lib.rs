//! Debug host: runs debug-module code against a lazily mirrored copy of a
//! stopped program's address space.
//!
//! # Where to start
//!
//! The replayer stops the program at a region's code location and calls
//! [`DebugHost::invoke`] with a [`Target`] (from `rdb_tracee`) of the stopped program; when
//! it resumes the program it calls [`DebugHost::invalidate`].
//!
//! ```no_run
//! # fn demo(tracee: &dyn rdb_tracee::Target) -> Result<(), rdb_host::HostError> {
//! use rdb_host::{DebugHost, HostOptions};
//! // <bin>.rdb-functions.json, <bin>.rdb-arguments.json and the module they name:
//! let mut host = DebugHost::for_binary("target/rdb/debug/app".as_ref(), HostOptions::default())?;
//! for (address, regions) in host.code_locations() {
//!     // ... set a breakpoint at load_bias + address; when the program stops there:
//!     for region in regions {
//!         let report = host.invoke(region, address, tracee)?;
//!         if !report.is_clean() {
//!             eprintln!("warning: {report}");
//!         }
//!     }
//!     host.invalidate(); // before resuming the program
//! }
//! # Ok(()) }
//! ```
//!
//! # How it works
//!
//! - **A separate process** (`rdb-debug-host`, [`host_main`]) `dlopen`s the
//!   debug module: the module gets the host's libc, heap and stdio, never
//!   the program's. Its stdout/stderr are rdb's (or [`HostOptions::stdout`]),
//!   and C stdio is flushed after every call so debug prints interleave with
//!   the program's output in program order. The process lives across calls,
//!   so debug-only statics and heap data persist.
//! - **Mirrored memory.** Each readable program mapping (from
//!   [`Target::mappings`]) is reserved in the host at the *same address*
//!   (`MAP_FIXED_NOREPLACE`). Pages are filled on first touch from the
//!   program (`process_vm_readv` straight from the host, or over the socket
//!   from [`Memory::read_exact`](rdb_tracee::Memory::read_exact) when the kernel refuses, see
//!   [`MemoryAccess`]), [`HostOptions::pages_per_fill`] pages at a time, and
//!   mapped read-only (read+exec for code, so debug code may call program
//!   functions through pointers). Two ways to catch the first touch
//!   ([`FaultHandling`]):
//!   - *userfaultfd* (default when available): mappings are read-only and
//!     registered for missing-page faults; a server thread in the host fills
//!     them with `UFFDIO_COPY`. It also serves faults the *kernel* takes, so
//!     a system call given program memory (`write(1, program_buffer, n)`,
//!     a large `fwrite`, Rust's `stdout` passing a long program string
//!     straight through) works. The descriptor comes from the `userfaultfd`
//!     crate (through `rdb_tracee::uffd`), which opens `/dev/userfaultfd`
//!     where the kernel has it (root only by default) and else makes the
//!     system call (then `CAP_SYS_PTRACE` or `vm.unprivileged_userfaultfd=1`
//!     is needed: unprivileged users only get `UFFD_USER_MODE_ONLY`, which
//!     does not serve kernel faults). Stale pages are dropped with one
//!     `MADV_DONTNEED` per touched mapping.
//!   - *a `SIGSEGV` handler* (everywhere): mappings are `PROT_NONE`; the
//!     handler fills the page in the faulting thread (`mprotect` RW, read,
//!     `mprotect` R). Stale pages: one `mprotect(PROT_NONE)` per touched
//!     mapping. The price: a system call given a never-touched program page
//!     fails with `EFAULT` (debug code printing through stdio/`format!`
//!     copies in user mode first and is not affected).
//!
//!   Pages are filled 4 at a time: a 4-page fill costs about as much as a
//!   1-page fill (`bench/fault_fill.c`; figures in the README's performance
//!   section). userfaultfd is the default for what it lets debug code do
//!   (e.g. Rust's `println!` of a long program string writes it straight
//!   from program memory, which fails with `EFAULT` under the handler);
//!   [`FaultHandling::Signal`] is the faster choice when everything is
//!   pinned to one CPU. The handler catches writes and not-yet-mirrored
//!   addresses in both modes. An address the host does not mirror yet (a heap that
//!   grew, a new mmap) makes it ask for the current mapping list. Before a
//!   call, the pages of its in-memory arguments (static variables, stack
//!   variables larger than 4 KiB, `args::COPY_LIMIT`) are filled in one go
//!   instead of one fault each; smaller stack variables are copied by the
//!   replayer at the stop and passed by value, like register variables
//!   (their address in debug code is not the program's; what they point to
//!   is read through the mirror).
//! - **Calls without wake-ups.** With [`HostOptions::spin`] (what
//!   `rdb replay --debug` sets, the host pinned to the replay's own CPU),
//!   both sides busy-wait for each other, yielding the CPU, and a call's
//!   request and answer go through a shared-memory mailbox (`channel.rs`):
//!   a call is two same-CPU switches (the yields) and no other system call.
//!   A side that waited longer than the spin time sleeps on the socket and
//!   is rung awake. Sharing the CPU, the host runs, like the replayer, with
//!   the TSC disabled ([`HostOptions::tsc_disabled`]: no trapped
//!   control-register write at each switch; debug code's clock reads are
//!   emulated).
//! - **Protection**. A write to a mirrored page is detected (x86
//!   page-fault error code), reported as
//!   [`InvokeOutcome::WroteProgramMemory`] and, by default, lands in a
//!   private copy discarded after the call ([`WritePolicy`]). The program is
//!   never written: the host has no write access to it at all. A crash
//!   (bad pointer, abort, stack overflow) is reported with the signal and
//!   address; a hang is killed after [`HostOptions::timeout`]. After a crash
//!   or timeout the host is restarted and the report says that debug-only
//!   state was lost.
//! - **Collisions**: a program range where the host already has memory is
//!   refused (never silently read from the host's own memory); at start-up
//!   the host is respawned with a fresh random layout (up to 3 times).
//!
//! # Conventions for debug modules
//!
//! - Region functions: `extern "C" fn(argv: *const *const c_void)` found as
//!   [`rdb_descriptors::DebugEntry`] says (exported symbol, or the
//!   `rdb_regions` section read from the loaded module's memory).
//! - A Rust trampoline should catch panics (`catch_unwind`) and report the
//!   message through the optional exported slot [`PANIC_HOOK_SYMBOL`]
//!   (`#[no_mangle] static mut RDB_HOST_PANIC_HOOK: Option<unsafe extern "C"
//!   fn(*const u8, usize)>`), which the host fills in at load time; the
//!   call then returns normally and the report is
//!   [`InvokeOutcome::Panicked`]. It should also flush its Rust `stdout`
//!   (the host flushes C stdio only). A panic that escapes aborts the host:
//!   reported as a crash with `SIGABRT`.
//! - `argv` ends with a null pointer after the last argument.
//!
//! # Limits
//!
//! - Debug code runs on one thread; threads it starts must not touch
//!   program memory.
//! - The program's thread-local storage is not mirrored (debug code has its
//!   own); program code run through a pointer sees the host's.
//! - Program text is mirrored as it is at the stop, except at region
//!   locations, where the host shows the main binary's own bytes instead of
//!   the replayer's `int3` (debug code may call a program function holding a
//!   region location). Breakpoints set by other means would show.
//! - The host is a child process of the caller: a replayer that reaps with
//!   `waitpid(-1, ...)` must leave [`DebugHost::host_pid`] alone. It is
//!   killed when the *thread* that spawned it exits (`PR_SET_PDEATHSIG`),
//!   so spawn it from a thread that lives as long as the replay.

mod args;
mod channel;
mod client;
mod error;
mod host;
mod protocol;
mod sys;

pub use args::ArgValue;
pub use client::{Check, DebugHost, FaultHandling, HostOptions, MemoryAccess, WatchRequest, WritePolicy};
pub use error::{HostError, Invocation, InvokeOutcome, Loc};
pub use host::module::PANIC_HOOK_SYMBOL;
pub use host::services::ProgramBacktracer;
pub use host::{host_main, run_if_host};
pub use rdb_tracee::{Mapping, Target};
