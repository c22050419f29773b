//! `cpuid` trapping (CPUID faulting): where the host offers it, every `cpuid` of the program —
//! in a forked child and after an exec too — is trapped, recorded and served back by replay;
//! `--no-cpuid-trap` lets them run natively. (`programs::cpuid_leaves` checks the output on
//! every host; `rdb-runtime/tests/cpuid.rs` checks damaged `Cpuid` events.)

use std::path::Path;

use rdb_tests::{clang, describe, output, program, rdb, record, replay, scratch, text};

/// Whether this host offers CPUID faulting: `arch_prctl(ARCH_SET_CPUID, 0)` in a thread of its
/// own (the setting is per thread), turned off again before the thread ends.
fn cpuid_faulting() -> bool {
    const ARCH_SET_CPUID: libc::c_ulong = 0x1012;
    std::thread::spawn(|| {
        // SAFETY: integer arguments only.
        let on = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_CPUID, 0 as libc::c_ulong) } == 0;
        if on {
            // SAFETY: integer arguments only.
            unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_CPUID, 1 as libc::c_ulong) };
        }
        on
    })
    .join()
    .unwrap_or(false)
}

/// `rdb info` and `rdb info --events` of a trace.
fn info(trace: &Path) -> (String, String) {
    let t = trace.to_str().unwrap();
    (text(&output(&mut rdb(&["info", t])).stdout), text(&output(&mut rdb(&["info", "--events", t])).stdout))
}

/// The event lines of `tid` (`#INDEX TID DESCRIPTION`).
fn events_of<'a>(events: &'a str, tid: &str) -> Vec<&'a str> {
    events.lines().filter(|l| l.starts_with('#') && l.split_whitespace().nth(1) == Some(tid)).collect()
}

pub fn cpuid_is_trapped_where_the_host_offers_it() -> Result<(), String> {
    let dir = scratch("cpuid");
    let exe = clang(&program("cpuid_leaves.c"), &dir.path().join("cpuid_leaves"), &["-O1", "-g"], &[]);
    let exe = exe.to_str().unwrap();
    let trapped = dir.path().join("trapped");
    let rec = record(dir.path(), &trapped, &[exe, "2"]);
    let (summary, events) = info(&trapped);
    if !cpuid_faulting() {
        assert!(summary.contains("cpuid:      not trapped"), "{summary}");
        return Err(
            "this host has no CPUID faulting (arch_prctl(ARCH_SET_CPUID, 0) fails): cpuid cannot be trapped".into()
        );
    }
    assert!(summary.contains("cpuid:      trapped (CPUID faulting): "), "{summary}");
    let rep = replay(dir.path(), &trapped);
    assert_eq!(rep.status.code(), Some(0), "replay failed:\n{}", describe(&rep));
    assert_eq!(rep.stdout, rec.stdout, "replayed stdout differs");
    assert_eq!(text(&rec.stdout).lines().count(), 9, "{}", text(&rec.stdout));
    // As on a host without CPUID faulting: cpuid runs natively, replay says so (and that this
    // CPU gives the recorded results).
    let t = trapped.to_str().unwrap();
    let native = output(rdb(&["replay", t]).current_dir(dir.path()).env("RDB_CPUID_FAULTING", "0"));
    assert_eq!(native.status.code(), Some(0), "native replay failed:\n{}", describe(&native));
    assert_eq!(native.stdout, rec.stdout, "natively replayed stdout differs");
    assert!(
        text(&native.stderr).contains("run natively here; this CPU gives the results of all"),
        "{}",
        describe(&native)
    );

    // The program's own leaf 7 in the parent, in its forked child (inherited), and after the
    // parent's exec (armed again: the kernel clears it at execve).
    let first = events.lines().find(|l| l.starts_with('#')).expect("events");
    let parent = first.split_whitespace().nth(1).expect("thread id");
    let child = events
        .lines()
        .find_map(|l| l.split_once("new process ").map(|(_, rest)| rest.split_whitespace().next().unwrap()))
        .expect("the fork is listed");
    let leaf7 = |lines: &[&str]| lines.iter().filter(|l| l.contains("cpuid leaf 0x7 subleaf 0x0 = ")).count();
    assert!(leaf7(&events_of(&events, child)) >= 1, "child {child}:\n{events}");
    let parent_events = events_of(&events, parent);
    let last_exec = parent_events.iter().rposition(|l| l.contains(" exec /")).expect("the parent's exec");
    assert!(last_exec > 0, "{events}");
    assert!(leaf7(&parent_events[last_exec..]) >= 1, "after the exec:\n{events}");

    // Turned off: nothing trapped, and the replay (native cpuid, same machine) is identical.
    let native = dir.path().join("native");
    let args = ["record", "--no-cpuid-trap", "-o", native.to_str().unwrap(), "--", exe, "2"];
    let rec = output(rdb(&args).current_dir(dir.path()));
    assert!(text(&rec.stderr).contains("rdb: recorded"), "{}", describe(&rec));
    let (summary, events) = info(&native);
    assert!(summary.contains("cpuid:      not trapped"), "{summary}");
    assert!(!events.contains("cpuid leaf"), "{events}");
    let rep = replay(dir.path(), &native);
    assert_eq!(rep.stdout, rec.stdout, "replay of the untrapped trace:\n{}", describe(&rep));
    Ok(())
}
