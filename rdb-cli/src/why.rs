//! What rdb knows about the recorded program's build: said before a recording when a later
//! replay with regions will lack something ([`describe_for_recording`]), and used to explain
//! why a rebuilt binary is not the recorded one ([`explain_mismatch`]). The facts and the
//! comparison are the locator's (`rdb_locate::build`).

use std::ffi::OsStr;
use std::path::Path;

use rdb_descriptors::ProgramBuild;
use rdb_runtime::trace::Trace;

/// What the program about to be recorded tells about its build (for the trace header), after
/// warning on stderr when a later `--debug` replay will lack something. `None` for a program
/// that is not found or not an ELF file (the recorder reports the former).
pub fn describe_for_recording(program: &OsStr) -> Option<ProgramBuild> {
    let exe = rdb_runtime::record::resolve_program(program)?;
    let build = rdb_locate::build::describe(&exe).ok()?;
    if let Some(advice) = rdb_locate::build::recording_advice(&build, &exe) {
        // Every line of rdb's own starts with `rdb: `, apart from the program's stderr.
        for (i, line) in advice.lines().enumerate() {
            eprintln!("rdb: {}{line}", if i == 0 { "warning: " } else { "" });
        }
    }
    Some(build)
}

/// Lines saying why `binary` differs from the program recorded in `trace_dir`, causes first;
/// empty when nothing can be said.
pub fn differences(trace_dir: &Path, binary: &Path) -> Vec<String> {
    let Ok(trace) = Trace::open(trace_dir) else { return Vec::new() };
    let header = trace.header();
    let recorded = header.program_build.as_ref().filter(|b| b.blake3 == header.program_blake3);
    match rdb_locate::build::differences(recorded, trace.recorded_executable().as_deref(), binary) {
        Ok(found) => found.iter().map(ToString::to_string).collect(),
        Err(e) => vec![format!("(cannot compare the builds: {e})")],
    }
}

/// The identity error of `rdb replay --debug`, with what differs.
pub fn explain_mismatch(mismatch: rdb_debugger::DebugError, trace_dir: &Path, binary: &Path) -> anyhow::Error {
    let why = differences(trace_dir, binary);
    if why.is_empty() {
        return mismatch.into();
    }
    let mut text = format!("{mismatch}\nwhat differs:");
    for line in why {
        text.push_str("\n  - ");
        text.push_str(&line);
    }
    anyhow::anyhow!(text)
}
