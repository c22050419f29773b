//! The loaded libraries as gdb's `qXfer:libraries-svr4:read` wants them, read from the
//! program's own dynamic-linker list (`r_debug` / `link_map`), as gdbserver does.
//!
//! The replay maps files as anonymous memory filled from the files (see the replayer), so
//! `/proc/PID/maps` names no library; the dynamic linker's list in the program's memory is the
//! program's own account and is exactly what was recorded.

use std::fmt::Write;

use rdb_tracee::procfs::auxv_get;
use rdb_tracee::Memory;

const AT_PHDR: u64 = 3;
const AT_PHNUM: u64 = 5;
const PT_DYNAMIC: u32 = 2;
const PT_PHDR: u32 = 6;
const DT_NULL: u64 = 0;
const DT_DEBUG: u64 = 21;
/// Longest list followed (a corrupt list must not loop forever).
const MAX_LIBRARIES: usize = 4096;

fn word(mem: &dyn Memory, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mem.read_exact(addr, &mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

fn c_string(mem: &dyn Memory, addr: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 64];
    while out.len() < 4096 {
        let n = mem.read_memory(addr + out.len() as u64, &mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        match chunk[..n].iter().position(|&b| b == 0) {
            Some(end) => {
                out.extend_from_slice(&chunk[..end]);
                return Some(out);
            }
            None => out.extend_from_slice(&chunk[..n]),
        }
    }
    None
}

/// The address of `r_debug`, from the main executable's `DT_DEBUG` entry (0 until the dynamic
/// linker filled it in; absent in a static executable).
fn r_debug(mem: &dyn Memory, auxv: &[u8]) -> Option<u64> {
    let phdr = auxv_get(auxv, AT_PHDR)?;
    let phnum = auxv_get(auxv, AT_PHNUM)?;
    let mut dynamic = None;
    let mut bias = None;
    for i in 0..phnum.min(256) {
        let mut ph = [0u8; 56];
        mem.read_exact(phdr + i * 56, &mut ph).ok()?;
        let kind = u32::from_le_bytes(ph[..4].try_into().ok()?);
        let vaddr = u64::from_le_bytes(ph[16..24].try_into().ok()?);
        match kind {
            PT_PHDR => bias = Some(phdr.wrapping_sub(vaddr)),
            PT_DYNAMIC => dynamic = Some(vaddr),
            _ => {}
        }
    }
    let dynamic = dynamic?.wrapping_add(bias.unwrap_or(0));
    for i in 0..4096 {
        let tag = word(mem, dynamic + i * 16)?;
        if tag == DT_NULL {
            return None;
        }
        if tag == DT_DEBUG {
            return word(mem, dynamic + i * 16 + 8).filter(|&a| a != 0);
        }
    }
    None
}

fn escape(s: &[u8]) -> String {
    let mut out = String::new();
    for c in String::from_utf8_lossy(s).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A loaded library, as the dynamic linker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    pub name: Vec<u8>,
    /// Its `struct link_map`.
    pub lm: u64,
    pub l_addr: u64,
    pub l_ld: u64,
}

/// The main program's `link_map` and the libraries, in load order.
pub fn libraries(mem: &dyn Memory, auxv: &[u8]) -> (Option<u64>, Vec<Library>) {
    let mut out = Vec::new();
    let mut main_lm = None;
    if let Some(r_debug) = r_debug(mem, auxv) {
        let mut lm = word(mem, r_debug + 8).unwrap_or(0);
        let mut seen = 0;
        while lm != 0 && seen < MAX_LIBRARIES {
            seen += 1;
            let (Some(l_addr), Some(l_name), Some(l_ld), Some(next)) =
                (word(mem, lm), word(mem, lm + 8), word(mem, lm + 16), word(mem, lm + 24))
            else {
                break;
            };
            let name = if l_name == 0 { Vec::new() } else { c_string(mem, l_name).unwrap_or_default() };
            if name.is_empty() {
                // The main program comes first with an empty name; later unnamed entries
                // (the vDSO) are not files.
                main_lm.get_or_insert(lm);
            } else {
                out.push(Library { name, lm, l_addr, l_ld });
            }
            lm = next;
        }
    }
    (main_lm, out)
}

/// The `<library-list-svr4>` document for a process with this memory and auxiliary vector.
pub fn library_list(mem: &dyn Memory, auxv: &[u8]) -> String {
    let (main_lm, list) = libraries(mem, auxv);
    let mut libraries = String::new();
    for l in list {
        let _ = write!(
            libraries,
            "<library name=\"{}\" lm=\"{:#x}\" l_addr=\"{:#x}\" l_ld=\"{:#x}\" lmid=\"0x0\"/>",
            escape(&l.name),
            l.lm,
            l.l_addr,
            l.l_ld
        );
    }
    let main = main_lm.map_or(String::new(), |lm| format!(" main-lm=\"{lm:#x}\""));
    format!("<library-list-svr4 version=\"1.0\"{main}>{libraries}</library-list-svr4>")
}
