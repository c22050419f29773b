//! The debug host against a live program stopped under ptrace.

mod support;

use rdb_host::{DebugHost, FaultHandling, HostError, HostOptions, InvokeOutcome, MemoryAccess, WritePolicy};
use std::time::Duration;
use support::*;

fn options(tag: &str) -> (HostOptions, std::path::PathBuf) {
    let (out, path) = output_file(tag);
    let opts = HostOptions {
        stdout: Some(out),
        program: Some(host_program()),
        timeout: Duration::from_secs(20),
        ..HostOptions::default()
    };
    (opts, path)
}

/// Options for a test in one fault-handling mode; the tag names its files.
fn options_in(tag: &str, faults: FaultHandling) -> (HostOptions, std::path::PathBuf) {
    let (mut opts, out) = options(&format!("{tag}-{faults:?}"));
    opts.faults = faults;
    (opts, out)
}

/// Runs each named test function (taking a `FaultHandling`) in both modes.
macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        mod signal_handler {
            $(#[test] fn $name() { super::$name(rdb_host::FaultHandling::Signal) })*
        }
        mod userfaultfd {
            $(#[test] fn $name() {
                if super::userfaultfd_available() {
                    super::$name(rdb_host::FaultHandling::Userfaultfd)
                }
            })*
        }
    };
}

/// userfaultfd serving kernel faults needs privileges; say so when missing.
fn userfaultfd_available() -> bool {
    // SAFETY: probing syscall; the descriptor is closed at once.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) };
    if fd < 0 {
        eprintln!("userfaultfd unavailable here ({}); userfaultfd-mode test skipped", std::io::Error::last_os_error());
        return false;
    }
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd as i32) };
    true
}

in_both_modes!(
    debug_code_reads_program_memory_at_every_stop_and_keeps_its_state,
    program_memory_can_come_through_the_replayer,
    a_write_to_program_memory_is_reported_and_discarded,
    a_write_can_abort_the_call,
    a_crash_in_debug_code_is_reported_and_the_host_restarts,
    memory_mapped_after_the_first_call_is_mirrored_on_demand,
    debug_code_can_run_program_code_on_program_data,
    debug_code_can_call_program_code_holding_a_breakpoint,
    system_calls_on_program_memory,
);

fn spawn_c(live: &Live, regions: &[u32], opts: HostOptions) -> DebugHost {
    let (functions, arguments) = descriptors(live.location(), regions, c_entry);
    DebugHost::spawn(&fixtures().c_module, &functions, &arguments, opts).unwrap()
}

/// Calls `region` at every stop until the program ends; every call must be clean.
fn invoke_at_every_stop(host: &mut DebugHost, live: &mut Live, region: u32) {
    loop {
        let report = host.invoke(region, live.location(), &*live).unwrap();
        assert!(report.is_clean(), "{report}");
        host.invalidate();
        if !live.resume() {
            break;
        }
    }
}

/// Expected debug line of region 1 at the k-th stop (1-based) of `program 5`.
fn expected_line(hit: u64, k: u64) -> String {
    let i = k - 1;
    let counter: u64 = (0..=i).sum();
    format!(
        "[debug] hit={hit} i={i} len={k} first={} counter={counter} local={} msg=hello from the program",
        i * 10,
        1000 + k
    )
}

fn sees_program_memory(memory: MemoryAccess, tag: &str, faults: FaultHandling) {
    let (mut opts, out) = options_in(tag, faults);
    let mut live = Live::start(&["5"], &format!("{tag}-{faults:?}"));
    opts.memory = memory;
    let mut host = spawn_c(&live, &[1], opts);
    let (counter, _) = symbol(&fixtures().program, "counter");
    let mut k = 0;
    loop {
        k += 1;
        let before = live.read_u64(counter + live.bias);
        // Twice at the same stop: the second call sees the same memory.
        for _ in 0..2 {
            let report = host.invoke(1, live.location(), &live).unwrap();
            assert!(report.is_clean(), "{report}");
        }
        assert_eq!(live.read_u64(counter + live.bias), before, "the program's memory changed");
        host.invalidate();
        if !live.resume() {
            break;
        }
    }
    assert_eq!(k, 5);
    assert_eq!(live.finish(), plain_run(&["5"]), "the program's output changed");
    let printed = std::fs::read_to_string(&out).unwrap();
    let expected: Vec<String> = (1..=10).map(|hit| expected_line(hit, hit.div_ceil(2))).collect();
    assert_eq!(printed.lines().collect::<Vec<_>>(), expected);
    assert_eq!(host.restarts(), 0);
}

