//! Data-driven record/replay cases: one file per case, its expectation written beside the
//! program, in the manner of rr's `src/test/*.c` and compiletest's directives.
//!
//! A case is either a program source (`.c`, `.rs`, `.sh`, `.py`, `.js`, `.pl`) whose comment
//! lines `// rdb-KEY: VALUE` (or `# rdb-KEY: VALUE`) are its directives, or a `.case` file of
//! `KEY: VALUE` lines naming a program of this machine with `run:`. The directives:
//!
//! | directive | meaning (default) |
//! | --- | --- |
//! | `run: ARGV` | the command line (`.case` files; shell words) |
//! | `args: ARGV` | arguments after the program (none) |
//! | `build: FLAGS` | compiler flags for `.c` (`-O1 -g`) and `.rs` (`-g -O`) programs |
//! | `record: FLAGS` | extra `rdb record` flags (none) |
//! | `setup: SHELL` | run by `/bin/sh -c` in the case's scratch directory first (`$CASE_DIR` is the case file's directory); lines accumulate |
//! | `stdin: FILE` | the recording's standard input (/dev/null; replays always read /dev/null) |
//! | `expect: identical` | every replay prints exactly what its recording printed, exits 0 |
//! | `expect: refused "TEXT"` | `rdb record` or `rdb replay` fails with TEXT on stderr |
//! | `expect: fails "WHY" [GOAL]` | a known fault (WHY names the issue): the case is checked against GOAL (`identical`, or `refused "TEXT"`); failing is reported, passing is news; fixing it deletes `fails "WHY"` |
//! | `exit: N` | the recorded program's exit status (0) |
//! | `recordings: N` / `replays: N` | recordings made, replays of each (1 / 1) |
//! | `nondeterministic` | two recordings must print different output (so the replay shows *that* run) |
//! | `stdout-to-file` | standard output of the recording and of each replay is a regular file, not a pipe |
//! | `timeout: SECONDS` | per command (120) |
//! | `stdout: "TEXT"`, `stdout-contains: "TEXT"`, `stdout-starts-with: "TEXT"`, `min-stdout-bytes: N` | the recorded output |
//! | `stderr-contains: "TEXT"` | rdb's or the program's stderr (of the refusal for `refused`) |
//! | `events-contain: "TEXT"`, `info-contains: "TEXT"` | `rdb info --events` / `rdb info` of the first recording |
//!
//! Quoted TEXT is a JSON string (`\n`, `\"`, `\\`). Every command runs under `timeout`; a case
//! directory is made per case and removed afterwards. When `RDB_CASE_LOG` names a file, each
//! case appends `name<TAB>expectation<TAB>result<TAB>seconds<TAB>detail` to it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Instant;

use crate::{output, rdb_timed, text, timed, EXIT_ERROR, EXIT_TIMED_OUT};

/// What a case expects of rdb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    Identical,
    Refused(String),
    /// A known fault (why, with its issue): rdb does not do the goal yet.
    Fails(String, Box<Expect>),
}

/// One case file, parsed.
#[derive(Debug, Clone)]
pub struct Case {
    /// `<group>::<file stem>`.
    pub name: String,
    pub path: PathBuf,
    pub run: Vec<String>,
    pub args: Vec<String>,
    pub build: Option<Vec<String>>,
    pub record: Vec<String>,
    pub setup: Vec<String>,
    pub stdin: Option<PathBuf>,
    pub expect: Expect,
    pub exit: i32,
    pub recordings: usize,
    pub replays: usize,
    pub nondeterministic: bool,
    pub stdout_to_file: bool,
    pub timeout: u64,
    pub stdout: Option<String>,
    pub stdout_contains: Vec<String>,
    pub stdout_starts_with: Option<String>,
    pub min_stdout_bytes: usize,
    pub stderr_contains: Vec<String>,
    pub events_contain: Vec<String>,
    pub info_contains: Vec<String>,
}

/// How a case ended when it did not fail.
#[derive(Debug)]
pub enum Verdict {
    Passed,
    /// An `expect: fails` case failed, as known: what went wrong.
    KnownFailure(String),
    /// An `expect: fails` case passed this time.
    KnownFailurePassed,
}

/// The cases of `tests/<group>/`: its files (not subdirectories), sorted by name.
pub fn discover(group: &str) -> Vec<Result<Case, String>> {
    let dir = crate::repo_root().join("tests").join(group);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file() && leader(p).is_some())
        .collect();
    paths.sort();
    paths.into_iter().map(|p| parse(group, &p)).collect()
}

