//! `rdb record` / `rdb replay` scenarios beyond one program and its output (those are the
//! `programs::` and `corpus::` cases): traces moved or damaged, changed binaries, killed
//! recorders, Ctrl-C, the default trace directory, `rdb info`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use rdb_tests::{
    clang, describe, output, program, program_stderr, rdb, record, replay, scratch, text, tools, EXIT_ENDS_EARLY,
    EXIT_ERROR,
};

fn sh(script: &str) -> [&str; 3] {
    ["/bin/sh", "-c", script]
}

/// Records `prog` in `dir`, replays it there, and checks the replay printed the same.
fn round_trip(dir: &Path, trace: &Path, prog: &[&str]) -> Vec<u8> {
    let rec = record(dir, trace, prog);
    let rep = replay(dir, trace);
    assert_eq!(rep.status.code(), Some(0), "{prog:?}: replay failed:\n{}", describe(&rep));
    assert_eq!(rep.stdout, rec.stdout, "{prog:?}: replayed stdout differs");
    rec.stdout
}

pub fn replay_works_from_another_place_and_environment() {
    let dir = scratch("moved");
    let trace = dir.path().join("trace");
    let rec = record(dir.path(), &trace, &sh("pwd; env | sort; ls"));
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
    let moved = dir.path().join("elsewhere");
    std::fs::rename(&trace, &moved).unwrap();
    let rep = output(
        rdb(&["replay", moved.to_str().unwrap()]).current_dir("/").env_clear().env("UNRELATED", "x".repeat(300)),
    );
    assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
    assert_eq!(text(&rep.stdout), text(&rec.stdout));
}

pub fn corrupt_and_foreign_traces_are_refused() {
    let dir = scratch("corrupt");
    let trace = dir.path().join("trace");
    assert_eq!(record(dir.path(), &trace, &["ls", "/etc"]).status.code(), Some(0));
    let events = trace.join("events");
    let mut data = std::fs::read(&events).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x55;
    std::fs::write(&events, data).unwrap();
    let rep = replay(dir.path(), &trace);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR), "{}", describe(&rep));
    assert!(text(&rep.stderr).contains("corrupt"), "{}", describe(&rep));
    assert!(rep.stdout.is_empty(), "nothing replayed from a corrupt trace");

    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("events"), b"hello").unwrap();
    let rep = replay(dir.path(), &foreign);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR));
    assert!(text(&rep.stderr).contains("not an rdb trace directory"), "{}", describe(&rep));
    let info = output(&mut rdb(&["info", foreign.to_str().unwrap()]));
    assert_eq!(info.status.code(), Some(EXIT_ERROR));
}