fn debug_code_reads_program_memory_at_every_stop_and_keeps_its_state(faults: FaultHandling) {
    sees_program_memory(MemoryAccess::Direct, "direct", faults);
}

fn program_memory_can_come_through_the_replayer(faults: FaultHandling) {
    sees_program_memory(MemoryAccess::ViaReplayer, "via-replayer", faults);
}

fn a_write_to_program_memory_is_reported_and_discarded(faults: FaultHandling) {
    let mut live = Live::start(&["5"], &format!("write-{faults:?}"));
    let (opts, out) = options_in("write", faults);
    let mut host = spawn_c(&live, &[1, 2], opts);
    let (counter, _) = symbol(&fixtures().program, "counter");
    let counter = counter + live.bias;
    live.resume(); // second stop: counter == 1
    let report = host.invoke(2, live.location(), &live).unwrap();
    assert_eq!(report.outcome, InvokeOutcome::WroteProgramMemory { addresses: vec![counter], aborted: false });
    assert!(!report.host_restarted);
    let text = report.to_string();
    assert!(text.contains("region 2 (program.c:20:5)") && text.contains(&format!("{counter:#x}")), "{text}");
    assert_eq!(live.read_u64(counter), 1, "the program was written");
    // Same stop: the debug copy of the page was discarded, state kept (hit=2).
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    host.invalidate();
    assert_eq!(live.finish(), plain_run(&["5"]));
    let printed = std::fs::read_to_string(&out).unwrap();
    assert_eq!(printed, format!("[debug] wrote counter, now reads 999\n{}\n", expected_line(2, 2)));
}

fn a_write_can_abort_the_call(faults: FaultHandling) {
    let live = Live::start(&["3"], &format!("write-abort-{faults:?}"));
    let (mut opts, out) = options_in("write-abort", faults);
    opts.on_write = WritePolicy::Abort;
    let mut host = spawn_c(&live, &[1, 2], opts);
    let (counter, _) = symbol(&fixtures().program, "counter");
    let report = host.invoke(2, live.location(), &live).unwrap();
    assert_eq!(
        report.outcome,
        InvokeOutcome::WroteProgramMemory { addresses: vec![counter + live.bias], aborted: true }
    );
    assert!(report.host_restarted && report.to_string().contains("debug-only state"), "{report}");
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    assert_eq!(live.finish(), plain_run(&["3"]));
    // The aborted call printed nothing (stopped before its printf); the
    // restarted host counts from 1 again.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n", expected_line(1, 1)));
}