/// The comment leader of a case file's directives, by extension; `None` for other files.
fn leader(path: &Path) -> Option<&'static str> {
    match path.extension()?.to_str()? {
        "c" | "rs" | "js" => Some("//"),
        "sh" | "py" | "pl" | "case" => Some("#"),
        _ => None,
    }
}

fn quoted(value: &str, path: &Path, line: usize) -> Result<String, String> {
    serde_json::from_str::<String>(value.trim())
        .map_err(|e| format!("{}:{line}: expected a quoted string, found `{value}`: {e}", path.display()))
}

/// `identical`, `refused "TEXT"`, or `fails "WHY"` followed by the goal (`identical` when none).
fn expectation(value: &str, path: &Path, line: usize) -> Result<Expect, String> {
    let value = value.trim();
    let (word, rest) = value.split_once(char::is_whitespace).unwrap_or((value, ""));
    match word {
        "identical" if rest.trim().is_empty() => Ok(Expect::Identical),
        "refused" => Ok(Expect::Refused(quoted(rest, path, line)?)),
        "fails" => {
            let mut strings = serde_json::Deserializer::from_str(rest.trim()).into_iter::<String>();
            let why = match strings.next() {
                Some(Ok(why)) => why,
                _ => return Err(format!("{}:{line}: `fails` needs a quoted reason", path.display())),
            };
            let goal = rest.trim()[strings.byte_offset()..].trim();
            let goal = if goal.is_empty() { Expect::Identical } else { expectation(goal, path, line)? };
            if matches!(goal, Expect::Fails(..)) {
                return Err(format!("{}:{line}: `fails` twice", path.display()));
            }
            Ok(Expect::Fails(why, Box::new(goal)))
        }
        _ => Err(format!(
            "{}:{line}: expect is `identical`, `refused \"TEXT\"` or `fails \"WHY\"` before one of those, not `{value}`",
            path.display()
        )),
    }
}

fn words(value: &str, path: &Path, line: usize) -> Result<Vec<String>, String> {
    shlex::split(value).ok_or_else(|| format!("{}:{line}: unbalanced quotes in `{value}`", path.display()))
}

fn number<T: std::str::FromStr>(value: &str, path: &Path, line: usize) -> Result<T, String> {
    value.trim().parse().map_err(|_| format!("{}:{line}: expected a number, found `{value}`", path.display()))
}

/// Parses one case file.
pub fn parse(group: &str, path: &Path) -> Result<Case, String> {
    let source = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).ok_or_else(|| format!("{}: bad name", path.display()))?;
    let is_case = path.extension().is_some_and(|e| e == "case");
    let leader = leader(path).ok_or_else(|| format!("{}: not a case file", path.display()))?;
    let mut case = Case {
        name: format!("{group}::{stem}"),
        path: path.to_path_buf(),
        run: vec![],
        args: vec![],
        build: None,
        record: vec![],
        setup: vec![],
        stdin: None,
        expect: Expect::Identical,
        exit: 0,
        recordings: 1,
        replays: 1,
        nondeterministic: false,
        stdout_to_file: false,
        timeout: 120,
        stdout: None,
        stdout_contains: vec![],
        stdout_starts_with: None,
        min_stdout_bytes: 0,
        stderr_contains: vec![],
        events_contain: vec![],
        info_contains: vec![],
    };
    for (i, raw) in source.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        let directive = if is_case {
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            trimmed
        } else {
            match trimmed.strip_prefix(leader).map(str::trim_start).and_then(|t| t.strip_prefix("rdb-")) {
                Some(d) => d,
                None => continue,
            }
        };
        let (key, value) = directive.split_once(':').map_or((directive, ""), |(k, v)| (k.trim(), v.trim()));
        match key {
            "run" if is_case => case.run = words(value, path, line)?,
            "args" => case.args = words(value, path, line)?,
            "build" => case.build = Some(words(value, path, line)?),
            "record" => case.record = words(value, path, line)?,
            "setup" => case.setup.push(value.to_string()),
            "stdin" => case.stdin = Some(PathBuf::from(value)),
            "expect" => case.expect = expectation(value, path, line)?,
            "exit" => case.exit = number(value, path, line)?,
            "recordings" => case.recordings = number(value, path, line)?,
            "replays" => case.replays = number(value, path, line)?,
            "nondeterministic" if value.is_empty() => case.nondeterministic = true,
            "stdout-to-file" if value.is_empty() => case.stdout_to_file = true,
            "timeout" => case.timeout = number(value, path, line)?,
            "stdout" => case.stdout = Some(quoted(value, path, line)?),
            "stdout-contains" => case.stdout_contains.push(quoted(value, path, line)?),
            "stdout-starts-with" => case.stdout_starts_with = Some(quoted(value, path, line)?),
            "min-stdout-bytes" => case.min_stdout_bytes = number(value, path, line)?,
            "stderr-contains" => case.stderr_contains.push(quoted(value, path, line)?),
            "events-contain" => case.events_contain.push(quoted(value, path, line)?),
            "info-contains" => case.info_contains.push(quoted(value, path, line)?),
            _ => return Err(format!("{}:{line}: unknown directive `{directive}`", path.display())),
        }
    }
    if is_case && case.run.is_empty() {
        return Err(format!("{}: a .case file needs a `run:` line", path.display()));
    }
    if case.nondeterministic {
        case.recordings = case.recordings.max(2);
    }
    if case.recordings == 0 {
        return Err(format!("{}: `recordings: 0` checks nothing", path.display()));
    }
    Ok(case)
}

