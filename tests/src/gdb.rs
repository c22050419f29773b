//! gdb on replays: each `tests/gdb/NAME.gdb` is a gdb script that real gdb runs in batch mode
//! through `rdb gdb` over a fresh recording of the program it names; everything gdb and the
//! replay print must be `tests/gdb/NAME.out` (`RDB_BLESS=1` rewrites it).
//!
//! The script's `# rdb-KEY: VALUE` lines say how:
//!
//! | directive | meaning |
//! | --- | --- |
//! | `program: FILE` | the program, a file of `tests/programs/` built as its own directives say |
//! | `args: ARGS` | more arguments for `rdb gdb` (`--goto 20`); `{first-child}` is the recorded id of the first process the program started |
//! | `support: FILE` | a file of `tests/gdb/support/` gdb reads first (helpers in Python) |
//! | `timeout: SECONDS` | per command (120) |
//!
//! Before comparing, what differs from one recording to the next is normalised: recorded
//! thread and process ids (`Thread 1.4242` becomes `Thread 1.T1`, in order of appearance),
//! addresses of libraries and stacks (`0x7ff...`), the repository's path (`<repo>`) and the
//! scratch directory's (`<scratch>`), and the padding of `info threads` columns (as wide as
//! the longest id); the program's own addresses stay (ASLR is off and the program is built the same way each time).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::{describe, output, rdb_timed, text};

/// One gdb script.
#[derive(Debug, Clone)]
pub struct GdbScript {
    /// `gdb::<file stem>`.
    pub name: String,
    pub path: PathBuf,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub support: Vec<PathBuf>,
    pub timeout: u64,
}

/// The scripts of `tests/gdb/`, sorted by name.
pub fn discover() -> Vec<Result<GdbScript, String>> {
    let dir = crate::repo_root().join("tests/gdb");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "gdb"))
        .collect();
    paths.sort();
    paths.into_iter().map(|p| parse(&p)).collect()
}

fn parse(path: &Path) -> Result<GdbScript, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = format!("gdb::{}", path.file_stem().unwrap().to_string_lossy());
    let (mut program, mut args, mut timeout, mut support) = (None, Vec::new(), 120, Vec::new());
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("# rdb-") else { continue };
        let Some((key, value)) = rest.split_once(':') else {
            return Err(format!("{}:{}: expected `# rdb-KEY: VALUE`", path.display(), i + 1));
        };
        let value = value.trim();
        match key {
            "program" => program = Some(crate::program(value)),
            "args" => args = shlex::split(value).ok_or(format!("{}:{}: bad quoting", path.display(), i + 1))?,
            "timeout" => timeout = value.parse().map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?,
            "support" => support.push(crate::repo_root().join("tests/gdb/support").join(value)),
            other => return Err(format!("{}:{}: unknown directive `{other}`", path.display(), i + 1)),
        }
    }
    let program = program.ok_or(format!("{}: no `# rdb-program:` line", path.display()))?;
    Ok(GdbScript { name, path: path.to_path_buf(), program, args, support, timeout })
}

impl GdbScript {
    /// Build, record, run gdb, compare.
    pub fn run(&self) -> Result<(), String> {
        let tmp = crate::scratch("gdb");
        let dir = tmp.path();
        let case = crate::cases::parse("programs", &self.program)?;
        let argv = case.program(dir)?;
        let trace = dir.join("trace");
        // `--no-cpuid-trap`: a trapped `cpuid` is an event, and only hosts with CPUID faulting
        // trap it, so the event numbers `monitor when` prints would depend on the host.
        let mut record = rdb_timed(self.timeout, &["record", "--no-cpuid-trap", "-o", trace.to_str().unwrap(), "--"]);
        // The dynamic loader searches every directory of LD_LIBRARY_PATH (cargo's test runner sets
        // one, longer under `cargo test --workspace`): each search is a recorded syscall, so the
        // event numbers `monitor when` prints would depend on how the test was started.
        record.args(&argv).current_dir(dir).env_remove("LD_LIBRARY_PATH");
        let rec = output(&mut record);
        if !text(&rec.stderr).contains("rdb: recorded") {
            return Err(format!("recording failed:\n{}", describe(&rec)));
        }
        let got = self.gdb(dir, &trace)?;
        let expected_path = self.path.with_extension("out");
        if std::env::var_os("RDB_BLESS").is_some() {
            std::fs::write(&expected_path, &got).map_err(|e| e.to_string())?;
            return Ok(());
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            return Err(format!(
                "gdb's session differs from {} (RDB_BLESS=1 rewrites it):\n{}",
                expected_path.display(),
                line_diff(&expected, &got)
            ));
        }
        Ok(())
    }