fn a_crash_in_debug_code_is_reported_and_the_host_restarts(faults: FaultHandling) {
    let mut live = Live::start(&["4"], &format!("crash-{faults:?}"));
    let (opts, out) = options_in("crash", faults);
    let mut host = spawn_c(&live, &[1, 3, 6, 9], opts);
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    let pid = host.host_pid();
    let report = host.invoke(3, live.location(), &live).unwrap();
    match &report.outcome {
        InvokeOutcome::Crashed { signal, address, reason } => {
            assert_eq!(*signal, libc::SIGSEGV);
            assert_eq!(*address, Some(0x10));
            // 0x10: a field of a null pointer.
            assert!(reason.contains("a null pointer (the program has no memory there)"), "{reason}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    assert!(report.host_restarted);
    assert!(report.to_string().contains("SIGSEGV at 0x10"), "{report}");
    host.invalidate();
    assert!(live.resume());
    let report = host.invoke(6, live.location(), &live).unwrap();
    assert!(matches!(report.outcome, InvokeOutcome::Crashed { signal: libc::SIGABRT, .. }), "{report}");
    let report = host.invoke(9, live.location(), &live).unwrap();
    assert!(report.to_string().contains("SIGSEGV") && report.to_string().contains("overflowed its stack"), "{report}");
    host.invalidate();
    assert!(live.resume());
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    assert_ne!(host.host_pid(), pid);
    assert_eq!(host.restarts(), 3);
    assert_eq!(live.finish(), plain_run(&["4"]));
    let printed = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        printed,
        format!(
            "{}\n[debug] about to follow a bad pointer\n[debug] aborting\n[debug] recursing\n{}\n",
            expected_line(1, 1),
            expected_line(1, 3)
        )
    );
}

#[test]
fn a_hang_times_out_and_the_host_restarts() {
    let live = Live::start(&["2"], "hang");
    let (mut opts, out) = options("hang");
    opts.timeout = Duration::from_millis(1500);
    let mut host = spawn_c(&live, &[1, 4], opts);
    let report = host.invoke(4, live.location(), &live).unwrap();
    assert_eq!(report.outcome, InvokeOutcome::TimedOut { after: Duration::from_millis(1500) });
    assert!(report.host_restarted);
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    assert_eq!(live.finish(), plain_run(&["2"]));
    let printed = std::fs::read_to_string(&out).unwrap();
    assert!(printed.ends_with(&format!("{}\n", expected_line(1, 1))), "{printed}");
}

#[test]
fn rust_module_panics_are_reported_and_state_survives() {
    let mut live = Live::start(&["3"], "rust");
    let (opts, out) = options("rust");
    let (functions, arguments) = descriptors(live.location(), &[10, 11], table_entry);
    let mut host = DebugHost::spawn(&fixtures().rust_module, &functions, &arguments, opts).unwrap();
    assert!(host.invoke(10, live.location(), &live).unwrap().is_clean());
    let report = host.invoke(11, live.location(), &live).unwrap();
    assert_eq!(report.outcome, InvokeOutcome::Panicked { message: "debug code gave up at call 2".into() });
    assert!(!report.host_restarted);
    host.invalidate();
    assert!(live.resume());
    assert!(host.invoke(10, live.location(), &live).unwrap().is_clean());
    assert_eq!(live.finish(), plain_run(&["3"]));
    let printed = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        printed,
        "[rust] call=1 len=1 first=0 counter=0 seen=[1]\n[rust] call=3 len=2 first=10 counter=1 seen=[1, 2]\n"
    );
}

#[test]
fn unknown_functions_and_unavailable_arguments_are_clear_errors() {
    let live = Live::start(&["1"], "errors");
    let (opts, _) = options("errors");
    let (functions, arguments) = descriptors(live.location(), &[1, 77], c_entry);
    let err = DebugHost::spawn(&fixtures().c_module, &functions, &arguments, opts).err().unwrap();
    assert!(matches!(err, HostError::Module { .. }));
    assert!(err.to_string().contains("region 77: no exported symbol `__rdb_entry_77`"), "{err}");

    let (opts, _) = options("errors2");
    let (functions, mut arguments) = descriptors(live.location(), &[1], c_entry);
    arguments.arguments[1].locations[0].location = rdb_descriptors::Location::OptimizedOut;
    let mut host = DebugHost::spawn(&fixtures().c_module, &functions, &arguments, opts).unwrap();
    let err = host.invoke(1, live.location(), &live).unwrap_err().to_string();
    assert!(err.contains("region 1 (program.c:10:5): argument `i` (position 1) is optimized out"), "{err}");
    let err = host.invoke(1, live.location() + 1, &live).unwrap_err().to_string();
    assert!(err.contains("has no code location at address"), "{err}");
    let err = host.invoke(5, live.location(), &live).unwrap_err().to_string();
    assert!(err.contains("region 5 is not in the function descriptors"), "{err}");

    let (opts, _) = options("errors-table");
    let (functions_t, arguments_t) = descriptors(live.location(), &[1], table_entry);
    let err = DebugHost::spawn(&fixtures().c_module, &functions_t, &arguments_t, opts).err().unwrap();
    assert!(err.to_string().contains("no section `rdb_regions` (is this an rdb debug module?)"), "{err}");
    let (opts, _) = options("errors-table2");
    let (functions_t, arguments_t) = descriptors(live.location(), &[10, 12], table_entry);
    let err = DebugHost::spawn(&fixtures().rust_module, &functions_t, &arguments_t, opts).err().unwrap();
    assert!(err.to_string().contains("region 12: no entry in section `rdb_regions`"), "{err}");
    let (mut opts, _) = options("errors-program");
    opts.program = Some("/nonexistent/rdb-debug-host".into());
    let err = DebugHost::spawn(&fixtures().c_module, &functions, &arguments, opts).err().unwrap();
    assert!(matches!(err, HostError::Spawn { .. }) && err.to_string().contains("/nonexistent/rdb-debug-host"), "{err}");
    let (opts, _) = options("errors-not-elf");
    let err = DebugHost::spawn(&fixtures().dir.join("program-errors.out"), &functions, &arguments, opts).err().unwrap();
    assert!(matches!(err, HostError::Module { .. }), "{err}");

    let (opts, _) = options("errors3");
    let err = DebugHost::spawn(&fixtures().dir.join("missing.so"), &functions, &arguments, opts).err().unwrap();
    assert!(err.to_string().contains("missing.so"), "{err}");
    live.finish();
}

/// Cost of one region hit: `RDB_MEASURE=1 cargo test -p rdb-host --release
/// --test host -- --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_invoke_cost() {
    let stops: u64 = std::env::var("RDB_STOPS").ok().and_then(|s| s.parse().ok()).unwrap_or(5000);
    let arg = stops.to_string();
    let cpu = std::env::var("RDB_CPU").ok().and_then(|s| s.parse::<usize>().ok());
    let host_cpu = std::env::var("RDB_HOST_CPU").ok().and_then(|s| s.parse::<usize>().ok()).or(cpu);
    let spin = Duration::from_micros(std::env::var("RDB_SPIN_US").ok().and_then(|s| s.parse().ok()).unwrap_or(0));
    let faults = match std::env::var("RDB_FAULTS").as_deref() {
        Ok("signal") => FaultHandling::Signal,
        _ => FaultHandling::Auto,
    };
    if let Some(cpu) = cpu {
        pin(cpu);
    }
    // Stops only.
    let mut live = Live::start(&[&arg], "measure-plain");
    let t = std::time::Instant::now();
    while live.resume() {}
    let plain = t.elapsed();
    // The invocation alone: the trivial region many times at one stop.
    {
        let live = Live::start(&["1"], "measure-one-stop");
        let (mut opts, _) = options("measure");
        opts.cpu = host_cpu;
        opts.spin = spin;
        opts.faults = faults;
        let mut host = spawn_trivial(&live, opts);
        println!("fault handling: {}", if host.uses_userfaultfd() { "userfaultfd" } else { "SIGSEGV handler" });
        let t = std::time::Instant::now();
        for _ in 0..stops {
            assert!(host.invoke(5, live.location(), &live).unwrap().is_clean());
        }
        println!(
            "trivial region {stops} times at one stop: {:.1} us per invocation",
            t.elapsed().as_secs_f64() / stops as f64 * 1e6
        );
        live.finish();
    }
    // Stops with a trivial region, and with region 1 (reads the list).
    for region in [5, 1] {
        let mut live = Live::start(&[&arg], "measure");
        let (mut opts, _) = options("measure");
        opts.cpu = host_cpu;
        opts.spin = spin;
        opts.faults = faults;
        let mut host = if region == 5 { spawn_trivial(&live, opts) } else { spawn_c(&live, &[region], opts) };
        let t = std::time::Instant::now();
        let mut n = 0u64;
        let mut in_invoke = Duration::ZERO;
        loop {
            if region == 5 || n < 200 {
                let t = std::time::Instant::now();
                assert!(host.invoke(region, live.location(), &live).unwrap().is_clean());
                in_invoke += t.elapsed();
                n += 1;
            }
            host.invalidate();
            if !live.resume() {
                break;
            }
        }
        let with = t.elapsed();
        if region == 5 {
            println!(
                "stops={stops} cpu={cpu:?}: trivial region {:.1} us per invocation; per hit (stop + invocation) {:.1} us; stops alone {:.1} us",
                in_invoke.as_secs_f64() / n as f64 * 1e6,
                with.as_secs_f64() / stops as f64 * 1e6,
                plain.as_secs_f64() / stops as f64 * 1e6,
            );
        } else {
            println!(
                "region 1 (8 arguments, walks the list; pages filled again after each stop): {:.1} us per invocation",
                in_invoke.as_secs_f64() / n as f64 * 1e6
            );
        }
    }
}