impl Case {
    /// A one-word summary of the expectation, for logs.
    pub fn expectation(&self) -> &'static str {
        match self.expect {
            Expect::Identical => "identical",
            Expect::Refused(_) => "refused",
            Expect::Fails(..) => "fails",
        }
    }

    /// Runs the case in a fresh directory.
    pub fn run(&self) -> Result<Verdict, String> {
        let start = Instant::now();
        let result = self.run_in();
        let (outcome, detail) = match &result {
            Ok(Verdict::Passed) => ("pass", String::new()),
            Ok(Verdict::KnownFailurePassed) => ("pass", "known failure did not show this time".to_string()),
            Ok(Verdict::KnownFailure(why)) => ("fail", why.clone()),
            Err(why) => ("FAIL", why.clone()),
        };
        if let Some(log) = std::env::var_os("RDB_CASE_LOG") {
            let detail: String = detail.lines().next().unwrap_or("").chars().take(200).collect();
            let line = format!(
                "{}\t{}\t{outcome}\t{:.1}\t{}\n",
                self.name,
                self.expectation(),
                start.elapsed().as_secs_f64(),
                detail.replace('\t', " ")
            );
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("open RDB_CASE_LOG");
            file.write_all(line.as_bytes()).expect("write RDB_CASE_LOG");
        }
        result
    }

    fn run_in(&self) -> Result<Verdict, String> {
        let scratch = crate::scratch(&self.name.replace("::", "-"));
        let dir = scratch.path();
        for setup in &self.setup {
            let case_dir = self.path.parent().expect("a case file is in a directory");
            let out =
                output(timed(self.timeout, "/bin/sh").arg("-c").arg(setup).env("CASE_DIR", case_dir).current_dir(dir));
            if !out.status.success() {
                return Err(format!("setup `{setup}` failed:\n{}", crate::describe(&out)));
            }
        }
        let argv = self.program(dir)?;
        self.check(&self.expect, dir, &argv)
    }

    fn check(&self, expect: &Expect, dir: &Path, argv: &[String]) -> Result<Verdict, String> {
        match expect {
            Expect::Identical => self.identical(dir, argv).map(|()| Verdict::Passed),
            Expect::Refused(message) => self.refused(dir, argv, message).map(|()| Verdict::Passed),
            Expect::Fails(_, goal) => Ok(match self.check(goal, dir, argv) {
                Ok(_) => Verdict::KnownFailurePassed,
                Err(why) => Verdict::KnownFailure(why),
            }),
        }
    }

    /// The command line to record: the built program, the interpreter and the script, or `run:`.
    /// A program is built into `dir`.
    pub fn program(&self, dir: &Path) -> Result<Vec<String>, String> {
        let path = self.path.to_str().ok_or("case path is not UTF-8")?.to_string();
        let ext = self.path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let mut argv = match ext {
            "case" => self.run.clone(),
            "c" | "rs" => {
                let exe = dir.join(self.path.file_stem().unwrap());
                let (compiler, default): (&str, &[&str]) = if ext == "c" {
                    ("clang-14", &["-O1", "-g"])
                } else {
                    ("rustc", &["--edition", "2021", "-g", "-O"])
                };
                let flags = self.build.clone().unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect());
                let mut command = timed(self.timeout, compiler);
                if ext == "rs" && self.build.is_some() {
                    command.args(["--edition", "2021"]);
                }
                if ext == "rs" {
                    // Built from the tests directory with a relative path: the path rustc embeds in
                    // the program (panic locations) is then the same in every checkout, and so are
                    // the program's code addresses (gdb goldens print them).
                    let tests = crate::repo_root().join("tests");
                    match self.path.strip_prefix(&tests) {
                        Ok(relative) => command.current_dir(&tests).arg(relative),
                        Err(_) => command.arg(&self.path),
                    };
                } else {
                    command.arg(&self.path);
                }
                command.arg("-o").arg(&exe).args(&flags);
                let out = output(&mut command);
                if !out.status.success() {
                    return Err(format!("{compiler} failed:\n{}", crate::describe(&out)));
                }
                vec![exe.to_str().ok_or("scratch path is not UTF-8")?.to_string()]
            }
            _ => {
                let first = std::fs::read_to_string(&self.path).map_err(|e| e.to_string())?;
                let mut interpreter: Vec<String> = match first.lines().next().and_then(|l| l.strip_prefix("#!")) {
                    Some(shebang) => shebang.split_whitespace().map(String::from).collect(),
                    None => vec![match ext {
                        "sh" => "/bin/sh",
                        "py" => "python3",
                        "js" => "node",
                        _ => "perl",
                    }
                    .to_string()],
                };
                interpreter.push(path);
                interpreter
            }
        };
        argv.extend(self.args.iter().cloned());
        Ok(argv)
    }

    fn record(&self, dir: &Path, trace: &Path, argv: &[String]) -> Run {
        let mut command = rdb_timed(self.timeout, &["record", "-o", trace.to_str().unwrap()]);
        command.args(&self.record).arg("--").args(argv).current_dir(dir);
        if let Some(stdin) = &self.stdin {
            let file =
                std::fs::File::open(dir.join(stdin)).unwrap_or_else(|e| panic!("stdin {}: {e}", stdin.display()));
            command.stdin(Stdio::from(file));
        }
        self.execute(dir, &mut command)
    }

    fn rdb(&self, dir: &Path, args: &[&str]) -> Run {
        self.execute(dir, rdb_timed(self.timeout, args).current_dir(dir))
    }

    /// Runs `command` (with stdout to a file of `dir` for `stdout-to-file`).
    fn execute(&self, dir: &Path, command: &mut std::process::Command) -> Run {
        if !self.stdout_to_file {
            return Run::of(command, self.timeout);
        }
        let path = dir.join("stdout-file");
        command.stdout(std::fs::File::create(&path).expect("create the stdout file"));
        let mut run = Run::of(command, self.timeout);
        run.out.stdout = std::fs::read(&path).expect("read the stdout file");
        run
    }

    fn identical(&self, dir: &Path, argv: &[String]) -> Result<(), String> {
        let mut outputs = Vec::new();
        for r in 0..self.recordings {
            let trace = dir.join(format!("trace-{r}"));
            let rec = self.record(dir, &trace, argv);
            let which = if self.recordings > 1 { format!("recording {r}") } else { "recording".to_string() };
            check_not_hung(&rec, &which, self.timeout)?;
            if !text(&rec.stderr).contains("rdb: recorded") {
                return Err(format!("{which} failed: {}\n{}", headline(&text(&rec.stderr)), crate::describe(&rec)));
            }
            if rec.status.code() != Some(self.exit) {
                return Err(format!(
                    "{which}: exit status {:?}, expected {}\n{}",
                    rec.status.code(),
                    self.exit,
                    crate::describe(&rec)
                ));
            }
            self.check_recorded(&rec).map_err(|e| format!("{which}: {e}"))?;
            let recorded_err = crate::program_stderr(&rec);
            for i in 0..self.replays {
                let rep = self.rdb(dir, &["replay", trace.to_str().unwrap()]);
                let which = if self.replays > 1 {
                    format!("replay {i} of the {which}")
                } else {
                    format!("replay of the {which}")
                };
                check_not_hung(&rep, &which, self.timeout)?;
                if rep.status.code() != Some(0) {
                    let err = text(&rep.stderr);
                    return Err(format!("{which} failed (exit {:?}): {}\n{err}", rep.status.code(), headline(&err)));
                }
                if rep.stdout != rec.stdout {
                    return Err(format!("{which}: stdout differs: {}", difference(&rec.stdout, &rep.stdout)));
                }
                let replayed_err = crate::program_stderr(&rep);
                if replayed_err != recorded_err {
                    return Err(format!(
                        "{which}: stderr differs: {}",
                        difference(recorded_err.as_bytes(), replayed_err.as_bytes())
                    ));
                }
            }
            if r == 0 {
                self.check_info(dir, &trace)?;
            }
            outputs.push(rec.out.stdout);
        }
        if self.nondeterministic && outputs.windows(2).all(|w| w[0] == w[1]) {
            return Err(format!(
                "{} recordings printed the same output, so the case cannot show that a replay reproduces its own run:\n{}",
                outputs.len(),
                text(&outputs[0])
            ));
        }
        Ok(())
    }

    fn check_recorded(&self, rec: &Output) -> Result<(), String> {
        let out = text(&rec.stdout);
        if let Some(expected) = &self.stdout {
            if &out != expected {
                return Err(format!("stdout is\n{out}\nexpected\n{expected}"));
            }
        }
        if let Some(prefix) = &self.stdout_starts_with {
            if !out.starts_with(prefix.as_str()) {
                return Err(format!("stdout does not start with {prefix:?}:\n{out}"));
            }
        }
        for part in &self.stdout_contains {
            if !out.contains(part.as_str()) {
                return Err(format!("stdout does not contain {part:?}:\n{out}"));
            }
        }
        if rec.stdout.len() < self.min_stdout_bytes {
            return Err(format!("stdout has {} bytes, expected at least {}", rec.stdout.len(), self.min_stdout_bytes));
        }
        let err = text(&rec.stderr);
        for part in &self.stderr_contains {
            if !err.contains(part.as_str()) {
                return Err(format!("stderr does not contain {part:?}:\n{err}"));
            }
        }
        Ok(())
    }

    fn check_info(&self, dir: &Path, trace: &Path) -> Result<(), String> {
        for (flag, parts) in [(None, &self.info_contains), (Some("--events"), &self.events_contain)] {
            if parts.is_empty() {
                continue;
            }
            let mut args = vec!["info"];
            args.extend(flag);
            args.push(trace.to_str().unwrap());
            let info = self.rdb(dir, &args);
            let shown = text(&info.stdout);
            for part in parts {
                if !shown.contains(part.as_str()) {
                    return Err(format!("`rdb {}` does not show {part:?}:\n{shown}", args.join(" ")));
                }
            }
        }
        Ok(())
    }

    fn refused(&self, dir: &Path, argv: &[String], message: &str) -> Result<(), String> {
        let trace = dir.join("trace");
        let rec = self.record(dir, &trace, argv);
        check_not_hung(&rec, "recording", self.timeout)?;
        let refusal: Run = if text(&rec.stderr).contains("rdb: recorded") {
            let rep = self.rdb(dir, &["replay", trace.to_str().unwrap()]);
            check_not_hung(&rep, "replay", self.timeout)?;
            if rep.status.code() == Some(0) {
                return Err(format!(
                    "expected rdb to refuse with {message:?}, but it recorded and replayed (recorded stdout {} bytes, replayed {} bytes)",
                    rec.stdout.len(),
                    rep.stdout.len()
                ));
            }
            rep
        } else {
            if rec.status.code() != Some(EXIT_ERROR) {
                return Err(format!(
                    "recording failed with exit {:?}, not rdb's {EXIT_ERROR}:\n{}",
                    rec.status.code(),
                    text(&rec.stderr)
                ));
            }
            rec
        };
        let err = text(&refusal.stderr);
        if !err.contains(message) {
            return Err(format!("rdb failed, but without {message:?}:\n{err}"));
        }
        for part in &self.stderr_contains {
            if !err.contains(part.as_str()) {
                return Err(format!("the refusal does not contain {part:?}:\n{err}"));
            }
        }
        Ok(())
    }
}