    /// `rdb gdb TRACE ARGS -- -batch -nx -x SCRIPT`, stdout and stderr as one stream, normalised.
    fn gdb(&self, dir: &Path, trace: &Path) -> Result<String, String> {
        let mut rdb = vec!["gdb".to_string(), trace.display().to_string()];
        for arg in &self.args {
            rdb.push(if arg == "{first-child}" { first_child(trace)? } else { arg.clone() });
        }
        rdb.extend(["--".into(), "-batch".into(), "-nx".into()]);
        for file in &self.support {
            rdb.extend(["-x".into(), file.display().to_string()]);
        }
        rdb.extend(["-x".into(), self.path.display().to_string()]);
        let line = rdb.iter().map(|a| shlex::try_quote(a).map(|q| q.into_owned())).collect::<Result<Vec<_>, _>>();
        let line = line.map_err(|e| e.to_string())?.join(" ");
        let rdb_bin = crate::tools().join("rdb");
        let mut command = crate::timed(self.timeout, "sh");
        command.arg("-c").arg(format!("exec {} {line} 2>&1", rdb_bin.display())).current_dir(dir);
        let out = output(&mut command);
        if out.status.code() == Some(crate::EXIT_TIMED_OUT) {
            return Err(format!("rdb gdb timed out after {} s:\n{}", self.timeout, text(&out.stdout)));
        }
        let root = crate::repo_root().display().to_string();
        let got = text(&out.stdout).replace(&root, "<repo>").replace(&dir.display().to_string(), "<scratch>");
        Ok(normalise(&got))
    }
}

/// The recorded id of the first process a recording started (from `rdb info --events`).
fn first_child(trace: &Path) -> Result<String, String> {
    let out = output(&mut rdb_timed(60, &["info", "--events", trace.to_str().unwrap()]));
    text(&out.stdout)
        .lines()
        .find_map(|l| l.split_once("new process ").and_then(|(_, rest)| rest.split_whitespace().next()))
        .map(str::to_string)
        .ok_or_else(|| format!("the recording started no process:\n{}", describe(&out)))
}

/// Replace what differs between recordings (see the module docs).
pub fn normalise(s: &str) -> String {
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("Thread 1.").or_else(|| rest.strip_prefix("Thread p1.")) {
            let digits = after.chars().take_while(|c| c.is_ascii_alphanumeric()).count();
            if digits > 0 {
                let next = ids.len() + 1;
                let n = *ids.entry(after[..digits].to_string()).or_insert(next);
                out.push_str(&format!("Thread 1.T{n}"));
                rest = pad(&mut out, &after[digits..]);
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("Target Id") {
            out.push_str("Target Id");
            rest = pad(&mut out, after);
            continue;
        }
        if let Some(after) = rest.strip_prefix("process ") {
            let digits = after.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 {
                out.push_str("process P");
                rest = &after[digits..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("0x7f").or_else(|| rest.strip_prefix("0x00007f")) {
            let digits = after.chars().take_while(|c| c.is_ascii_hexdigit()).count();
            if digits >= 8 {
                out.push_str("0x7f...");
                rest = &after[digits..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A column's padding (two spaces or more, as wide as the longest thread id) as four spaces.
fn pad<'a>(out: &mut String, rest: &'a str) -> &'a str {
    let spaces = rest.chars().take_while(|c| *c == ' ').count();
    if spaces < 2 {
        return rest;
    }
    out.push_str("    ");
    &rest[spaces..]
}

/// The lines that differ, marked `-` (expected) and `+` (got).
fn line_diff(expected: &str, got: &str) -> String {
    let (e, g): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), got.lines().collect());
    let mut out = String::new();
    for i in 0..e.len().max(g.len()) {
        match (e.get(i), g.get(i)) {
            (Some(a), Some(b)) if a == b => out.push_str(&format!("  {a}\n")),
            (a, b) => {
                if let Some(a) = a {
                    out.push_str(&format!("- {a}\n"));
                }
                if let Some(b) = b {
                    out.push_str(&format!("+ {b}\n"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn recorded_ids_and_stack_addresses_are_normalised() {
        let s = "[Switching to Thread 1.4242]\n  Id   Target Id         Frame \n* 1 Thread 1.4242   main\n  2 Thread 1.4243 f at 0x7ffff7dd1234\n[Inferior 1 (process 4242) exited normally]\nrip 0x555555555149 0x00007ffff7fcb060\n";
        assert_eq!(
            normalise(s),
            "[Switching to Thread 1.T1]\n  Id   Target Id    Frame \n* 1 Thread 1.T1    main\n  2 Thread 1.T2 f at 0x7f...\n[Inferior 1 (process P) exited normally]\nrip 0x555555555149 0x7f...\n"
        );
    }
}