/// Region 5 (an empty function) without arguments: the bare cost of a call.
fn spawn_trivial(live: &Live, opts: HostOptions) -> DebugHost {
    let (functions, mut arguments) = descriptors(live.location(), &[5], c_entry);
    arguments.arguments.clear();
    DebugHost::spawn(&fixtures().c_module, &functions, &arguments, opts).unwrap()
}

fn pin(cpu: usize) {
    // SAFETY: plain affinity call on this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn memory_mapped_after_the_first_call_is_mirrored_on_demand(faults: FaultHandling) {
    for (pages, memory) in [(1, MemoryAccess::Direct), (16, MemoryAccess::Direct), (256, MemoryAccess::ViaReplayer)] {
        let tag = format!("late-map-{pages}-{memory:?}");
        let mut live = Live::start(&["5"], &format!("{tag}-{faults:?}"));
        let (mut opts, out) = options_in(&tag, faults);
        opts.pages_per_fill = pages;
        opts.memory = memory;
        let mut host = spawn_c(&live, &[7], opts);
        // Mappings are sent with the first call only: the 1 MiB block
        // allocated at i == 2 is found when debug code touches it.
        invoke_at_every_stop(&mut host, &mut live, 7);
        assert_eq!(live.finish(), plain_run(&["5"]));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "[debug] hit=1 i=0 big=NULL\n[debug] hit=2 i=1 big=NULL\n[debug] hit=3 i=2 big[0]=A big[mid+i]=c big[end]=A\n\
             [debug] hit=4 i=3 big[0]=A big[mid+i]=d big[end]=A\n[debug] hit=5 i=4 big[0]=A big[mid+i]=e big[end]=A\n"
        );
    }
}

