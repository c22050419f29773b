//! The tracee layer: every system interface rdb uses on *another* process — ptrace, `/proc`,
//! `process_vm_readv`/`writev`, the x86 debug registers, userfaultfd — and the stopped-target
//! traits the replayer, the debug host and the debugger front ends share. Nothing outside this
//! crate calls ptrace or reads another process's `/proc` entries; the engine's own-process
//! primitives (CPU placement, the TSC switch, clocks) live here too, in [`this_process`].
//!
//! Module guide:
//! - [`ptrace`]: requests on a stopped thread (registers, FP state, siginfo, syscall info,
//!   resume, single-step), waiting, signals.
//! - [`mem`]: reading and writing another process's memory.
//! - [`procfs`]: the one `/proc/PID/maps` parser, the auxiliary vector (from `/proc` or from
//!   an initial stack image) and the load bias of a main binary.
//! - [`debugreg`]: hardware watchpoints (DR0-DR3, DR6, DR7).
//! - [`uffd`]: userfaultfd for a process mirroring another one's memory.
//! - [`target`]: [`Memory`], [`Target`] (a stopped thread, read-only), [`Control`]
//!   (breakpoints, watchpoints, resume, step) and [`Thread`], a live traced thread that
//!   implements them.
//! - [`this_process`]: the calling process's own CPU placement, TSC and clocks.
//!
//! Every `unsafe` block of the crate carries a `// SAFETY:` comment; the public API is safe.
//! Linux x86-64 only.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

pub mod debugreg;
pub mod mem;
pub mod procfs;
pub mod ptrace;
pub mod target;
pub mod this_process;
pub mod uffd;

pub use debugreg::{WatchKind, Watchpoint};
pub use procfs::Mapping;
pub use ptrace::{Regs, SigInfo, Wait};
pub use target::{Control, Memory, Stop, Target, Thread};

/// A kernel process or thread id of another process (ptrace addresses threads; a process is
/// named by its main thread's id). Recorded ids in a trace are a different thing
/// (`rdb_runtime::trace::Tid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Pid(pub i32);

impl Pid {
    /// The id of a child process started with `std::process::Command`.
    pub fn of(child: &std::process::Child) -> Pid {
        Pid(child.id() as i32)
    }
}

impl std::fmt::Display for Pid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