/// A command's output, and whether `timeout` had to end it.
struct Run {
    out: Output,
    hung: bool,
}

impl Run {
    fn of(command: &mut std::process::Command, timeout: u64) -> Run {
        let start = Instant::now();
        let out = output(command);
        // A program may exit 124 itself (timeout(1) does): only a run as long as the limit hung.
        let hung = out.status.code() == Some(EXIT_TIMED_OUT) && start.elapsed().as_secs() >= timeout;
        Run { out, hung }
    }
}

impl std::ops::Deref for Run {
    type Target = Output;
    fn deref(&self) -> &Output {
        &self.out
    }
}

fn check_not_hung(run: &Run, what: &str, timeout: u64) -> Result<(), String> {
    let out = &run.out;
    if run.hung || out.status.code().is_none() {
        let tail: String = text(&out.stderr).lines().rev().take(5).collect::<Vec<_>>().join("\n");
        return Err(format!("{what} did not end within {timeout} s (killed by timeout); stderr ends:\n{tail}"));
    }
    Ok(())
}

/// The line of rdb's stderr that says what went wrong: its first `error:` line (with the
/// `expected:`/`actual:` lines of a divergence), else its last line.
fn headline(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    match lines.iter().position(|l| l.starts_with("error:")) {
        Some(i) => {
            let detail = lines[i + 1..].iter().take_while(|l| l.starts_with("expected:") || l.starts_with("actual:"));
            std::iter::once(&lines[i]).chain(detail).copied().collect::<Vec<_>>().join(" / ")
        }
        None => lines.iter().rev().find(|l| !l.is_empty()).map_or(String::new(), |l| l.to_string()),
    }
}

