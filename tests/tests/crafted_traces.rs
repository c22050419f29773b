//! Crafted and damaged traces, one case per file in `tests/crafted/`: each script damages a
//! copy of a good trace (`$TRACE`; `$OTHER` is a second good trace), and its `# expect-exit:`
//! and `# expect-stderr:` lines say how `rdb replay` must refuse it. Every replay runs under a
//! timeout: a trace file that would make rdb block or read forever fails the case.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    p
}

fn record(trace: &Path, prog: &[&str]) {
    let out = Command::new(rdb())
        .args(["record", "--keep-files", "copy", "-o"])
        .arg(trace)
        .arg("--")
        .args(prog)
        .stdin(Stdio::null())
        .output()
        .expect("rdb runs");
    assert!(out.status.success(), "recording {prog:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn expectation<'a>(script: &'a str, key: &str) -> Option<&'a str> {
    script.lines().find_map(|l| l.strip_prefix(&format!("# {key}:")).map(str::trim))
}

#[test]
fn crafted_traces_are_refused_with_the_right_error() {
    let scratch = tempfile::tempdir().unwrap();
    let good = scratch.path().join("good");
    let other = scratch.path().join("other");
    // Copies, not hard links, so that no case can touch the originals through the trace.
    record(&good, &["/bin/sh", "-c", "echo hello; cat /etc/hostname | wc -c"]);
    record(&other, &["ls", "/"]);
    let cases_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crafted");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&cases_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 15, "cases in {}", cases_dir.display());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_stem().unwrap().to_string_lossy().into_owned();
        let script = std::fs::read_to_string(case).unwrap();
        let work = scratch.path().join(&name);
        std::fs::create_dir_all(&work).unwrap();
        let trace = work.join("trace");
        let st = Command::new("cp").arg("-a").arg(&good).arg(&trace).status().unwrap();
        assert!(st.success());
        let made = Command::new("bash")
            .arg("-eu")
            .arg(case)
            .env("TRACE", &trace)
            .env("OTHER", &other)
            .env("WORK", &work)
            .output()
            .unwrap();
        if !made.status.success() {
            failures.push(format!("{name}: the script failed: {}", String::from_utf8_lossy(&made.stderr)));
            continue;
        }
        let started = Instant::now();
        let out = Command::new("timeout")
            .args(["20", rdb().to_str().unwrap(), "replay"])
            .arg(&trace)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want_exit: i32 = expectation(&script, "expect-exit").expect("expect-exit line").parse().unwrap();
        if out.status.code() != Some(want_exit) {
            failures.push(format!(
                "{name}: exit {:?} after {:.1} s, expected {want_exit}:\n{stderr}",
                out.status.code(),
                took.as_secs_f64()
            ));
            continue;
        }
        if let Some(want) = expectation(&script, "expect-stderr") {
            if !stderr.contains(want) {
                failures.push(format!("{name}: stderr lacks {want:?}:\n{stderr}"));
            }
        }
        if want_exit == 1 && !out.stdout.is_empty() {
            failures.push(format!("{name}: a refused trace replayed output"));
        }
        if took > Duration::from_secs(15) {
            failures.push(format!("{name}: took {:.1} s", took.as_secs_f64()));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
