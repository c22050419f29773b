//! Trapping `cpuid` with CPUID faulting, shared by recorder and replayer.
//!
//! Where the host offers CPUID faulting (Intel CPUs, and hypervisors that pass it on; the
//! `cpuid_fault` flag of `/proc/cpuinfo`), `arch_prctl(ARCH_SET_CPUID, 0)` makes every `cpuid`
//! of the calling thread raise `SIGSEGV` (si_code `SI_KERNEL`) before it executes. The setting
//! is inherited by forked processes and new threads and cleared by `execve` (both checked on
//! this machine), so rdb injects the call into each tracee after every exec, like its `rdtsc`
//! trap.
//!
//! Recording, the recorder executes the instruction itself for the program's leaf and subleaf
//! (eax, ecx), gives the program the result and logs it as a `Cpuid` event; replay gives the
//! program the logged result, checking that it asks for the same leaf and subleaf at the same
//! point. On a host without CPUID faulting (`ENODEV`: AMD CPUs today) nothing is trapped and
//! the trace header says so; replaying a trapped trace there runs the program's `cpuid`
//! natively, and [`native_differences`] says which recorded results this CPU would not give.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rdb_tracee::ptrace::{si_code, Regs, SigInfo};
use rdb_tracee::{mem, this_process as sys, Pid};

use crate::process;
use crate::syscalls::Sysno;
use crate::trace::{Event, EventReader, Trace, TraceError};

/// `si_code` of a signal the kernel raises itself: what a faulting `cpuid` (a #GP) delivers.
const SI_KERNEL: i32 = 0x80;

/// Whether this host offers CPUID faulting (probed without affecting the calling thread).
/// `RDB_CPUID_FAULTING=0` makes rdb act as on a host without it (so that the native path of a
/// trapped trace is exercised on hosts that have it: `rdb-runtime/tests/cpuid.rs`).
pub fn available() -> bool {
    std::env::var_os("RDB_CPUID_FAULTING").is_none_or(|v| v != "0") && sys::cpuid_faulting_available()
}

/// Make `cpuid` fault in the stopped tracee `pid` (which must be at a stop where a syscall can
/// be injected, as for `process::trap_rdtsc`). `Ok(false)`: the host has no CPUID faulting.
pub fn arm(pid: Pid) -> io::Result<bool> {
    let r = process::inject_syscall(pid, Sysno::arch_prctl as u64, [sys::ARCH_SET_CPUID, 0, 0, 0, 0, 0])?;
    match r {
        0 => Ok(true),
        r if r == -(libc::ENODEV as i64) => Ok(false),
        r => Err(io::Error::other(format!("arch_prctl(ARCH_SET_CPUID, 0) failed in the tracee: {r}"))),
    }
}

/// Make `cpuid` run natively again in the stopped tracee thread `pid` (same stops as [`arm`]).
pub fn disarm(pid: Pid) -> io::Result<()> {
    let r = process::inject_syscall(pid, Sysno::arch_prctl as u64, [sys::ARCH_SET_CPUID, 1, 0, 0, 0, 0])?;
    if r != 0 {
        return Err(io::Error::other(format!("arch_prctl(ARCH_SET_CPUID, 1) failed in the tracee: {r}")));
    }
    Ok(())
}

/// What [`scan_last`] gives for a trace it could not read to its end.
pub const NEVER: u64 = u64::MAX - 1;

/// The trace index from which no `Cpuid` event remains (0 when the trace has none), found by a
/// thread reading `events` to its end; `u64::MAX` until it has, [`NEVER`] when the trace
/// cannot be read to its end. Past that index a faithful replay runs no `cpuid` any more, so
/// the replayer turns faulting off: a thread with CPUID faulting costs a model-specific
/// register write at every switch to or from it, which under virtualisation traps to the
/// hypervisor (about 10 µs a switch on the test machines, two switches per replay stop).
pub fn scan_last(mut events: EventReader) -> Arc<AtomicU64> {
    let done = Arc::new(AtomicU64::new(u64::MAX));
    let result = done.clone();
    let scan = move || {
        let (mut index, mut after) = (0u64, 0u64);
        loop {
            match events.next_event() {
                Ok(Some(ev)) => {
                    index += 1;
                    if matches!(ev, Event::Cpuid { .. }) {
                        after = index;
                    }
                }
                Ok(None) => break done.store(after, Ordering::Release),
                Err(_) => break done.store(NEVER, Ordering::Release), // faulting stays on
            }
        }
    };
    if std::thread::Builder::new().name("rdb-cpuid-scan".into()).spawn(scan).is_err() {
        result.store(NEVER, Ordering::Release); // no thread: faulting stays on
    }
    result
}

