//! Damaged `Cpuid` events: a trace whose trapped `cpuid` results were tampered with is refused
//! (as corrupt, or as a divergence naming the event), never replayed as if nothing happened.
//! The traces are real recordings of `tests/programs/cpuid_leaves.c` rewritten event by event
//! with the trace codec, so every checksum and digest is valid and only the meaning is wrong.

mod common;

use std::path::{Path, PathBuf};

use rdb_runtime::trace::{Event, Header, Trace, TraceError, TraceWriter};
use rdb_runtime::{record, replay, Error};

/// The recorder waits for any child of this process: tests that record run one at a time, so
/// that it never collects the compiler another test is waiting for.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Builds the test program into `dir`.
fn program(dir: &Path) -> PathBuf {
    let source = rdb_tests::repo_root().join("tests/programs/cpuid_leaves.c");
    rdb_tests::clang(&source, &dir.join("cpuid_leaves"), &["-O1", "-g"], &[])
}

/// Records the program (no fork or exec: argument 0) with or without trapping.
fn recording(dir: &Path, trap_cpuid: bool) -> (Header, Vec<Event>) {
    recording_with(dir, trap_cpuid, "0")
}

/// Records the program with argument `rounds` (2: a fork, and an exec of itself).
fn recording_with(dir: &Path, trap_cpuid: bool, rounds: &str) -> (Header, Vec<Event>) {
    let exe = program(dir);
    let trace = dir.join(format!("trace-{trap_cpuid}-{rounds}"));
    let opts = rdb_runtime::RecordOptions { trap_cpuid, ..common::record_options(&trace, exe, &[rounds.into()]) };
    assert_eq!(record(&opts).unwrap().exit_status, 0);
    let t = Trace::open(&trace).unwrap();
    (t.header().clone(), t.events().unwrap().collect::<Result<_, _>>().unwrap())
}

/// A finished trace of `events` under `header` (kept files are not needed: replay checks
/// the originals in place).
fn write(dir: &Path, name: &str, header: &Header, events: &[Event]) -> PathBuf {
    let path = dir.join(name);
    let mut w = TraceWriter::create(&path, header, &Default::default()).unwrap();
    for e in events {
        w.push(e).unwrap();
    }
    w.finish(Default::default()).unwrap();
    path
}

#[test]
fn a_cpuid_event_in_a_trace_recorded_without_trapping_is_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (header, mut events) = recording(tmp.path(), false);
    assert!(!header.cpuid_trapped);
    assert!(!events.iter().any(|e| matches!(e, Event::Cpuid { .. })), "--no-cpuid-trap recorded cpuid events");
    let exec = events.iter().position(|e| matches!(e, Event::Exec { .. })).unwrap();
    let tid = events[exec].tid();
    events.insert(exec + 1, Event::Cpuid { tid, leaf: 0, subleaf: 0, result: [0x24, 1, 2, 3] });
    let trace = write(tmp.path(), "inserted", &header, &events);
    match Trace::open(&trace) {
        Err(TraceError::Corrupt { why, .. }) => {
            assert!(why.contains("cpuid event, but the header says cpuid was not trapped"), "{why}")
        }
        other => panic!("a cpuid event in an untrapped trace: {:?}", other.map(|t| t.state())),
    }
}

