//! End-to-end tests of `rdb record` / `rdb replay` on unmodified programs of this machine.
//!
//! Each case records a program, replays the trace and compares the replayed output with the
//! recorded one byte for byte; for non-deterministic programs a second recording must differ
//! (so the test shows the replay reproduced *that* run, not just the program). Every command
//! runs under `timeout`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Exit codes of `rdb replay` (see rdb-cli/src/main.rs).
const EXIT_ERROR: i32 = 1;
const EXIT_ENDS_EARLY: i32 = 4;

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

/// The `rdb` binary of this workspace (built on demand when missing).
fn rdb() -> PathBuf {
    let p = target_dir().join("rdb");
    if !p.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo).args(["build", "-p", "rdb-cli", "--bin", "rdb"]).status().expect("cargo runs");
        assert!(st.success(), "building rdb failed");
    }
    assert!(p.exists(), "{} missing: run `cargo build -p rdb-cli`", p.display());
    p
}

/// A fresh scratch directory.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "rdb-e2e-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        name
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("command runs")
}

fn rdb_cmd(args: &[&str]) -> Command {
    let mut c = Command::new("timeout");
    c.arg("120").arg(rdb()).args(args);
    c
}

fn record(trace: &Path, prog: &[&str]) -> Output {
    let mut c = rdb_cmd(&["record", "-o", trace.to_str().unwrap(), "--"]);
    c.args(prog).stdin(Stdio::null());
    run(&mut c)
}

fn replay(trace: &Path) -> Output {
    let mut c = rdb_cmd(&["replay", trace.to_str().unwrap()]);
    c.stdin(Stdio::null());
    run(&mut c)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Record, replay, compare. Returns the recorded stdout.
fn round_trip(name: &str, prog: &[&str]) -> Vec<u8> {
    let dir = scratch(name);
    let trace = dir.join("trace");
    let rec = record(&trace, prog);
    assert!(rec.status.code().is_some(), "{name}: recorder killed: {}", text(&rec.stderr));
    assert!(text(&rec.stderr).contains("rdb: recorded"), "{name}: recording failed: {}", text(&rec.stderr));
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(0), "{name}: replay failed: {}", text(&rep.stderr));
    assert_eq!(text(&rep.stdout), text(&rec.stdout), "{name}: replayed stdout differs");
    assert_eq!(rep.stdout, rec.stdout, "{name}: replayed stdout differs (bytes)");
    let _ = std::fs::remove_dir_all(&dir);
    rec.stdout
}

/// Like [`round_trip`], and a second recording gives different output.
fn round_trip_nondeterministic(name: &str, prog: &[&str]) {
    let first = round_trip(name, prog);
    let second = round_trip(name, prog);
    assert_ne!(first, second, "{name}: two runs gave the same output; the case proves nothing");
}

fn sh(script: &str) -> Vec<&str> {
    vec!["/bin/sh", "-c", script]
}

#[test]
fn deterministic_corpus_replays_identically() {
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("echo", vec!["echo", "hello", "world"]),
        ("ls", vec!["ls", "-la", "/etc"]),
        ("sort", sh("sort -r /etc/passwd")),
        ("gzip", vec!["gzip", "-9", "-c", "/etc/services"]),
        ("cat", vec!["cat", "/etc/os-release"]),
        ("sha256sum", vec!["sha256sum", "/etc/services"]),
        ("wc", vec!["wc", "-l", "/etc/services"]),
        ("find", vec!["find", "/etc", "-maxdepth", "1", "-name", "*.conf"]),
        ("uname", vec!["uname", "-a"]),
        ("pipeline", sh("cat /etc/services | tr a-z A-Z | grep -c TCP; echo done | tr d D")),
        ("tar", sh("tar cf - /etc/hostname /etc/os-release 2>/dev/null | tar tvf -")),
        ("git", vec!["git", "--version"]),
        ("git-hash", vec!["git", "hash-object", "/etc/services"]),
        ("perl", vec!["perl", "-e", "print join(',', map { $_ * 2 } 1..10), qq(\n)"]),
        (
            "python-subprocess",
            vec![
                "/usr/bin/python3",
                "-c",
                "import subprocess; print(subprocess.run(['echo','child'],capture_output=True).stdout)",
            ],
        ),
        ("env", vec!["env"]),
    ];
    for (name, prog) in &cases {
        round_trip(name, prog);
    }
}

