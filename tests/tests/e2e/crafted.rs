//! Crafted and damaged traces, one case per script of `tests/crafted/` (`crafted::NAME`).
//!
//! Each script damages a copy of a good trace: `bash -eu SCRIPT` runs with `$TRACE` (the copy,
//! recorded with `--keep-files copy` so that no script can reach the originals through a hard
//! link), `$OTHER` (a second, different good trace: the source of mixed-up files) and `$WORK` (a
//! directory of its own). Its comment lines say how `rdb replay TRACE` must end:
//!
//! - `# expect-exit: N`: the exit status (required; 1 is a refusal, 4 a trace cut short);
//! - `# expect-stderr: TEXT`: a text rdb's stderr contains.
//!
//! A refused trace must replay no output, and every replay runs under a timeout: a trace file
//! that would make rdb block or read forever fails its case. The two good traces are recorded
//! once per run and removed by [`cleanup`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use libtest_mimic::{Failed, Trial};
use rdb_tests::{describe, output, rdb, rdb_timed, repo_root, text, timed, EXIT_ERROR};

/// Seconds a replay of a crafted trace may take before the case fails (the refusals are
/// immediate; the limit is there for a reader that would block).
const REPLAY_LIMIT: Duration = Duration::from_secs(15);

/// The good traces every case starts from: `good` (a shell pipeline, several processes) and
/// `other` (`ls /`).
struct Originals {
    good: PathBuf,
    other: PathBuf,
}

/// The scratch directory holding the originals, kept until [`cleanup`].
static SCRATCH: Mutex<Option<tempfile::TempDir>> = Mutex::new(None);

fn originals() -> Result<&'static Originals, Failed> {
    static ORIGINALS: OnceLock<Result<Originals, String>> = OnceLock::new();
    ORIGINALS
        .get_or_init(|| {
            let scratch = rdb_tests::scratch("crafted");
            let good = scratch.path().join("good");
            let other = scratch.path().join("other");
            for (trace, prog) in
                [(&good, &["/bin/sh", "-c", "echo hello; cat /etc/hostname | wc -c"][..]), (&other, &["ls", "/"][..])]
            {
                let mut args = vec!["record", "--keep-files", "copy", "-o", trace.to_str().expect("UTF-8 path"), "--"];
                args.extend_from_slice(prog);
                let out = output(&mut rdb(&args));
                if !out.status.success() {
                    return Err(format!("recording {prog:?} (a good trace to damage) failed:\n{}", describe(&out)));
                }
            }
            *SCRATCH.lock().unwrap_or_else(|e| e.into_inner()) = Some(scratch);
            Ok(Originals { good, other })
        })
        .as_ref()
        .map_err(|e| Failed::from(e.clone()))
}

/// Removes the good traces (called once every case has run).
pub fn cleanup() {
    SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// The value of the script's `# KEY: VALUE` line.
fn directive<'a>(script: &'a str, key: &str) -> Option<&'a str> {
    script.lines().find_map(|l| l.strip_prefix("# ")?.strip_prefix(key)?.strip_prefix(':').map(str::trim))
}

/// One trial per `tests/crafted/*.sh`.
pub fn trials() -> Vec<Trial> {
    let dir = repo_root().join("tests/crafted");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    scripts.sort();
    let count = scripts.len();
    let mut trials = vec![Trial::test("crafted::suite_has_at_least_15_cases", move || {
        if count >= 15 {
            Ok(())
        } else {
            Err(Failed::from(format!("tests/crafted/ needs at least 15 cases, found {count}")))
        }
    })];
    trials.extend(scripts.into_iter().map(|script| {
        let name = format!("crafted::{}", script.file_stem().unwrap().to_string_lossy());
        Trial::test(name, move || check(&script))
    }));
    trials
}

fn check(script: &Path) -> Result<(), Failed> {
    let source = std::fs::read_to_string(script).map_err(|e| format!("{}: {e}", script.display()))?;
    let want_exit: i32 = directive(&source, "expect-exit")
        .ok_or_else(|| format!("{}: no `# expect-exit: N` line", script.display()))?
        .parse()
        .map_err(|_| format!("{}: `# expect-exit:` needs a number", script.display()))?;
    let want_stderr = directive(&source, "expect-stderr");
    let originals = originals()?;
    let work = rdb_tests::scratch("crafted-case");
    let trace = work.path().join("trace");
    let copied = output(timed(120, "cp").arg("-a").arg(&originals.good).arg(&trace));
    if !copied.status.success() {
        return Err(format!("copying the good trace failed:\n{}", describe(&copied)).into());
    }
    let made = output(
        timed(120, "bash")
            .arg("-eu")
            .arg(script)
            .env("TRACE", &trace)
            .env("OTHER", &originals.other)
            .env("WORK", work.path()),
    );
    if !made.status.success() {
        return Err(format!("{}: the script failed:\n{}", script.display(), describe(&made)).into());
    }
    let started = Instant::now();
    let replayed = output(&mut rdb_timed(20, &["replay", trace.to_str().expect("UTF-8 path")]));
    let took = started.elapsed();
    let stderr = text(&replayed.stderr);
    if replayed.status.code() != Some(want_exit) {
        return Err(format!(
            "exit {:?} after {:.1} s, expected {want_exit}:\n{}",
            replayed.status.code(),
            took.as_secs_f64(),
            describe(&replayed)
        )
        .into());
    }
    if let Some(want) = want_stderr {
        if !stderr.contains(want) {
            return Err(format!("stderr lacks {want:?}:\n{stderr}").into());
        }
    }
    if want_exit == EXIT_ERROR && !replayed.stdout.is_empty() {
        return Err(format!("a refused trace replayed output:\n{}", describe(&replayed)).into());
    }
    if took > REPLAY_LIMIT {
        return Err(format!("the replay took {:.1} s (limit {} s)", took.as_secs_f64(), REPLAY_LIMIT.as_secs()).into());
    }
    Ok(())
}