/// The leaf and subleaf of the trapped `cpuid` a `SIGSEGV` stop (`info`, registers `regs`)
/// stands at, or `None` when the signal is something else: it must come from the kernel and
/// the bytes at the program counter must be `cpuid` (`0f a2`).
pub fn trapped(pid: Pid, regs: &Regs, info: &SigInfo) -> Option<(u32, u32)> {
    if si_code(info) != SI_KERNEL {
        return None;
    }
    let mut code = [0u8; 2];
    (mem::read(pid, regs.rip, &mut code).ok() == Some(2) && code == [0x0f, 0xa2])
        .then_some((regs.rax as u32, regs.rcx as u32))
}

/// Execute `cpuid` here for the program. The result is this CPU's: for the leaves that carry
/// per-CPU data (the APIC id in leaf 1 EBX[31:24], the x2APIC id in leaves 0xb and 0x1f EDX,
/// the core type in leaf 0x1a, AMD's extended APIC id in leaf 0x8000001e) it is the CPU the
/// recorder thread runs on. rdb pins recorder and program to one CPU by default, so that is
/// exactly what the program would have read; with `--no-pin` it is a CPU the program may run
/// on, which the program cannot tell apart from having been migrated between two instructions
/// (a thread can be, at any time). Moving the recorder to the tracee's last CPU for each
/// `cpuid` would cost two affinity changes and still be stale by the time the program runs.
pub fn execute(leaf: u32, subleaf: u32) -> [u32; 4] {
    sys::cpuid(leaf, subleaf)
}

/// Whether a leaf's result depends on the CPU that executes it (see [`execute`]).
fn per_cpu(leaf: u32) -> bool {
    matches!(leaf, 1 | 0xb | 0x1f | 0x1a | 0x8000_001e)
}

/// The recorder's results of leaves that are the same on every CPU, so that a program asking
/// again (python's start-up asks about 2,600 times) costs no second `cpuid` in the recorder,
/// which under a hypervisor is an exit to it. Per-CPU leaves are executed every time.
#[derive(Default)]
pub struct Cache {
    known: std::collections::HashMap<(u32, u32), [u32; 4]>,
}

impl Cache {
    /// [`execute`], remembered for leaves that are not per CPU.
    pub fn execute(&mut self, leaf: u32, subleaf: u32) -> [u32; 4] {
        if per_cpu(leaf) {
            return execute(leaf, subleaf);
        }
        *self.known.entry((leaf, subleaf)).or_insert_with(|| execute(leaf, subleaf))
    }
}

/// Give the program the result of its trapped `cpuid` and step past the instruction. (The
/// instruction writes the 32-bit registers, which zero the upper halves.)
pub fn finish(regs: &mut Regs, result: [u32; 4]) {
    regs.rax = result[0] as u64;
    regs.rbx = result[1] as u64;
    regs.rcx = result[2] as u64;
    regs.rdx = result[3] as u64;
    regs.rip += 2;
}

/// `result` without the fields that depend on which CPU executed the instruction (see
/// [`execute`]): what must agree between two CPUs of one machine.
pub fn without_per_cpu_fields(leaf: u32, mut result: [u32; 4]) -> [u32; 4] {
    match leaf {
        1 => result[1] &= 0x00ff_ffff,
        0xb | 0x1f => result[3] = 0,
        0x1a | 0x8000_001e => result[0] = 0,
        _ => {}
    }
    result
}

/// For a trace recorded with `cpuid` trapped, replayed where the program's `cpuid` runs
/// natively: one line per recorded leaf and subleaf whose result this CPU does not give
/// (per-CPU fields aside), at most `limit`, and how many differ in all.
pub fn native_differences(
    recorded: impl IntoIterator<Item = (u32, u32, [u32; 4])>,
    limit: usize,
) -> (Vec<String>, usize) {
    let mut seen = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    let mut count = 0;
    for (leaf, subleaf, result) in recorded {
        if !seen.insert((leaf, subleaf, result)) {
            continue;
        }
        let here = execute(leaf, subleaf);
        if without_per_cpu_fields(leaf, here) != without_per_cpu_fields(leaf, result) {
            count += 1;
            if lines.len() < limit {
                lines.push(format!(
                    "cpuid leaf {leaf:#x} subleaf {subleaf:#x}: recorded {}, this CPU gives {}",
                    hex4(result),
                    hex4(here)
                ));
            }
        }
    }
    (lines, count)
}

