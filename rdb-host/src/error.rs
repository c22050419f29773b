//! Errors and outcomes of the debug host.

use rdb_descriptors::SourceLocation;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why the debug host could not do what was asked. The program is never
/// affected by any of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    #[error("cannot find the debug host executable `rdb-debug-host` (looked at {}); set RDB_DEBUG_HOST to its path or install it beside rdb", display_paths(.tried))]
    HostProgramNotFound { tried: Vec<PathBuf> },
    #[error("cannot start the debug host {program}: {source}")]
    Spawn { program: PathBuf, source: io::Error },
    #[error("debug host: {what}: {source}")]
    Io { what: &'static str, source: io::Error },
    #[error("cannot load debug module {module}: {message}")]
    Module { module: PathBuf, message: String },
    #[error("debug host protocol error: {0}")]
    Protocol(String),
    #[error("region {region} is not in the function descriptors of this debug module")]
    UnknownRegion { region: u32 },
    #[error("callback {id} is not in the function descriptors of this debug module")]
    UnknownCallback { id: u32 },
    #[error("region {region} ({source_location}) has no code location at address {address:#x}")]
    NoLocation { region: u32, address: u64, source_location: Loc },
    #[error("region {region} ({source_location}): argument `{name}` (position {position}) is {reason}; the region was not run")]
    ArgumentUnavailable { region: u32, position: u32, name: String, reason: String, source_location: Loc },
    #[error(
        "region {region} ({source_location}): cannot read argument `{name}` from the program at {address:#x}: {source}"
    )]
    ReadArgument { region: u32, name: String, address: u64, source_location: Loc, source: io::Error },
    #[error("cannot mirror the program's memory in the debug host: {0}")]
    Collision(String),
    #[error("cannot read the program's mappings: {0}")]
    Mappings(io::Error),
    #[error(transparent)]
    Descriptors(#[from] rdb_descriptors::Error),
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// A source location printed as `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc(pub SourceLocation);

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.0.file.display(), self.0.line, self.0.column)
    }
}

/// What happened when a region's debug function ran.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvokeOutcome {
    /// It returned normally.
    Completed,
    /// It wrote program memory (first write per page, in order). The
    /// writes landed in the host's private copy only and were discarded
    /// after the call; the program is unchanged. With
    /// [`crate::WritePolicy::Abort`] the call was stopped at the first write.
    WroteProgramMemory { addresses: Vec<u64>, aborted: bool },
    /// It panicked (Rust debug code whose trampoline caught the panic).
    Panicked { message: String },
    /// The host died of `signal` (e.g. SIGSEGV at `address` on a bad pointer).
    Crashed { signal: i32, address: Option<u64>, reason: String },
    /// It did not return within the timeout; the host was killed.
    TimedOut { after: Duration },
}

/// The report of one region hit (or event callback call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The region's id (or the callback's).
    pub region: u32,
    /// For an event callback: its name (then `source_location` is its attribute).
    pub callback: Option<String>,
    /// Where the region is written (its `rdb_begin` marker).
    pub source_location: Loc,
    pub outcome: InvokeOutcome,
    /// The host process was replaced after this call (crash, timeout,
    /// aborted write): debug-only state (statics, heap data) was lost.
    pub host_restarted: bool,
}

impl Invocation {
    /// Whether the debug function ran to its end without any problem.
    pub fn is_clean(&self) -> bool {
        self.outcome == InvokeOutcome::Completed
    }
}

impl fmt::Display for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.callback {
            Some(name) => write!(f, "callback `{name}` ({}): ", self.source_location)?,
            None => write!(f, "region {} ({}): ", self.region, self.source_location)?,
        }
        match &self.outcome {
            InvokeOutcome::Completed => write!(f, "completed")?,
            InvokeOutcome::WroteProgramMemory { addresses, aborted } => {
                let list: Vec<String> = addresses.iter().map(|a| format!("{a:#x}")).collect();
                write!(
                    f,
                    "debug code wrote program memory at {}; debug code must only read the program's memory. \
                     The program is unchanged{}",
                    list.join(", "),
                    if *aborted { " and the call was stopped" } else { " (the write went to a discarded copy)" }
                )?
            }
            InvokeOutcome::Panicked { message } => write!(f, "debug code panicked: {message}")?,
            InvokeOutcome::Crashed { signal, address, reason } => {
                match signal_name(*signal) {
                    "signal" => write!(f, "debug code crashed with signal {signal}")?,
                    name => write!(f, "debug code crashed with {name}")?,
                }
                if let Some(a) = address {
                    write!(f, " at {a:#x}")?;
                }
                if !reason.is_empty() {
                    write!(f, ": {reason}")?;
                }
            }
            InvokeOutcome::TimedOut { after } => {
                write!(f, "debug code did not return within {:.1} s and was stopped", after.as_secs_f64())?
            }
        }
        if self.host_restarted {
            write!(f, "; the debug host was restarted, debug-only state (statics, heap data) was lost")?;
        }
        Ok(())
    }
}

/// A short name for a signal number.
pub(crate) fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSYS => "SIGSYS",
        _ => "signal",
        // Keep in sync with the Display of `Crashed`.
    }
}