/// The live program, with made-up extra mappings (to force collisions with
/// the host's own memory).
struct WithExtraMappings<'a> {
    live: &'a Live,
    extra: Vec<rdb_host::Mapping>,
}

impl rdb_tracee::Memory for WithExtraMappings<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.live.read_memory(addr, buf)
    }
}

impl rdb_tracee::Target for WithExtraMappings<'_> {
    fn tid(&self) -> rdb_tracee::Pid {
        self.live.tid()
    }
    fn regs(&self) -> &rdb_tracee::Regs {
        self.live.regs()
    }
    fn load_bias(&self) -> u64 {
        self.live.load_bias()
    }
    fn mappings(&self) -> std::io::Result<Vec<rdb_host::Mapping>> {
        let mut all = self.live.mappings()?;
        all.extend(self.extra.iter().cloned());
        all.sort_by_key(|m| m.start);
        Ok(all)
    }
}

fn fake_mapping(start: u64, end: u64) -> rdb_host::Mapping {
    rdb_host::Mapping { start, end, readable: true, writable: true, executable: false, name: "[fake]".into() }
}

#[test]
fn a_collision_at_start_up_gets_a_fresh_host() {
    let live = Live::start(&["1"], "collision-once");
    let (opts, out) = options("collision-once");
    let mut host = spawn_c(&live, &[1], opts);
    // Pretend the program has memory exactly where this host has its stack.
    let host_maps = std::fs::read_to_string(format!("/proc/{}/maps", host.host_pid().unwrap())).unwrap();
    let stack = rdb_tracee::procfs::parse_maps(&host_maps).into_iter().find(|m| m.name == "[stack]").unwrap();
    let view = WithExtraMappings { live: &live, extra: vec![fake_mapping(stack.start, stack.end)] };
    let report = host.invoke(1, live.location(), &view).unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(host.restarts(), 1);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n", expected_line(1, 1)));
    live.finish();
}