#[test]
fn nondeterministic_corpus_replays_the_recorded_run() {
    round_trip_nondeterministic("date", &["date", "+%s.%N"]);
    round_trip_nondeterministic(
        "python-random",
        &["/usr/bin/python3", "-c", "import random, time, os; print(random.random(), time.time(), os.getpid())"],
    );
    round_trip_nondeterministic("perl-rand", &["perl", "-e", "print rand(), qq( ), $$, qq(\n)"]);
    round_trip_nondeterministic("urandom", &sh("head -c 16 /dev/urandom | od -An -tx1"));
    round_trip_nondeterministic(
        "sqlite3",
        &["sqlite3", ":memory:", "create table t(x); insert into t values(random()); select x from t;"],
    );
    round_trip_nondeterministic("awk-srand", &sh("awk 'BEGIN { srand(); print srand(), rand() }'; date +%N"));
}

const C_PROGRAM: &str = r#"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>
static volatile int got;
static void on_signal(int s) { (void)s; got++; }
int main(void) {
    unsigned aux;
    unsigned long long a = __rdtsc(), b = __rdtscp(&aux);
    printf("tsc %llu %llu\n", a, b);
    signal(SIGALRM, on_signal);
    signal(SIGUSR1, on_signal);
    signal(SIGCHLD, on_signal);
    alarm(1);
    pause();
    printf("after alarm: %d\n", got);
    kill(getpid(), SIGUSR1);
    printf("after kill: %d\n", got);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) { printf("child\n"); fflush(stdout); _exit(7); }
    int st;
    while (waitpid(c, &st, 0) < 0) {}
    printf("child exit %d, signals %d\n", WEXITSTATUS(st), got > 2);
    return 3;
}
"#;

fn compile_c(dir: &Path, name: &str, src: &str, extra: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(name);
    let out = run(Command::new("clang-14").args(["-O1", "-g"]).arg(&c).arg("-o").arg(&exe).args(extra));
    assert!(out.status.success(), "clang-14 failed: {}", text(&out.stderr));
    exe
}

#[test]
fn c_program_with_rdtsc_signals_and_fork_replays() {
    let dir = scratch("c-signals");
    let exe = compile_c(&dir, "sig", C_PROGRAM, &[]);
    let trace = dir.join("trace");
    let rec = record(&trace, &[exe.to_str().unwrap()]);
    assert_eq!(rec.status.code(), Some(3), "exit status passes through: {}", text(&rec.stderr));
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(text(&rep.stdout), text(&rec.stdout));
    assert!(text(&rec.stdout).contains("child exit 7, signals 1"), "{}", text(&rec.stdout));
    let again = record(&dir.join("trace2"), &[exe.to_str().unwrap()]);
    assert_ne!(again.stdout, rec.stdout, "rdtsc values differ between runs");
}

#[test]
fn killed_by_signal_gives_128_plus_signal() {
    let dir = scratch("sigkill");
    let rec = record(&dir.join("t"), &sh("kill -TERM $$"));
    assert_eq!(rec.status.code(), Some(128 + 15), "{}", text(&rec.stderr));
    let rep = replay(&dir.join("t"));
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
}

#[test]
fn a_pthread_program_round_trips() {
    // Threads have their own suite (threads.rs); this one keeps the smallest case next to the
    // single-threaded ones.
    let dir = scratch("threads");
    let src = "#include <pthread.h>\n#include <stdio.h>\nstatic void *f(void *a) { puts(\"in thread\"); return a; }\nint main(void) { pthread_t t; pthread_create(&t, 0, f, 0); pthread_join(t, 0); puts(\"joined\"); return 0; }\n";
    let exe = compile_c(&dir, "thr", src, &["-lpthread"]);
    let trace = dir.join("t");
    let rec = record(&trace, &[exe.to_str().unwrap()]);
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    assert_eq!(text(&rec.stdout), "in thread\njoined\n");
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(rep.stdout, rec.stdout);
}

#[test]
fn replay_works_from_another_place_and_environment() {
    let dir = scratch("moved");
    let trace = dir.join("trace");
    let rec = record(&trace, &sh("pwd; env | sort; ls"));
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    let moved = dir.join("elsewhere");
    std::fs::rename(&trace, &moved).unwrap();
    let rep = run(Command::new("timeout")
        .arg("120")
        .arg(rdb())
        .arg("replay")
        .arg(&moved)
        .current_dir("/")
        .env_clear()
        .env("UNRELATED", "x".repeat(300))
        .stdin(Stdio::null()));
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(text(&rep.stdout), text(&rec.stdout));
}

