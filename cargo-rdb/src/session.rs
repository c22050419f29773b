//! `cargo rdb record` and `cargo rdb replay`: build, then hand over to `rdb`.
//!
//! `cargo rdb replay` finds the trace first (a path, a name in the trace root, the latest
//! recording, or a packed trace, as `rdb replay` does) so that a wrong name fails before
//! anything builds, and checks the built main binary against the recorded executable itself:
//! when they differ it says why (the stripped build's warnings about code only debug code
//! uses, then what `rdb_locate::build` finds: toolchain, directory, profile, locked versions,
//! the first differing section and function) instead of starting a replay.

use crate::build;
use crate::opts::{BuildArgs, RecordArgs, ReplayArgs};
use crate::why::Suspect;
use anyhow::{bail, Context, Result};
use rdb_runtime::trace::{root, Trace};
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
fn build_one(args: &BuildArgs, want: Option<&str>) -> Result<(PathBuf, build::Built)> {
    let mut args = args.clone();
    args.print_paths = false;
    let built = build::run(&args)?;
    if let [(_, bin)] = built.binaries.as_slice() {
        return Ok((bin.clone(), built));
    }
    if let Some(name) = want {
        if let Some((_, bin)) = built.binaries.iter().find(|(n, _)| n == name) {
            return Ok((bin.clone(), built));
        }
    }
    let names: Vec<&str> = built.binaries.iter().map(|(n, _)| n.as_str()).collect();
    bail!("several binaries were built ({}): choose one with --bin NAME", names.join(", "))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

const NO_RDB: &str = "cannot run `rdb` (build it with `cargo build -p rdb-cli` or put it on PATH)";

pub fn record(args: &RecordArgs) -> Result<i32> {
    let (bin, _) = build_one(&args.build, None)?;
    let mut cmd = rdb_command();
    cmd.arg("record");
    if let Some(o) = &args.output {
        cmd.arg("-o").arg(o);
    }
    cmd.arg("--").arg(&bin).args(&args.args);
    let status = cmd.status().context(NO_RDB)?;
    Ok(exit_code(status))
}

pub fn replay(args: &ReplayArgs) -> Result<i32> {
    // Before building: a trace that is not there fails at once.
    let resolved = root::resolve(args.trace.as_deref())?;
    let (header, _) = Trace::peek(&resolved.dir)?;
    let want = Path::new(&header.program).file_name().map(|n| n.to_string_lossy().into_owned());
    let (mut bin, built) = build_one(&args.build, want.as_deref())?;
    let hash_of =
        |bin: &Path| rdb_descriptors::hash_file(bin).with_context(|| format!("cannot read {}", bin.display()));
    if hash_of(&bin)? != header.program_blake3 {
        // A plain `cargo build` of a manifest that declares `rdb-macros` links another
        // binary than one without it (cargo hashes every dependency into the symbol
        // names), and the recording may have been made either way: try the other.
        let other_variant = built.declares_rdb_dependencies && !args.build.keep_rdb_dependencies;
        let mut found = false;
        if other_variant {
            let mut kept = args.build.clone();
            kept.keep_rdb_dependencies = true;
            kept.quiet = true;
            let (other, _) = build_one(&kept, want.as_deref())?;
            crate::term::set_quiet(args.build.quiet);
            if hash_of(&other)? == header.program_blake3 {
                crate::term::status(
                    "Matched",
                    "the recorded program was built with the `rdb-macros` dependency the manifest declares \
                     (`cargo rdb build --keep-rdb-dependencies` builds it that way)",
                );
                bin = other;
                found = true;
            }
        }
        if !found {
            bail!(mismatch(&resolved.dir, &header.program, &bin, &built.suspects, other_variant));
        }
    }
    let mut cmd = rdb_command();
    // The unpacked copy of a packed trace, so that it is not unpacked twice.
    cmd.arg("replay").arg(&resolved.dir);
    cmd.arg("--debug").arg(&bin);
    if let Some(t) = args.region_timeout {
        cmd.arg("--region-timeout").arg(t.to_string());
    }
    let status = cmd.status().context(NO_RDB)?;
    Ok(exit_code(status))
}

/// Why the binary built from the current source is not the recorded program.
fn mismatch(trace_dir: &Path, program: &str, bin: &Path, suspects: &[Suspect], both_tried: bool) -> String {
    let mut why: Vec<String> = Vec::new();
    // The source's own evidence first: it names the user's line and the fix. Uncertain
    // findings only when nothing certain was found.
    let certain: Vec<&Suspect> = suspects.iter().filter(|s| s.certain).collect();
    let shown: Vec<&Suspect> = if certain.is_empty() { suspects.iter().collect() } else { certain };
    why.extend(shown.iter().map(|s| s.to_string()));
    if both_tried {
        why.push(
            "built both without and with the `rdb-macros` dependency the manifest declares: neither is the \
             recorded program (what follows compares the build with it)"
                .into(),
        );
    }
    match Trace::open(trace_dir) {
        Ok(trace) => {
            let h = trace.header();
            let recorded = h.program_build.as_ref().filter(|b| b.blake3 == h.program_blake3);
            match rdb_locate::build::differences(recorded, trace.recorded_executable().as_deref(), bin) {
                Ok(found) => why.extend(found.iter().map(ToString::to_string)),
                Err(e) => why.push(format!("(cannot compare the builds: {e})")),
            }
        }
        Err(e) => why.push(format!("(cannot read the trace to compare the builds: {e})")),
    }
    let mut text = format!(
        "the main binary built from the current source ({}) is not the program the trace recorded ({program})",
        bin.display()
    );
    if !why.is_empty() {
        text.push_str("\nwhat differs:");
        for line in why {
            text.push_str("\n  - ");
            text.push_str(&line);
        }
    }
    text.push_str(
        "\nhelp: only code inside rdb_begin!/rdb_end! regions and #[debug_only] items may change between recording \
         and replay; build with the profile the program was recorded with (--release, --profile NAME)",
    );
    text
}