#[test]
fn a_lasting_collision_is_refused_with_an_explanation() {
    let live = Live::start(&["1"], "collision");
    let (opts, _) = options("collision");
    let mut host = spawn_c(&live, &[1], opts);
    // Where a randomised process keeps its shared libraries and (almost
    // always) its stack, below the program's own (ASLR off) libraries.
    let view = WithExtraMappings { live: &live, extra: vec![fake_mapping(0x7e00_0000_0000, 0x7fff_0000_0000)] };
    let err = host.invoke(1, live.location(), &view).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, HostError::Collision(_)), "{text}");
    assert!(text.contains("program range 0x7e0000000000-0x7fff00000000 overlaps the debug host's own 0x7"), "{text}");
    assert!(text.contains("libc") || text.contains("[stack]"), "{text}");
    assert_eq!(host.restarts(), 3);
    // Without the made-up range, the same host works.
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    live.finish();
}

/// Runs `region` at the three stops of `program 3`; it must print `line(k)`
/// at the k-th, and never need a new host.
fn region_prints_at_three_stops(region: u32, tag: &str, faults: FaultHandling, line: impl Fn(u64) -> String) {
    let mut live = Live::start(&["3"], &format!("{tag}-{faults:?}"));
    let (opts, out) = options_in(tag, faults);
    let mut host = spawn_c(&live, &[region], opts);
    invoke_at_every_stop(&mut host, &mut live, region);
    assert_eq!(live.finish(), plain_run(&["3"]));
    let expected: String = (1..=3).map(|k| line(k) + "\n").collect();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
    assert_eq!(host.restarts(), 0);
}

/// A host with the TSC disabled (as when it shares the replay's CPU) still
/// lets debug code read clocks and the TSC: a fault handler emulates them,
/// and hands the mirror's faults on (the fault-handler mode fills pages from
/// SIGSEGV too).
#[test]
fn debug_code_reads_clocks_in_a_host_with_the_tsc_disabled() {
    let mut live = Live::start(&["3"], "tsc");
    let (mut opts, out) = options_in("tsc", FaultHandling::Signal);
    opts.tsc_disabled = true;
    let mut host = spawn_c(&live, &[15], opts);
    invoke_at_every_stop(&mut host, &mut live, 15);
    assert_eq!(live.finish(), plain_run(&["3"]));
    let expected: String = (1..=3).map(|k| format!("[debug] hit={k} clocks ok=1 first={}\n", (k - 1) * 10)).collect();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
    assert_eq!(host.restarts(), 0);
}

/// The program is stopped at a breakpoint in `checkpoint`; debug code calls
/// `checkpoint` through the program's pointer and runs its original code.
fn debug_code_can_call_program_code_holding_a_breakpoint(faults: FaultHandling) {
    region_prints_at_three_stops(14, "bp-call", faults, |k| format!("[debug] hit={k} called the program's checkpoint"));
}

fn debug_code_can_run_program_code_on_program_data(faults: FaultHandling) {
    region_prints_at_three_stops(8, "exec", faults, |k| format!("[debug] program's list_len says {k}, ours says {k}"));
}

#[test]
fn a_host_for_the_artefacts_beside_a_binary() {
    let live = Live::start(&["1"], "artefacts");
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("app");
    let (mut functions, arguments) = descriptors(live.location(), &[1, 5], c_entry);
    functions.debug_module = "app.rdb.so".into();
    std::fs::copy(&fixtures().c_module, dir.path().join("app.rdb.so")).unwrap();
    let paths = rdb_descriptors::artefact_paths(&binary);
    rdb_descriptors::store(&paths.functions, &functions).unwrap();
    rdb_descriptors::store(&paths.arguments, &arguments).unwrap();
    let (opts, out) = options("artefacts");
    let mut host = DebugHost::for_binary(&binary, opts).unwrap();
    assert_eq!(host.code_locations().into_iter().collect::<Vec<_>>(), vec![(live.location(), vec![1, 5])]);
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n", expected_line(1, 1)));
    live.finish();

    std::fs::write(&paths.arguments, "{}").unwrap();
    let (opts, _) = options("artefacts2");
    let err = DebugHost::for_binary(&binary, opts).err().unwrap();
    assert!(err.to_string().contains("app.rdb-arguments.json"), "{err}");
}

