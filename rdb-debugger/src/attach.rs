//! Regions on a target some other program controls: a GDB stub (`rdb attach --remote`), or
//! anything else implementing the tracee layer's [`Control`]. The same [`Regions`] as rdb's
//! own replay runs them; only the driving differs: plant a breakpoint at every region location,
//! resume, run the regions at each breakpoint stop, until the program exits.

use std::path::{Path, PathBuf};

use rdb_host::{HostOptions, MemoryAccess};
use rdb_tracee::{Control, Stop, Target};

use crate::regions::{RegionReport, Regions};
use crate::{blake3_file, check_descriptors, DebugError};

/// What to attach, and with which regions.
#[derive(Debug)]
pub struct AttachOptions {
    /// The rebuilt main binary; its debug module and descriptors sit beside it.
    pub binary: PathBuf,
    /// A local copy of the executable the target runs (the stub's `qXfer:exec-file`, or the
    /// user's `--exe`): its hash must be the binary's. Without one, the target's loaded code
    /// is compared with the binary's instead.
    pub exe: Option<PathBuf>,
    pub host: HostOptions,
}

/// How a run on a controlled target went.
#[derive(Debug)]
pub struct AttachOutcome {
    /// Raw wait status of the program.
    pub exit_status: i32,
    /// Breakpoint stops that ran regions.
    pub stops: u64,
    pub report: RegionReport,
}

/// Runs the binary's regions on `target` (stopped, not yet at a region) until its program
/// exits. The debug host reads memory through the target ([`MemoryAccess::ViaReplayer`]):
/// a remote program's memory is not this machine's to read.
pub fn run_on_target(target: &mut dyn Control, options: AttachOptions) -> Result<AttachOutcome, DebugError> {
    let hash = blake3_file(&options.binary)?;
    match &options.exe {
        Some(exe) => {
            let actual = blake3_file(exe)?;
            if actual != hash {
                return Err(DebugError::NotTheRunningExecutable {
                    binary: options.binary.clone(),
                    exe: exe.clone(),
                    expected: actual,
                    actual: hash,
                });
            }
        }
        None => check_loaded_code(target, &options.binary)?,
    }
    let functions = check_descriptors(&options.binary, &hash)?;
    if !functions.callbacks.is_empty() {
        // Said, not silently skipped: callbacks need rdb's own replay (its syscall stops and
        // debug registers).
        eprintln!(
            "rdb: warning: the {} event callback(s) of {} do not run over the GDB remote protocol, only its regions: \
             use `rdb replay --debug` or `rdb gdb --debug` on a recording for callbacks",
            functions.callbacks.len(),
            options.binary.display()
        );
    }
    let mut host = options.host;
    host.memory = MemoryAccess::ViaReplayer;
    let mut regions = Regions::start(&options.binary, &functions, host)?;
    let bias = target.load_bias();
    for addr in regions.breakpoints(bias) {
        target.set_breakpoint(addr).map_err(|source| DebugError::Target {
            what: format!("planting a breakpoint at {addr:#x}"),
            calls: 0,
            source,
        })?;
    }
    let mut stops = 0;
    loop {
        let stop = target.resume().map_err(|source| DebugError::Target {
            what: "while the program ran".into(),
            calls: regions.calls(),
            source,
        })?;
        match stop {
            Stop::Breakpoint { addr } => {
                stops += 1;
                regions.run_at(addr, &*target);
            }
            Stop::Exited(status) => {
                return Ok(AttachOutcome { exit_status: status, stops, report: regions.report() });
            }
            // The target delivers a signal when resumed; other stops are not rdb's.
            Stop::Signal(_) | Stop::Stepped | Stop::Watchpoint { .. } | Stop::Syscall { .. } => {}
        }
    }
}

/// Without the executable's file: the code the target has loaded must be the binary's, byte
/// for byte (every executable segment, read through the target at the load bias).
fn check_loaded_code(target: &dyn Target, binary: &Path) -> Result<(), DebugError> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let data = std::fs::read(binary).map_err(|source| DebugError::Io { path: binary.to_path_buf(), source })?;
    let file = ElfFile64::<object::Endianness>::parse(&*data).map_err(|e| DebugError::Io {
        path: binary.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let endian = file.endian();
    let bias = target.load_bias();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) != object::elf::PT_LOAD || ph.p_flags(endian) & object::elf::PF_X == 0 {
            continue;
        }
        let (offset, size) = (ph.p_offset(endian) as usize, ph.p_filesz(endian) as usize);
        let Some(want) = data.get(offset..offset.saturating_add(size)) else { continue };
        let start = ph.p_vaddr(endian).wrapping_add(bias);
        let mut got = vec![0u8; size];
        let n = target.read_memory(start, &mut got).map_err(|source| DebugError::Target {
            what: format!("reading the program's code at {start:#x}"),
            calls: 0,
            source,
        })?;
        if let Some(i) = (0..size).find(|&i| i >= n || got[i] != want[i]) {
            return Err(DebugError::CodeDiffers { binary: binary.to_path_buf(), address: start + i as u64 });
        }
    }
    Ok(())
}
