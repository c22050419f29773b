//! `cargo rdb record` and `cargo rdb replay`: build, then hand over to `rdb`.

use crate::build;
use crate::opts::{BuildArgs, RecordArgs, ReplayArgs};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `rdb` command: `$RDB`, else beside this executable, else on `PATH`.
fn rdb_command() -> Command {
    if let Some(p) = std::env::var_os("RDB") {
        return Command::new(p);
    }
    if let Some(p) = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join("rdb"))) {
        if p.is_file() {
            return Command::new(p);
        }
    }
    Command::new("rdb")
}

/// Builds and picks the one binary to use: the only one built, or the one
/// whose name matches `want` (the recorded program's file name).
fn build_one(args: &BuildArgs, want: Option<&str>) -> Result<PathBuf> {
    let mut args = args.clone();
    args.print_paths = false;
    let built = build::run(&args)?;
    if let [(_, bin)] = built.as_slice() {
        return Ok(bin.clone());
    }
    if let Some(name) = want {
        if let Some((_, bin)) = built.iter().find(|(n, _)| n == name) {
            return Ok(bin.clone());
        }
    }
    let names: Vec<&str> = built.iter().map(|(n, _)| n.as_str()).collect();
    bail!("several binaries were built ({}): choose one with --bin NAME", names.join(", "))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

pub fn record(args: &RecordArgs) -> Result<i32> {
    let bin = build_one(&args.build, None)?;
    let mut cmd = rdb_command();
    cmd.arg("record");
    if let Some(o) = &args.output {
        cmd.arg("-o").arg(o);
    }
    cmd.arg("--").arg(&bin).args(&args.args);
    let status = cmd.status().context("cannot run `rdb` (build it with `cargo build -p rdb-cli` or put it on PATH)")?;
    Ok(exit_code(status))
}

/// The recorded program's file name, from the trace header.
fn recorded_program(trace: Option<&Path>) -> Option<String> {
    let (header, _) = rdb_runtime::trace::Trace::peek(trace?).ok()?;
    Path::new(&header.program).file_name().map(|n| n.to_string_lossy().into_owned())
}

pub fn replay(args: &ReplayArgs) -> Result<i32> {
    let want = recorded_program(args.trace.as_deref());
    let bin = build_one(&args.build, want.as_deref())?;
    let mut cmd = rdb_command();
    cmd.arg("replay");
    if let Some(t) = &args.trace {
        cmd.arg(t);
    }
    cmd.arg("--debug").arg(&bin);
    if let Some(t) = args.region_timeout {
        cmd.arg("--region-timeout").arg(t.to_string());
    }
    let status = cmd.status().context("cannot run `rdb` (build it with `cargo build -p rdb-cli` or put it on PATH)")?;
    Ok(exit_code(status))
}