/// A system call given a never-touched program page: served by userfaultfd;
/// with the fault handler alone the kernel returns EFAULT (documented).
fn system_calls_on_program_memory(faults: FaultHandling) {
    let mut live = Live::start(&["3"], &format!("syscall-{faults:?}"));
    let (opts, out) = options_in("syscall", faults);
    let mut host = spawn_c(&live, &[12], opts);
    assert_eq!(host.uses_userfaultfd(), faults == FaultHandling::Userfaultfd);
    assert!(live.resume() && live.resume()); // third stop: the block exists
    assert!(host.invoke(12, live.location(), &live).unwrap().is_clean());
    let printed = std::fs::read_to_string(&out).unwrap();
    match faults {
        FaultHandling::Userfaultfd => assert_eq!(printed, "AAAAAAAA\n[debug] write returned 8\n"),
        _ => assert_eq!(printed, "\n[debug] write returned -1 (errno 14)\n"),
    }
    live.finish();
}

#[test]
fn floating_point_arguments_come_from_xmm_registers() {
    let mut live = Live::start(&["3"], "xmm");
    let (opts, out) = options("xmm");
    let mut host = spawn_c(&live, &[13], opts);
    loop {
        let report = host.invoke(13, live.location(), &live).unwrap();
        assert!(report.is_clean(), "{report}");
        host.invalidate();
        if !live.resume() {
            break;
        }
    }
    live.finish();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "[debug] i=0 ratio=0.00\n[debug] i=1 ratio=0.50\n[debug] i=2 ratio=1.00\n"
    );
}

#[test]
fn a_host_killed_from_outside_is_reported_and_replaced() {
    let live = Live::start(&["1"], "killed");
    let (opts, out) = options("killed");
    let mut host = spawn_c(&live, &[1], opts);
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    let pid = host.host_pid().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let report = host.invoke(1, live.location(), &live).unwrap();
    assert!(matches!(report.outcome, InvokeOutcome::Crashed { signal: libc::SIGKILL, .. }), "{report}");
    assert!(report.host_restarted);
    assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
    assert_ne!(host.host_pid(), Some(pid));
    live.finish();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n{}\n", expected_line(1, 1), expected_line(1, 1)));
}

#[test]
fn a_stopped_process_view_matches_the_tests_own() {
    let mut live = Live::start(&["2"], "stopped-process");
    assert!(live.resume());
    let pid = rdb_tracee::Pid(live.pid.as_raw());
    let view = rdb_tracee::Thread::new(pid, pid).unwrap();
    use rdb_tracee::{Memory, Target};
    assert_eq!(view.load_bias(), live.bias);
    assert_eq!(view.regs().rip, live.regs.rip);
    assert_eq!(view.regs().rdi, live.regs.rdi);
    let (counter, _) = symbol(&fixtures().program, "counter");
    let mut b = [0u8; 8];
    view.read_exact(counter + live.bias, &mut b).unwrap();
    assert_eq!(u64::from_le_bytes(b), 1);
    let (opts, out) = options("stopped-process");
    let mut host = spawn_c(&live, &[1], opts);
    assert!(host.invoke(1, live.location(), &view).unwrap().is_clean());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n", expected_line(1, 2)));
    let err = view.read_exact(0x10, &mut b).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EFAULT));
    live.finish();
    let err = rdb_tracee::Thread::new(rdb_tracee::Pid(1), rdb_tracee::Pid(1)).unwrap_err().to_string();
    assert!(err.contains("is it ptrace-stopped by this thread?"), "{err}");
}

#[test]
fn busy_waiting_hosts_behave_the_same() {
    let mut live = Live::start(&["3"], "spin");
    let (mut opts, out) = options("spin");
    opts.spin = Duration::from_micros(50);
    let mut host = spawn_c(&live, &[1], opts);
    let mut k = 0;
    loop {
        k += 1;
        assert!(host.invoke(1, live.location(), &live).unwrap().is_clean());
        host.invalidate();
        if !live.resume() {
            break;
        }
    }
    assert_eq!(live.finish(), plain_run(&["3"]));
    let expected: String = (1..=k).map(|k| format!("{}\n", expected_line(k, k))).collect();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
}