/// How a replay treats `cpuid`: decided once, from the trace header and this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayPlan {
    /// Arm CPUID faulting in every replayed image and serve each `cpuid` from the trace.
    pub trap: bool,
    /// What to tell the user before the replay starts.
    pub warning: Option<String>,
}

/// Decide how to replay `trace`'s `cpuid` instructions here. A trace recorded without
/// trapping replays as it was recorded (natively). A trapped one is served from the trace
/// where this host has CPUID faulting; where it has none, the program's `cpuid` runs natively,
/// the recorded `Cpuid` events are passed over, and the warning compares the recorded results
/// with this CPU's (a pass over the events).
pub fn plan_replay(trace: &Trace) -> Result<ReplayPlan, TraceError> {
    plan_replay_where(trace, trace.header().cpuid_trapped && available())
}

/// [`plan_replay`] on a host that has CPUID faulting (`faulting`) or not.
pub fn plan_replay_where(trace: &Trace, faulting: bool) -> Result<ReplayPlan, TraceError> {
    if !trace.header().cpuid_trapped {
        return Ok(ReplayPlan { trap: false, warning: None });
    }
    if faulting {
        return Ok(ReplayPlan { trap: true, warning: None });
    }
    let mut recorded = Vec::new();
    let mut events = trace.events()?;
    while let Some(ev) = events.next_event()? {
        if let Event::Cpuid { leaf, subleaf, result, .. } = ev {
            recorded.push((leaf, subleaf, result));
        }
    }
    let total = recorded.len();
    let (lines, differing) = native_differences(recorded, 12);
    let head = "rdb: warning: the trace was recorded with cpuid trapped, but this machine has no CPUID faulting: the program's cpuid instructions run natively here";
    let warning = if differing == 0 {
        format!("{head}; this CPU gives the results of all {total} recorded ones (APIC ids aside)")
    } else {
        let more =
            if differing > lines.len() { format!("\n  ... {} more", differing - lines.len()) } else { String::new() };
        format!(
            "{head}, and gives other results than recorded for {differing} leaves:\n  {}{more}\n  the program may choose other code paths (instruction sets, cache sizes, thread counts), so the replay may diverge; replay on a machine with CPUID faulting (Intel) or of the recording's CPU model",
            lines.join("\n  ")
        )
    };
    Ok(ReplayPlan { trap: false, warning: Some(warning) })
}

/// The `cpuid` part of the warning about a replay machine that differs from the recording one.
pub fn machine_note(plan: &ReplayPlan) -> &'static str {
    if plan.trap {
        "the program is given its recorded cpuid results, so it may use instructions this CPU lacks"
    } else {
        "cpuid is not trapped in this replay (the program asks this CPU)"
    }
}

fn hex4(r: [u32; 4]) -> String {
    format!("eax={:#x} ebx={:#x} ecx={:#x} edx={:#x}", r[0], r[1], r[2], r[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_sets_the_four_registers_and_steps_over_the_instruction() {
        let mut r = rdb_tracee::ptrace::zeroed_regs();
        (r.rip, r.rax, r.rbx, r.rcx) = (0x1000, u64::MAX, u64::MAX, 7);
        finish(&mut r, [1, 2, 3, 0xffff_ffff]);
        assert_eq!((r.rax, r.rbx, r.rcx, r.rdx, r.rip), (1, 2, 3, 0xffff_ffff, 0x1002));
    }

    #[test]
    fn only_the_apic_ids_are_per_cpu() {
        let r = [0x1111_1111, 0x2222_2222, 0x3333_3333, 0x4444_4444];
        assert_eq!(without_per_cpu_fields(1, r), [0x1111_1111, 0x0022_2222, 0x3333_3333, 0x4444_4444]);
        assert_eq!(without_per_cpu_fields(0xb, r)[3], 0);
        assert_eq!(without_per_cpu_fields(0x1f, r)[..3], r[..3]);
        assert_eq!(without_per_cpu_fields(0, r), r);
        assert_eq!(without_per_cpu_fields(7, r), r);
    }

    #[test]
    fn this_cpu_agrees_with_itself_and_a_changed_result_is_named() {
        let vendor = execute(0, 0);
        let features = execute(1, 0);
        let (lines, n) = native_differences([(0, 0, vendor), (1, 0, features), (1, 0, features)], 8);
        assert_eq!((lines.len(), n), (0, 0), "{lines:?}");
        let mut other = features;
        other[2] ^= 1 << 28; // AVX
        let (lines, n) = native_differences([(0, 0, vendor), (1, 0, other)], 8);
        assert_eq!(n, 1);
        assert!(lines[0].starts_with("cpuid leaf 0x1 subleaf 0x0: recorded eax="), "{lines:?}");
    }
}