pub fn changed_binary_is_refused_by_name() {
    let dir = scratch("changed");
    let exe = clang(&program("support/hello.c"), &dir.path().join("hello"), &["-O1", "-g"], &[]);
    let trace = dir.path().join("trace");
    assert_eq!(record(dir.path(), &trace, &[exe.to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(replay(dir.path(), &trace).status.code(), Some(0));
    let mut bytes = std::fs::read(&exe).unwrap();
    bytes.push(0);
    std::fs::write(&exe, bytes).unwrap();
    let rep = replay(dir.path(), &trace);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR));
    let err = text(&rep.stderr);
    assert!(err.contains(exe.to_str().unwrap()) && err.contains("changed"), "{err}");
}

pub fn killed_recorder_leaves_a_trace_that_replays_to_its_end() {
    let dir = scratch("killed");
    let trace = dir.path().join("trace");
    let script = program("support/count_slowly.py");
    let mut child = Command::new(tools().join("rdb"))
        .args(["record", "-o", trace.to_str().unwrap(), "--", "/usr/bin/python3", script.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the program has visibly run for a while, then kill the recorder.
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
    let info = output(&mut rdb(&["info", trace.to_str().unwrap()]));
    assert_eq!(info.status.code(), Some(0), "{}", describe(&info));
    assert!(text(&info.stdout).contains("incomplete"), "{}", text(&info.stdout));
    let rep = replay(dir.path(), &trace);
    assert_eq!(rep.status.code(), Some(EXIT_ENDS_EARLY), "{}", describe(&rep));
    assert!(text(&rep.stderr).contains("ends early"), "{}", describe(&rep));
    let out = text(&rep.stdout);
    let replayed: Vec<&str> = out.lines().collect();
    assert!(!replayed.is_empty(), "some output replayed");
    for (i, l) in replayed.iter().enumerate() {
        assert_eq!(*l, i.to_string(), "replayed output is the recorded prefix");
    }
}

/// `rdb gdb` on a trace cut short: the replay ends where the recording stopped, which gdb must
/// not be told is the program's normal exit; rdb says so and exits 4, as `rdb replay` does.
pub fn gdb_on_a_trace_cut_short_says_so_and_exits_4() {
    let dir = scratch("cutgdb");
    let trace = dir.path().join("trace");
    record(dir.path(), &trace, &["/usr/bin/python3", "-u", "-c", "for i in range(20000): print(i)"]);
    std::fs::remove_file(trace.join("summary.json")).unwrap();
    let events = trace.join("events");
    let len = std::fs::metadata(&events).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&events).unwrap().set_len(len / 2).unwrap();
    let gdb = output(rdb(&["gdb", trace.to_str().unwrap(), "--", "-batch", "-ex", "continue"]).current_dir(dir.path()));
    assert_eq!(gdb.status.code(), Some(EXIT_ENDS_EARLY), "{}", describe(&gdb));
    let said = text(&gdb.stderr) + &text(&gdb.stdout);
    assert!(said.contains("the trace ends early after"), "{}", describe(&gdb));
    assert!(!said.contains("exited normally"), "gdb was told the program exited: {}", describe(&gdb));
}

/// A recorder killed with SIGKILL in the middle of a fork-heavy script (every line of output is
/// one fork, exec and exit behind), at several points: each trace replays up to where it was cut
/// and says so (exit 4), never panicking or hanging (a cut right after an exec once ended the
/// replay with a panic, exit 101).
pub fn killed_recorder_of_a_forking_script_replays_to_its_end() {
    let script = program("support/fork_and_count.sh");
    for kill_after in [1, 3, 20, 150, 400] {
        let dir = scratch("killed-fork");
        let trace = dir.path().join("trace");
        let mut child = Command::new(tools().join("rdb"))
            .args(["record", "-o", trace.to_str().unwrap(), "--", "/bin/sh", script.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..kill_after {
            lines.next().expect("the script prints a line per fork").unwrap();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        drop(lines);
        let rep = replay(dir.path(), &trace);
        assert_eq!(rep.status.code(), Some(EXIT_ENDS_EARLY), "killed after {kill_after} lines: {}", describe(&rep));
        assert!(text(&rep.stderr).contains("ends early"), "{}", describe(&rep));
        let out = text(&rep.stdout);
        for (i, l) in out.lines().enumerate() {
            assert_eq!(l, i.to_string(), "killed after {kill_after} lines: replayed output is the recorded prefix");
        }
    }
}

pub fn info_describes_a_trace() {
    let dir = scratch("info");
    let trace = dir.path().join("trace");
    assert_eq!(record(dir.path(), &trace, &sh("echo a | cat")).status.code(), Some(0));
    let info = output(&mut rdb(&["info", trace.to_str().unwrap()]));
    let out = text(&info.stdout);
    assert!(out.contains("program:    /usr/bin/dash") || out.contains("program:    /bin/"), "{out}");
    assert!(out.contains("processes:  3"), "{out}");
    assert!(out.contains("status:     exit 0"), "{out}");
    let listed = text(&output(&mut rdb(&["info", "--events", trace.to_str().unwrap()])).stdout);
    assert!(listed.contains("new process") && listed.contains("exec /") && listed.contains("write(0x1,"), "{listed}");
}

pub fn default_trace_dir_and_latest_link() {
    let base = scratch("base");
    let base = base.path();
    let rec = output(rdb(&["record", "--", "echo", "x"]).env("RDB_TRACE_DIR", base));
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
    assert!(base.join("echo-0").join("rdb-trace.json").exists());
    assert!(text(&rec.stderr).contains(base.join("echo-0").to_str().unwrap()));
    let rep = output(rdb(&["replay"]).env("RDB_TRACE_DIR", base));
    assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
    assert_eq!(rep.stdout, b"x\n");
}

pub fn recorded_stdin_is_not_needed_for_replay() {
    let dir = scratch("stdin");
    let trace = dir.path().join("trace");
    let input = std::fs::File::open("/etc/services").unwrap();
    let rec = output(rdb(&["record", "-o", trace.to_str().unwrap(), "--", "sort"]).stdin(input));
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
    assert!(rec.stdout.len() > 1000);
    let rep = replay(dir.path(), &trace); // stdin is /dev/null here
    assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
    assert_eq!(rep.stdout, rec.stdout);
}

pub fn scripts_and_relative_execs_replay_from_elsewhere() {
    let dir = scratch("script");
    let script = dir.path().join("s.sh");
    std::fs::copy(program("support/args.sh"), &script).unwrap();
    let trace = dir.path().join("trace");
    let rec = record(dir.path(), &trace, &["./s.sh", "a"]);
    assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
    assert!(text(&rec.stdout).starts_with("script ./s.sh a\n"), "{}", text(&rec.stdout));
    let rep = replay(Path::new("/"), &trace);
    assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
    assert_eq!(rep.stdout, rec.stdout);
    let inner = format!("cd {} && ./s.sh x && {} y", dir.path().display(), script.display());
    round_trip(dir.path(), &dir.path().join("trace-relative"), &sh(&inner));
}

pub fn changed_shared_library_is_refused_by_name() {
    let dir = scratch("changed-lib");
    let lib = dir.path().join("libfoo.so");
    let build_lib = |value: i32| {
        clang(&program("support/foo.c"), &lib, &["-shared", "-fPIC", &format!("-DVALUE={value}")], &[]);
    };
    build_lib(42);
    let rpath = format!("-Wl,-rpath,{}", dir.path().display());
    let libdir = format!("-L{}", dir.path().display());
    let exe =
        clang(&program("support/usefoo.c"), &dir.path().join("usefoo"), &["-O1", "-g"], &[&libdir, "-lfoo", &rpath]);
    let trace = dir.path().join("trace");
    // Without kept files, replay needs the originals (with them, a rebuild changes nothing:
    // the `kept_files::` scenarios).
    let rec = output(
        rdb(&["record", "--keep-files", "off", "-o", trace.to_str().unwrap(), "--", exe.to_str().unwrap()])
            .current_dir(dir.path()),
    );
    assert_eq!(rec.stdout, b"42\n", "{}", describe(&rec));
    assert_eq!(replay(dir.path(), &trace).stdout, b"42\n");
    build_lib(43);
    let rep = replay(dir.path(), &trace);
    assert_eq!(rep.status.code(), Some(EXIT_ERROR));
    let err = text(&rep.stderr);
    assert!(err.contains(lib.to_str().unwrap()) && err.contains("changed since it was recorded"), "{err}");
}

pub fn git_commit_replays_after_the_repository_changed() {
    // git maps its own config and rewrites it while running: the mapped bytes are kept in
    // the trace, so replay does not need the repository as it was.
    let mut outputs = Vec::new();
    for round in 0..2 {
        let dir = scratch(&format!("git-{round}"));
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let script = format!(
            "cd {} && git init -q && echo hi > f && git add f && git -c user.name=a -c user.email=b commit -qm m && git log --format=%H%n%s%n%ad",
            repo.display()
        );
        let trace = dir.path().join("trace");
        let rec = record(dir.path(), &trace, &sh(&script));
        assert_eq!(rec.status.code(), Some(0), "{}", describe(&rec));
        std::fs::remove_dir_all(&repo).unwrap();
        let rep = replay(dir.path(), &trace);
        assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
        assert_eq!(text(&rep.stdout), text(&rec.stdout));
        outputs.push(rec.stdout);
        std::thread::sleep(std::time::Duration::from_millis(1100)); // commit dates have 1 s resolution
    }
    assert_ne!(outputs[0], outputs[1], "two commits at different times have different hashes");
}

pub fn ctrl_c_reaches_the_program_and_the_trace_completes() {
    let dir = scratch("ctrl-c");
    let trace = dir.path().join("trace");
    // `setsid` makes rdb the leader of a new process group, like a shell job. (Not under
    // `timeout`, which would make a process group of its own; the program ends by itself
    // within 30 s should the signal never come.)
    let mut child = Command::new("setsid")
        .arg(tools().join("rdb"))
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
    let rep = replay(dir.path(), &trace);
    assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
    assert_eq!(text(&rep.stdout), "ready\ninterrupted\n");
}

/// A standard descriptor closed for `rdb record` is closed for the program too, as natively
/// (not the `/dev/null` Rust's runtime opens on it for rdb), and the replay shows the same run.
pub fn closed_standard_descriptors_stay_closed() {
    let dir = scratch("closed-stdio");
    let rdb_path = tools().join("rdb");
    for (name, program, redirect) in [("stdin", "cat", "<&-"), ("stdout", "echo hi", ">&-")] {
        let native =
            output(Command::new("/bin/sh").args(["-c", &format!("{program} {redirect}")]).current_dir(dir.path()));
        assert_ne!(native.status.code(), Some(0), "natively, `{program} {redirect}` fails:\n{}", describe(&native));
        let trace = dir.path().join(name);
        let script = format!("exec \"$0\" record -o \"$1\" -- /bin/sh -c '{program}' {redirect}");
        let rec = output(
            Command::new("/bin/sh")
                .args(["-c", &script])
                .arg(&rdb_path)
                .arg(&trace)
                .current_dir(dir.path())
                .stdin(Stdio::null()),
        );
        assert_eq!(rec.status.code(), native.status.code(), "{name} closed:\n{}", describe(&rec));
        assert_eq!(program_stderr(&rec), text(&native.stderr), "{name} closed");
        let rep = replay(dir.path(), &trace);
        assert_eq!(rep.status.code(), Some(0), "{name} closed:\n{}", describe(&rep));
        assert_eq!(program_stderr(&rep), text(&native.stderr), "the replay with {name} closed");
    }
}

/// A trace root (`RDB_TRACE_DIR`) that is a regular file is said to be one by every command that
/// looks in it, never reported as missing or empty.
pub fn a_trace_root_that_is_a_file_is_said_to_be_one() {
    let dir = scratch("root-is-a-file");
    let root = dir.path().join("root");
    std::fs::write(&root, "hello\n").unwrap();
    for args in [&["ls"][..], &["replay"], &["info", "some-trace"], &["record", "--", "/bin/true"]] {
        let out = output(rdb(args).env("RDB_TRACE_DIR", &root).current_dir(dir.path()));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_ERROR), "rdb {args:?}:\n{}", describe(&out));
        assert!(
            err.contains(&format!("{} is a file", root.display())) || err.contains("not a directory"),
            "rdb {args:?} must say the root is a file:\n{err}"
        );
        assert!(!err.contains("does not exist") && !err.contains("no trace named"), "rdb {args:?}:\n{err}");
    }
}

/// Output sent with `sendto` and `sendmsg` to a standard output that is a socket is re-emitted
/// on replay like `write`'s; bytes spliced into it from a pipe, which the recorder cannot read
/// again, are refused at record time with the reason.
pub fn output_sent_to_a_socket_is_re_emitted() {
    use std::io::Read;
    let dir = scratch("send-to-stdout");
    let exe = clang(&program("support/send_to_stdout.c"), &dir.path().join("send"), &["-O1"], &[]);
    let trace = dir.path().join("trace");
    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut command = rdb(&["record", "-o", trace.to_str().unwrap(), "--", exe.to_str().unwrap()]);
    command.stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs))).stderr(Stdio::piped());
    let child = command.spawn().expect("start rdb record");
    drop(command); // our copy of the socket's other end: the read below ends with the recording
    let mut recorded = Vec::new();
    ours.read_to_end(&mut recorded).unwrap();
    let rec = child.wait_with_output().unwrap();
    assert_eq!(rec.status.code(), Some(0), "recording failed:\n{}", text(&rec.stderr));
    assert_eq!(text(&recorded), "write\nsendto\nsendmsg\n");
    let rep = replay(dir.path(), &trace);
    assert_eq!(rep.status.code(), Some(0), "{}", describe(&rep));
    assert_eq!(text(&rep.stdout), text(&recorded));
    // Bytes spliced from a pipe into the socket cannot be read again: refused, saying so.
    let (_ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let splice = "import os; r, w = os.pipe(); os.write(w, b'spliced\\n'); os.splice(r, 1, 8)";
    let trace = dir.path().join("splice");
    let rec = output(
        rdb(&["record", "-o", trace.to_str().unwrap(), "--", "python3", "-c", splice])
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs))),
    );
    let err = text(&rec.stderr);
    assert_eq!(rec.status.code(), Some(EXIT_ERROR), "{}", describe(&rec));
    assert!(err.contains("splice from fd 3 to rdb's own output (fd 1): rdb cannot read those bytes again"), "{err}");
}