/// Where two outputs first differ, briefly.
fn difference(recorded: &[u8], replayed: &[u8]) -> String {
    let at = recorded.iter().zip(replayed).position(|(a, b)| a != b).unwrap_or(recorded.len().min(replayed.len()));
    let context = |b: &[u8]| text(&b[at.saturating_sub(20)..(at + 40).min(b.len())]);
    format!(
        "recorded {} bytes, replayed {} bytes, first difference at byte {at}: recorded {:?}, replayed {:?}",
        recorded.len(),
        replayed.len(),
        context(recorded),
        context(replayed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(file: &str, text: &str) -> Result<Case, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        parse("group", &path)
    }

    #[test]
    fn directives_of_a_source_file_are_its_rdb_comment_lines() {
        let case = parse_text(
            "prog.c",
            "// A program.\n// rdb-build: -O0 -lpthread\n// rdb-exit: 3\n// rdb-replays: 2\n// rdb-nondeterministic\n\
             // rdb-stdout-contains: \"a \\\"b\\\"\\n\"\nint main(void) { return 3; } // exit: 4\n",
        )
        .unwrap();
        assert_eq!(case.name, "group::prog");
        assert_eq!(case.build, Some(vec!["-O0".to_string(), "-lpthread".to_string()]));
        assert_eq!((case.exit, case.replays, case.recordings), (3, 2, 2));
        assert_eq!(case.stdout_contains, ["a \"b\"\n"]);
        assert_eq!(case.expect, Expect::Identical);
    }

    #[test]
    fn a_case_file_is_all_directives_and_needs_a_command() {
        let case = parse_text("x.case", "# comment\nrun: sh -c 'echo a b'\nexpect: refused \"no `x`\"\n").unwrap();
        assert_eq!(case.run, ["sh", "-c", "echo a b"]);
        assert_eq!(case.expect, Expect::Refused("no `x`".into()));
        assert!(parse_text("y.case", "exit: 1\n").unwrap_err().contains("needs a `run:` line"));
        let case = parse_text("w.case", "run: x\nexpect: fails \"issue 1: \\\"q\\\"\" refused \"no\"\n").unwrap();
        assert_eq!(case.expect, Expect::Fails("issue 1: \"q\"".into(), Box::new(Expect::Refused("no".into()))));
        let case = parse_text("v.case", "run: x\nexpect: fails \"issue 2\"\n").unwrap();
        assert_eq!(case.expect, Expect::Fails("issue 2".into(), Box::new(Expect::Identical)));
    }

    #[test]
    fn mistakes_in_a_case_file_are_errors_with_their_line() {
        let e = parse_text("z.sh", "# rdb-exit: 1\n# rdb-stdout-has: \"x\"\n").unwrap_err();
        assert!(e.ends_with("z.sh:2: unknown directive `stdout-has: \"x\"`"), "{e}");
        let e = parse_text("z.py", "# rdb-expect: broken\n").unwrap_err();
        assert!(e.contains("z.py:1: expect is"), "{e}");
        let e = parse_text("z.py", "# rdb-expect: fails \"x\" fails \"y\"\n").unwrap_err();
        assert!(e.contains("z.py:1: `fails` twice"), "{e}");
        let e = parse_text("z.py", "# rdb-expect: fails refused \"y\"\n").unwrap_err();
        assert!(e.contains("z.py:1: `fails` needs a quoted reason"), "{e}");
        let e = parse_text("z.rs", "// rdb-stdout: unquoted\n").unwrap_err();
        assert!(e.contains("z.rs:1: expected a quoted string"), "{e}");
    }
}
