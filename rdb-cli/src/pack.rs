//! `rdb pack`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use rdb_runtime::trace::{pack, Trace};

use crate::traces;

/// Make one portable file of a trace, to replay it elsewhere
///
/// The file (a zstd-compressed tar) holds the trace's events and every file it keeps (the
/// executable and the mapped libraries and files). `rdb replay FILE` replays it, here or on
/// another machine of the same kind (replay says what differs when the CPU or kernel does).
/// The pack holds everything the trace does (the environment, everything the program read):
/// share it only with people who may see that.
#[derive(clap::Args)]
pub struct Args {
    /// Trace directory or trace name in the trace root (default: the latest recording).
    trace: Option<PathBuf>,
    /// The file to write (default: `<trace directory>.tar.zst` beside the trace).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<i32> {
    let resolved = traces::resolve(a.trace)?;
    if resolved.pack.is_some() {
        bail!("{} is already a packed trace", resolved.dir.display());
    }
    let trace = Trace::open(&resolved.dir)?;
    let out = match a.output {
        Some(o) => o,
        None => {
            let mut name = trace.path().as_os_str().to_owned();
            name.push(traces::PACK_SUFFIX);
            PathBuf::from(name)
        }
    };
    let outcome = pack::pack(&trace, &out)?;
    for (path, why) in &outcome.missing {
        eprintln!("rdb: warning: {path} is not in the pack ({why}): replaying the pack will need it, unchanged");
    }
    eprintln!(
        "rdb: packed {} with {} files into {} ({} bytes)",
        trace.path().display(),
        outcome.files,
        out.display(),
        outcome.bytes
    );
    Ok(0)
}