#[test]
fn a_changed_or_missing_cpuid_event_is_a_divergence_naming_it() {
    if !rdb_runtime::cpuid::available() {
        eprintln!(
            "skipped: this host has no CPUID faulting (arch_prctl(ARCH_SET_CPUID, 0) fails), so nothing is trapped"
        );
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (header, events) = recording(tmp.path(), true);
    assert!(header.cpuid_trapped);
    // The program's own leaf 7 (glibc asks for it at start-up too: take the last one).
    let at = events
        .iter()
        .rposition(|e| matches!(e, Event::Cpuid { leaf: 7, subleaf: 0, .. }))
        .expect("the program's cpuid leaf 7 was trapped");
    let good = write(tmp.path(), "good", &header, &events);
    let opts = |trace: PathBuf| rdb_runtime::ReplayOptions { trace_dir: trace, pin_cpu: false, echo_output: false };
    replay(&opts(good.clone()), &mut rdb_runtime::NoObserver).expect("the rewritten, unchanged trace replays");

    let mut changed = events.clone();
    if let Event::Cpuid { leaf, .. } = &mut changed[at] {
        *leaf = 0x77;
    }
    let trace = write(tmp.path(), "changed", &header, &changed);
    match replay(&opts(trace), &mut rdb_runtime::NoObserver) {
        Err(Error::Divergence(d)) => {
            assert_eq!(d.index, at as u64);
            assert!(d.expected.starts_with("cpuid leaf 0x77 subleaf 0x0 = "), "{d:?}");
            assert_eq!(d.actual, "cpuid leaf 0x7 subleaf 0x0");
        }
        other => panic!("a cpuid event with another leaf: {:?}", other.map(|o| o.events)),
    }

    let mut missing = events.clone();
    missing.remove(at);
    let trace = write(tmp.path(), "missing", &header, &missing);
    match replay(&opts(trace), &mut rdb_runtime::NoObserver) {
        Err(Error::Divergence(d)) => {
            assert_eq!(d.index, at as u64);
            assert_eq!(d.actual, "cpuid leaf 0x7 subleaf 0x0");
            assert_eq!(d.expected, missing[at].describe());
        }
        other => panic!("a cpuid where the trace has none: {:?}", other.map(|o| o.events)),
    }

    // Replayed where cpuid runs natively: the unchanged trace matches this CPU, a changed
    // result is named.
    let plan = rdb_runtime::cpuid::plan_replay_where(&Trace::open(&good).unwrap(), false).unwrap();
    assert!(!plan.trap);
    let warning = plan.warning.unwrap();
    assert!(warning.contains("cpuid instructions run natively here; this CPU gives the results of all"), "{warning}");
    let mut other = events.clone();
    if let Event::Cpuid { result, .. } = &mut other[at] {
        result[1] ^= 1 << 5; // AVX2
    }
    let trace = write(tmp.path(), "other-cpu", &header, &other);
    let plan = rdb_runtime::cpuid::plan_replay_where(&Trace::open(&trace).unwrap(), false).unwrap();
    let warning = plan.warning.unwrap();
    assert!(
        warning
            .contains("gives other results than recorded for 1 leaves:\n  cpuid leaf 0x7 subleaf 0x0: recorded eax="),
        "{warning}"
    );
    assert!(warning.contains("the replay may diverge"), "{warning}");
    let plan = rdb_runtime::cpuid::plan_replay_where(&Trace::open(&trace).unwrap(), true).unwrap();
    assert_eq!(plan, rdb_runtime::cpuid::ReplayPlan { trap: true, warning: None });
}

/// Past the trace's last `Cpuid` event the replayer turns CPUID faulting off in each thread (at
/// its next syscall exit: a trapping thread costs a register write at every switch), never
/// before: the last `cpuid`, run after a fork, waits, writes and an exec, is still served
/// from the trace (a changed leaf there is a divergence naming it), and the unchanged trace
/// replays to its end with faulting turned off for the exec'ed image's last system calls.
#[test]
fn cpuid_faulting_stays_on_up_to_the_traces_last_cpuid_event() {
    if !rdb_runtime::cpuid::available() {
        eprintln!(
            "skipped: this host has no CPUID faulting (arch_prctl(ARCH_SET_CPUID, 0) fails), so nothing is trapped"
        );
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (header, events) = recording_with(tmp.path(), true, "2");
    let last = events.iter().rposition(|e| matches!(e, Event::Cpuid { .. })).expect("cpuid events");
    let syscalls_before = events[..last].iter().filter(|e| matches!(e, Event::Syscall { .. })).count();
    let syscalls_after = events[last..].iter().filter(|e| matches!(e, Event::Syscall { .. })).count();
    assert!(syscalls_before > 10 && syscalls_after > 0, "{syscalls_before} / {syscalls_after} syscalls");
    let good = write(tmp.path(), "good", &header, &events);

    // The scan finds the index after the last one.
    let done = rdb_runtime::cpuid::scan_last(Trace::open(&good).unwrap().events().unwrap());
    let started = std::time::Instant::now();
    while done.load(std::sync::atomic::Ordering::Acquire) == u64::MAX {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the scan never ended");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(done.load(std::sync::atomic::Ordering::Acquire), last as u64 + 1);

    let opts = |trace: PathBuf| rdb_runtime::ReplayOptions { trace_dir: trace, pin_cpu: false, echo_output: false };
    let run = replay(&opts(good), &mut rdb_runtime::NoObserver).expect("the rewritten, unchanged trace replays");
    assert_eq!(run.exit_status, Some(0));

    let mut changed = events.clone();
    let Event::Cpuid { leaf, .. } = &mut changed[last] else { unreachable!() };
    let asked = *leaf;
    *leaf = 0x77;
    let trace = write(tmp.path(), "changed", &header, &changed);
    match replay(&opts(trace), &mut rdb_runtime::NoObserver) {
        Err(Error::Divergence(d)) => {
            assert_eq!(d.index, last as u64);
            assert_eq!(d.actual, format!("cpuid leaf {asked:#x} subleaf 0x0"));
        }
        other => panic!("the last cpuid with another leaf: {:?}", other.map(|o| o.events)),
    }
}