#[test]
fn corrupt_and_foreign_traces_are_refused() {
    let dir = scratch("corrupt");
    let trace = dir.join("trace");
    assert_eq!(record(&trace, &["ls", "/etc"]).status.code(), Some(0));
    let events = trace.join("events");
    let mut data = std::fs::read(&events).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x55;
    std::fs::write(&events, data).unwrap();
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR), "{}", text(&rep.stderr));
    assert!(text(&rep.stderr).contains("corrupt"), "{}", text(&rep.stderr));
    assert!(rep.stdout.is_empty(), "nothing replayed from a corrupt trace");

    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("events"), b"hello").unwrap();
    let rep = replay(&foreign);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR));
    assert!(text(&rep.stderr).contains("not an rdb trace directory"), "{}", text(&rep.stderr));
    let info = run(&mut rdb_cmd(&["info", foreign.to_str().unwrap()]));
    assert_eq!(info.status.code(), Some(EXIT_ERROR));
}

#[test]
fn changed_binary_is_refused_by_name() {
    let dir = scratch("changed");
    let exe = compile_c(&dir, "hello", "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n", &[]);
    let trace = dir.join("trace");
    assert_eq!(record(&trace, &[exe.to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(replay(&trace).status.code(), Some(0));
    let mut bytes = std::fs::read(&exe).unwrap();
    bytes.push(0);
    std::fs::write(&exe, bytes).unwrap();
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR));
    let err = text(&rep.stderr);
    assert!(err.contains(exe.to_str().unwrap()) && err.contains("changed"), "{err}");
}

#[test]
fn killed_recorder_leaves_a_trace_that_replays_to_its_end() {
    let dir = scratch("killed");
    let trace = dir.join("trace");
    let script = "import time\nfor i in range(100000):\n    print(i, flush=True)\n    time.sleep(0.002)\n";
    let mut child = Command::new(rdb())
        .args(["record", "-o", trace.to_str().unwrap(), "--", "/usr/bin/python3", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the program has visibly run for a while, then kill the recorder.
    use std::io::{BufRead, BufReader};
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        seen.push(l.unwrap());
        if seen.len() == 1500 {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(lines);
    let info = run(&mut rdb_cmd(&["info", trace.to_str().unwrap()]));
    assert_eq!(info.status.code(), Some(0), "{}", text(&info.stderr));
    assert!(text(&info.stdout).contains("incomplete"), "{}", text(&info.stdout));
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(EXIT_ENDS_EARLY), "{}", text(&rep.stderr));
    assert!(text(&rep.stderr).contains("ends early"), "{}", text(&rep.stderr));
    let out = text(&rep.stdout);
    let replayed: Vec<&str> = out.lines().collect();
    assert!(!replayed.is_empty(), "some output replayed");
    for (i, l) in replayed.iter().enumerate() {
        assert_eq!(*l, i.to_string(), "replayed output is the recorded prefix");
    }
}

#[test]
fn info_describes_a_trace() {
    let dir = scratch("info");
    let trace = dir.join("trace");
    assert_eq!(record(&trace, &sh("echo a | cat")).status.code(), Some(0));
    let info = run(&mut rdb_cmd(&["info", trace.to_str().unwrap()]));
    let out = text(&info.stdout);
    assert!(out.contains("program:    /usr/bin/dash") || out.contains("program:    /bin/"), "{out}");
    assert!(out.contains("processes:  3"), "{out}");
    assert!(out.contains("status:     exit 0"), "{out}");
    let listed = text(&run(&mut rdb_cmd(&["info", "--events", trace.to_str().unwrap()])).stdout);
    assert!(listed.contains("new process") && listed.contains("exec /") && listed.contains("write(0x1,"), "{listed}");
}

#[test]
fn default_trace_dir_and_latest_link() {
    let base = scratch("base");
    let rec = run(rdb_cmd(&["record", "--", "echo", "x"]).env("RDB_TRACE_DIR", &base).stdin(Stdio::null()));
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    assert!(base.join("echo-0").join("rdb-trace.json").exists());
    assert!(text(&rec.stderr).contains(base.join("echo-0").to_str().unwrap()));
    let rep = run(rdb_cmd(&["replay"]).env("RDB_TRACE_DIR", &base).stdin(Stdio::null()));
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(rep.stdout, b"x\n");
}

#[test]
fn recorded_stdin_is_not_needed_for_replay() {
    let dir = scratch("stdin");
    let trace = dir.join("trace");
    let input = std::fs::File::open("/etc/services").unwrap();
    let rec = run(rdb_cmd(&["record", "-o", trace.to_str().unwrap(), "--", "sort"]).stdin(input));
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    assert!(rec.stdout.len() > 1000);
    let rep = replay(&trace); // stdin is /dev/null here
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(rep.stdout, rec.stdout);
}

#[test]
fn unsupported_syscall_fails_naming_it() {
    let dir = scratch("unsupported");
    let src = "#include <unistd.h>\n#include <sys/syscall.h>\nint main(void) { syscall(425, 1, 0); return 0; }\n";
    let exe = compile_c(&dir, "uring", src, &[]);
    let rec = record(&dir.join("t"), &[exe.to_str().unwrap()]);
    assert_eq!(rec.status.code(), Some(EXIT_ERROR));
    assert!(text(&rec.stderr).contains("unsupported syscall `io_uring_setup` (number 425)"), "{}", text(&rec.stderr));
}

#[test]
fn scripts_and_relative_execs_replay_from_elsewhere() {
    let dir = scratch("script");
    let script = dir.join("s.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"script $0 $*\"\ndate +%N\n").unwrap();
    run(Command::new("chmod").arg("+x").arg(&script));
    let trace = dir.join("trace");
    let inner = format!("cd {} && ./s.sh x && {} y", dir.display(), script.display());
    let mut c = rdb_cmd(&["record", "-o", trace.to_str().unwrap(), "--", "./s.sh", "a"]);
    let rec = run(c.current_dir(&dir).stdin(Stdio::null()));
    assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
    assert!(text(&rec.stdout).starts_with("script ./s.sh a\n"), "{}", text(&rec.stdout));
    let rep = run(rdb_cmd(&["replay", trace.to_str().unwrap()]).current_dir("/").stdin(Stdio::null()));
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(rep.stdout, rec.stdout);
    round_trip("relative-exec", &sh(&inner));
}

#[test]
fn asynchronous_signals_replay_at_the_recorded_points() {
    // SIGPIPE in a pipeline, SIGCHLD into sigsuspend (dash, bash), SIGALRM in timeout,
    // a trap handler in the shell itself.
    round_trip("sigpipe", &sh("yes | head -n 3"));
    round_trip("sigchld-dash", &sh("sleep 0.2 & sleep 0.1; kill -INT $!; wait; echo $?"));
    round_trip("sigchld-bash", &["bash", "-c", "sleep 0.1 & wait; echo $?; (exit 3); echo $?"]);
    round_trip("trap", &sh("trap 'echo got' USR1; kill -USR1 $$; echo after"));
    let dir = scratch("ppoll");
    let src = "#define _GNU_SOURCE\n#include <poll.h>\n#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n#include <errno.h>\n\
static volatile int got;\nstatic void h(int s) { (void)s; got++; }\n\
int main(void) { sigset_t b, e, now; sigemptyset(&b); sigaddset(&b, SIGALRM); sigemptyset(&e);\n\
  sigprocmask(SIG_BLOCK, &b, 0); signal(SIGALRM, h); alarm(1);\n\
  int r = ppoll(0, 0, 0, &e); printf(\"ppoll %d errno %d got %d\\n\", r, errno, got);\n\
  sigprocmask(SIG_BLOCK, 0, &now); printf(\"blocked again: %d\\n\", sigismember(&now, SIGALRM)); return 0; }\n";
    let exe = compile_c(&dir, "ppoll", src, &[]);
    let out = round_trip("ppoll-mask", &[exe.to_str().unwrap()]);
    assert_eq!(text(&out), "ppoll -1 errno 4 got 1\nblocked again: 1\n");
    let dir = scratch("timeout");
    let rec = record(&dir.join("t"), &["timeout", "0.3", "sleep", "5"]);
    assert_eq!(rec.status.code(), Some(124), "{}", text(&rec.stderr));
    let rep = replay(&dir.join("t"));
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
}

#[test]
fn changed_shared_library_is_refused_by_name() {
    let dir = scratch("changed-lib");
    let lib = dir.join("libfoo.so");
    let build_lib = |value: i32| {
        let src = dir.join("foo.c");
        std::fs::write(&src, format!("int foo(void) {{ return {value}; }}\n")).unwrap();
        let out = run(Command::new("clang-14").args(["-shared", "-fPIC"]).arg(&src).arg("-o").arg(&lib));
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    build_lib(42);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    let exe = compile_c(
        &dir,
        "usefoo",
        "#include <stdio.h>\nint foo(void);\nint main(void) { printf(\"%d\\n\", foo()); return 0; }\n",
        &[&libdir, "-lfoo", &rpath],
    );
    let trace = dir.join("trace");
    // Without kept files, replay needs the originals (with them, a rebuild changes nothing:
    // tests/tests/kept_files.rs).
    let rec =
        run(rdb_cmd(&["record", "--keep-files", "off", "-o", trace.to_str().unwrap(), "--", exe.to_str().unwrap()])
            .stdin(Stdio::null()));
    assert_eq!(rec.stdout, b"42\n", "{}", text(&rec.stderr));
    assert_eq!(replay(&trace).stdout, b"42\n");
    build_lib(43);
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR));
    let err = text(&rep.stderr);
    assert!(err.contains(lib.to_str().unwrap()) && err.contains("changed since it was recorded"), "{err}");
}

#[test]
fn git_commit_replays_after_the_repository_changed() {
    // git maps its own config and rewrites it while running: the mapped bytes are kept in
    // the trace, so replay does not need the repository as it was.
    let mut outputs = Vec::new();
    for round in 0..2 {
        let dir = scratch(&format!("git-{round}"));
        let repo = dir.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let script = format!(
            "cd {} && git init -q && echo hi > f && git add f && git -c user.name=a -c user.email=b commit -qm m && git log --format=%H%n%s%n%ad",
            repo.display()
        );
        let trace = dir.join("trace");
        let rec = record(&trace, &sh(&script));
        assert_eq!(rec.status.code(), Some(0), "{}", text(&rec.stderr));
        std::fs::remove_dir_all(&repo).unwrap();
        let rep = replay(&trace);
        assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
        assert_eq!(text(&rep.stdout), text(&rec.stdout));
        outputs.push(rec.stdout);
        std::thread::sleep(std::time::Duration::from_millis(1100)); // commit dates have 1 s resolution
    }
    assert_ne!(outputs[0], outputs[1], "two commits at different times have different hashes");
}

const RUST_PROGRAM: &str = r#"
use std::collections::HashMap;
fn main() {
    let m: HashMap<u32, u32> = (0..8).map(|i| (i, i * 2)).collect(); // random SipHash keys
    println!("{:?} {:?}", m.iter().collect::<Vec<_>>(), std::time::SystemTime::now());
    let out = std::process::Command::new("echo").arg("child").output().unwrap(); // posix_spawn
    print!("{}", String::from_utf8_lossy(&out.stdout));
    let r = std::panic::catch_unwind(|| None::<u8>.unwrap());
    println!("panicked: {}", r.is_err());
}
"#;

#[test]
fn rust_program_with_hashmap_spawn_and_panic_replays() {
    let dir = scratch("rust");
    let src = dir.join("prog.rs");
    std::fs::write(&src, RUST_PROGRAM).unwrap();
    let exe = dir.join("prog");
    let out = run(Command::new("rustc").args(["-g", "-O"]).arg(&src).arg("-o").arg(&exe));
    assert!(out.status.success(), "rustc failed: {}", text(&out.stderr));
    round_trip_nondeterministic("rust", &[exe.to_str().unwrap()]);
}

#[test]
fn ctrl_c_reaches_the_program_and_the_trace_completes() {
    use std::io::{BufRead, BufReader};
    let dir = scratch("ctrl-c");
    let trace = dir.join("trace");
    // `setsid` makes rdb the leader of a new process group, like a shell job.
    let mut child = Command::new("setsid")
        .arg(rdb())
        .args(["record", "-o", trace.to_str().unwrap(), "--", "/bin/sh", "-c"])
        .arg("trap 'echo interrupted; kill $!; exit 5' INT; echo ready; sleep 30 & wait")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    // What the terminal does on Ctrl-C: SIGINT to the whole foreground group.
    let st = Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status().unwrap();
    assert!(st.success());
    assert_eq!(lines.next().unwrap().unwrap(), "interrupted");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(5));
    let rep = replay(&trace);
    assert_eq!(rep.status.code(), Some(0), "{}", text(&rep.stderr));
    assert_eq!(text(&rep.stdout), "ready\ninterrupted\n");
}
