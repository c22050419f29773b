//! Debug regions over the GDB remote protocol (issue 16): `rdb attach --remote` connects to a
//! stub running the rebuilt program — gdbserver on a live run, QEMU user mode, rdb's own gdb
//! server on a replay — and runs the regions at their locations. For a deterministic program
//! and input, what it prints (region lines interleaved with the program's output, which goes to
//! the same file) is exactly what `rdb replay --debug` prints for a recording of the same run.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rdb_tests::{
    assert_success, lines_where, output, program, rdb, rdb_clang, rdb_timed, repo_root, run_cargo_rdb, run_ok, scratch,
    text, timed, SampleApp, EXIT_ERROR,
};

/// A stub rdb attaches to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Gdbserver,
    Qemu,
}

/// A running stub with its program; killed (with the program) when dropped.
struct Stub {
    child: Child,
    port: u16,
    /// The traced program's pid (gdbserver runs it as a child of its own).
    program: Option<i32>,
    stderr: PathBuf,
}

impl Stub {
    /// Starts `prog` under a stub in `dir`; the program's stdout is appended to `stdout`.
    fn start(kind: Kind, dir: &Path, prog: &[&str], stdout: &Path) -> Stub {
        let stderr = dir.join(format!("stub-{}.err", std::process::id()));
        let out = File::options().create(true).append(true).open(stdout).unwrap();
        let mut command = match kind {
            Kind::Gdbserver => {
                let mut c = Command::new("gdbserver");
                c.args(["--once", "127.0.0.1:0"]);
                c
            }
            Kind::Qemu => {
                let mut c = Command::new("qemu-x86_64");
                c.arg("-g").arg(free_port().to_string());
                c
            }
        };
        let qemu_port = command.get_args().nth(1).and_then(|p| p.to_str()?.parse().ok());
        let child = command
            .args(prog)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {kind:?} (scripts/setup.sh installs it): {e}"));
        let mut stub = Stub { child, port: 0, program: None, stderr };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match kind {
                Kind::Gdbserver => {
                    let err = std::fs::read_to_string(&stub.stderr).unwrap_or_default();
                    stub.program = err.split("; pid = ").nth(1).and_then(|r| r.lines().next()?.trim().parse().ok());
                    if let Some(p) = err.split("Listening on port ").nth(1).and_then(|r| r.lines().next()?.parse().ok())
                    {
                        stub.port = p;
                        return stub;
                    }
                }
                Kind::Qemu => {
                    let port: u16 = qemu_port.unwrap();
                    if listening(port) {
                        stub.port = port;
                        return stub;
                    }
                }
            }
            assert!(Instant::now() < deadline, "{kind:?} did not start listening: {}", stub.stderr_text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What the stub and its program wrote on stderr, without the stub's own messages.
    /// gdbserver 13 warns `ptrace(regsets_store_inferior_registers): Bad address` at every
    /// register write on hosts whose CPUs have AMX state (its XSTATE buffer is smaller than
    /// the kernel's): plain gdb writing `$rax` through it prints the same; the
    /// general-purpose registers are written all the same.
    fn program_stderr(&self) -> String {
        lines_where(&self.stderr_text(), |l| {
            !(l.starts_with("Process ")
                || l == "Warning: ptrace(regsets_store_inferior_registers): Bad address"
                || l.starts_with("Listening on port")
                || l.starts_with("Remote debugging from host")
                || l.starts_with("Child exited with status")
                || l.starts_with("Child terminated with signal")
                || l.starts_with("Killing process")
                || l.is_empty())
        })
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the stub to exit (it does once its program ended and rdb disconnected).
    fn wait(&mut self, seconds: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(pid) = self.program {
            // SAFETY: kill(2) on the program's pid, which this test started through the stub.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// A TCP port nobody listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Whether something listens on TCP `port` (`/proc/net/tcp`, state 0A), without connecting
/// (a stub takes one connection only).
fn listening(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let needle = format!(":{port:04X} ");
    table.lines().any(|l| {
        l.split_whitespace().nth(1).is_some_and(|a| format!("{a} ").ends_with(&needle))
            && l.split_whitespace().nth(3) == Some("0A")
    })
}

/// `rdb attach --remote STUB --debug BINARY EXTRA...` in `dir`, its stdout appended to `stdout`.
fn attach(dir: &Path, stub: &Stub, binary: &str, stdout: &Path, extra: &[&str]) -> Output {
    let out = File::options().create(true).append(true).open(stdout).unwrap();
    let address = stub.address();
    let mut args = vec!["attach", "--remote", &address, "--debug", binary];
    args.extend_from_slice(extra);
    output(rdb_timed(120, &args).current_dir(dir).stdout(out))
}

/// What a live run of `prog` under a stub prints with `rdb attach`: (stdout of the program and
/// the regions, rdb's stderr, the program's stderr).
fn live_run(kind: Kind, dir: &Path, prog: &[&str], binary: &str) -> (String, String, String) {
    let stdout = dir.join(format!("live-{kind:?}.out"));
    let _ = std::fs::remove_file(&stdout);
    let mut stub = Stub::start(kind, dir, prog, &stdout);
    let out = attach(dir, &stub, binary, &stdout, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "rdb attach under {kind:?} failed:\n{err}\n{}", stub.stderr_text());
    assert!(stub.wait(20), "{kind:?} did not exit after its program ended");
    (std::fs::read_to_string(&stdout).unwrap(), err, stub.program_stderr())
}

/// `rdb record` of `prog` then `rdb replay --debug BINARY`: (stdout, stderr) of the replay.
fn replayed(dir: &Path, prog: &[&str], binary: &str) -> (String, String) {
    let trace = dir.join("trace");
    let _ = std::fs::remove_dir_all(&trace);
    rdb_tests::record(dir, &trace, prog);
    let out = output(rdb(&["replay", trace.to_str().unwrap(), "--debug", binary]).current_dir(dir));
    assert_eq!(out.status.code(), Some(0), "rdb replay --debug failed:\n{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// The live run's output equals the replay's: stdout byte for byte; on stderr, the
/// program's lines (the stub's stderr) and rdb's (its report and the regions' own stderr)
/// are the replay's, where they interleave.
fn assert_same_as_replay(kind: Kind, live: &(String, String, String), replay: &(String, String)) {
    let (stdout, rdb_err, program_err) = live;
    assert_eq!(stdout, &replay.0, "{kind:?}: stdout differs from rdb replay --debug's\nrdb: {rdb_err}");
    // The replay's stderr less the program's lines, in order, is rdb's.
    let mut program = program_err.lines().peekable();
    let mut rest = String::new();
    for line in replay.1.lines() {
        if program.peek() == Some(&line) {
            program.next();
        } else {
            rest.push_str(line);
            rest.push('\n');
        }
    }
    assert_eq!(
        program.next(),
        None,
        "{kind:?}: the program's stderr is not the replay's:\n{program_err}\n---\n{}",
        replay.1
    );
    assert_eq!(rdb_err, &rest, "{kind:?}: rdb's stderr differs from the replay's");
}

/// minibc (Rust) under gdbserver and under QEMU user mode: every region hit of the recorded
/// run, with the same program state, in the same place among the program's output.
pub fn minibc_regions_under_gdbserver_and_qemu_print_what_the_replay_prints() {
    let tmp = scratch("remote-minibc");
    let app = SampleApp::plain("minibc", tmp.path());
    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let binary = "target/rdb/debug/minibc";
    let prog = [binary, "examples/loops.bc"];
    let replay = replayed(&app.dir, &prog, binary);
    assert!(replay.0.lines().filter(|l| l.starts_with('[')).count() > 100, "too few hits:\n{}", replay.0);
    for kind in [Kind::Gdbserver, Kind::Qemu] {
        assert_same_as_replay(kind, &live_run(kind, &app.dir, &prog, binary), &replay);
    }
}

/// C (rdb-clang): the minibc interpreter's regions explain its crash under gdbserver as on
/// replay; the program dies of its signal and rdb still reports every hit.
pub fn c_minibc_regions_under_gdbserver_print_what_the_replay_prints() {
    let tmp = scratch("remote-c");
    let dir = tmp.path();
    rdb_tests::copy_files(&repo_root().join("sample-apps/c/minibc/instrumented"), dir);
    run_ok("rdb-clang", timed(600, rdb_clang()).args(["-O0", "-g", "minibc.c", "-o", "minibc"]).current_dir(dir));
    let prog = ["./minibc", "for (i = 0; ; i = i + 1) { if (i > 2) break; print i }"];
    let replay = replayed(dir, &prog, "./minibc");
    assert!(replay.0.contains("BRANCH 17 stack depth 0"), "{}", replay.0);
    assert_same_as_replay(Kind::Gdbserver, &live_run(Kind::Gdbserver, dir, &prog, "./minibc"), &replay);
}

/// Builds `tests/programs/support/turns.c` with rdb-clang in `dir`.
fn build_turns(dir: &Path) {
    std::fs::copy(program("support/turns.c"), dir.join("turns.c")).unwrap();
    run_ok(
        "rdb-clang",
        timed(600, rdb_clang()).args(["-O0", "-g", "turns.c", "-o", "turns", "-lpthread"]).current_dir(dir),
    );
}

/// Threads taking turns: each hit stops another thread (the stub names it in its stop reply,
/// rdb reads that thread's registers), in the same order as on replay.
pub fn regions_stop_each_thread_in_turn_under_gdbserver_and_qemu() {
    let tmp = scratch("remote-turns");
    let dir = tmp.path();
    build_turns(dir);
    let prog = ["./turns", "5"];
    let replay = replayed(dir, &prog, "./turns");
    assert_eq!(replay.0.lines().filter(|l| l.starts_with("rdb: thread")).count(), 15, "{}", replay.0);
    for kind in [Kind::Gdbserver, Kind::Qemu] {
        assert_same_as_replay(kind, &live_run(kind, dir, &prog, "./turns"), &replay);
    }
}

/// The race sample (Rust, threads) under gdbserver: a live run interleaves as it pleases, so
/// its output is not a recording's; the region runs in the worker threads (never "never
/// reached"), every line it prints is well-formed, and the program completes.
pub fn race_region_runs_in_its_threads_under_gdbserver() {
    let tmp = scratch("remote-race");
    let app = SampleApp::plain("race", tmp.path());
    app.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&app.dir, &["build"]));
    let binary = "target/rdb/debug/race";
    // One worker: deterministic, the region runs in a thread that is not the main one.
    let prog = [binary, "1", "50"];
    let replay = replayed(&app.dir, &prog, binary);
    assert_same_as_replay(Kind::Gdbserver, &live_run(Kind::Gdbserver, &app.dir, &prog, binary), &replay);
    // Three workers racing for real.
    let (stdout, rdb_err, _) = live_run(Kind::Gdbserver, &app.dir, &[binary, "3", "200"], binary);
    assert!(!rdb_err.contains("never reached"), "{rdb_err}");
    let last = stdout.lines().last().unwrap_or("");
    assert!(last.starts_with("final count ") && last.contains("of 600"), "{stdout}");
    for l in stdout.lines().filter(|l| l.starts_with("rdb: ")) {
        assert!(l.starts_with("rdb: thread ") && l.ends_with(" lost so far"), "{l}\n{stdout}");
    }
}

/// A stub that dies while the program runs: rdb says so within seconds and exits 1; the
/// regions that ran before were printed.
pub fn a_stub_killed_mid_run_is_reported_within_seconds() {
    let tmp = scratch("remote-killed");
    let dir = tmp.path();
    build_turns(dir);
    let stdout = dir.join("live.out");
    let mut stub = Stub::start(Kind::Gdbserver, dir, &["./turns", "1000000"], &stdout);
    let out = File::options().create(true).append(true).open(&stdout).unwrap();
    let address = stub.address();
    let mut rdb = rdb_timed(120, &["attach", "--remote", &address, "--debug", "./turns"])
        .current_dir(dir)
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&stdout).unwrap_or_default().contains("rdb: thread 2 round 3") {
        assert!(Instant::now() < deadline, "no region output: {}", stub.stderr_text());
        std::thread::sleep(Duration::from_millis(10));
    }
    stub.child.kill().unwrap();
    let killed = Instant::now();
    let mut waited = 0;
    let status = loop {
        if let Some(s) = rdb.try_wait().unwrap() {
            break s;
        }
        waited += 1;
        assert!(waited < 1000, "rdb attach still runs 10 s after its stub died");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    rdb.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(EXIT_ERROR), "{err}");
    assert!(err.contains("the GDB stub closed the connection"), "{err}");
    assert!(err.contains("region calls)"), "{err}");
    assert!(killed.elapsed() < Duration::from_secs(10));
}

/// The identity check of `rdb replay --debug` applies: a binary that is not the running one
/// is refused, by the file the stub names (gdbserver) or by the loaded code (QEMU, which
/// names no file); nothing runs.
pub fn a_binary_that_is_not_the_running_one_is_refused() {
    let tmp = scratch("remote-identity");
    let dir = tmp.path();
    build_turns(dir);
    rdb_tests::copy_files(&repo_root().join("sample-apps/c/minibc/instrumented"), dir);
    run_ok("rdb-clang", timed(600, rdb_clang()).args(["-O0", "-g", "minibc.c", "-o", "minibc"]).current_dir(dir));
    for (kind, why) in
        [(Kind::Gdbserver, "is not the executable the stub runs"), (Kind::Qemu, "its loaded code differs at")]
    {
        let stdout = dir.join(format!("{kind:?}.out"));
        let stub = Stub::start(kind, dir, &["./turns"], &stdout);
        let out = attach(dir, &stub, "./minibc", &stdout, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_ERROR), "{kind:?}: {err}");
        assert!(err.contains(why), "{kind:?}: {err}");
        assert!(!std::fs::read_to_string(&stdout).unwrap_or_default().contains("rdb:"), "no region may run");
    }
}

/// rdb's own gdb server (`rdb replay TRACE --gdbserver PORT`) as the stub: the regions
/// `rdb attach --remote` runs on the replay print what `rdb replay --debug` prints, in the same
/// place among the program's replayed output (both go to the same file).
pub fn regions_run_on_rdbs_own_gdb_server() {
    let tmp = scratch("remote-rdb");
    let dir = tmp.path();
    build_turns(dir);
    let replay = replayed(dir, &["./turns", "5"], "./turns");
    let trace = dir.join("trace");
    let stdout = dir.join("rdb-server.out");
    let stderr = dir.join("rdb-server.err");
    let mut server = rdb_timed(120, &["replay", trace.to_str().unwrap(), "--gdbserver", "127.0.0.1:0"])
        .current_dir(dir)
        // Appending, as rdb attach does: both write the same file.
        .stdout(File::options().create(true).append(true).open(&stdout).unwrap())
        .stderr(File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    // It says where it listens: "rdb: waiting for gdb on 127.0.0.1:PORT: gdb ...".
    let deadline = Instant::now() + Duration::from_secs(30);
    let address = loop {
        let err = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(a) = err.split("waiting for gdb on ").nth(1).and_then(|r| r.split(": ").next()) {
            break a.to_string();
        }
        assert!(Instant::now() < deadline, "rdb replay --gdbserver did not listen: {err}");
        assert!(server.try_wait().unwrap().is_none(), "rdb replay --gdbserver exited: {err}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = output(
        rdb_timed(120, &["attach", "--remote", &address, "--debug", "./turns"])
            .current_dir(dir)
            .stdout(File::options().append(true).open(&stdout).unwrap()),
    );
    let status = server.wait().unwrap();
    let server_err = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "rdb attach:\n{}\nserver:\n{server_err}", text(&out.stderr));
    assert_eq!(status.code(), Some(0), "rdb replay --gdbserver: {server_err}");
    let live = std::fs::read_to_string(&stdout).unwrap();
    assert_eq!(live.lines().filter(|l| l.starts_with("rdb: thread")).count(), 15, "{live}");
    assert_eq!(live, replay.0, "stdout differs from rdb replay --debug's");
}

/// rr's replay server, where rr can record: regions on an rr replay print what they print on
/// rdb's. On machines without usable performance counters rr refuses to record, and the test
/// is skipped with rr's own message.
pub fn regions_run_on_an_rr_replay() -> Result<(), String> {
    let tmp = scratch("remote-rr");
    let dir = tmp.path();
    build_turns(dir);
    let rr_trace = dir.join("rr-trace");
    let rec = output(timed(120, "rr").args(["record", "-o"]).arg(&rr_trace).arg("./turns").current_dir(dir));
    if !rec.status.success() {
        let why = text(&rec.stderr).lines().find(|l| !l.trim().is_empty()).unwrap_or("no message").to_string();
        return Err(format!("rr cannot record on this machine: {why}"));
    }
    let replay = replayed(dir, &["./turns"], "./turns");
    let port = free_port();
    let stdout = dir.join("rr.out");
    let mut server = Command::new("rr")
        .args(["replay", "-s", &port.to_string()])
        .arg(&rr_trace)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !listening(port) {
        assert!(Instant::now() < deadline, "rr replay -s did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let address = format!("127.0.0.1:{port}");
    let out = output(
        rdb_timed(120, &["attach", "--remote", &address, "--debug", "./turns"])
            .current_dir(dir)
            .stdout(File::options().append(true).open(&stdout).unwrap()),
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let regions = |s: &str| lines_where(s, |l| l.starts_with("rdb: "));
    assert_eq!(regions(&std::fs::read_to_string(&stdout).unwrap()), regions(&replay.0));
    Ok(())
}
