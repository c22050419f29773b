//! Thread-local variables for gdb (`qGetTLSAddr`): the address of a variable at `offset` in the
//! TLS block of module `lm` (its `link_map`) for a thread, as gdbserver's libthread_db would
//! compute it.
//!
//! x86-64 glibc: the thread pointer (`fs_base`) points at the `tcbhead_t`, whose second word
//! is the dynamic thread vector (DTV); entry `modid` (16 bytes each) holds the module's block.
//! A block not allocated yet in the DTV is in static TLS at `fs_base - l_tls_offset`. Where
//! `l_tls_modid` and `l_tls_offset` sit in glibc's private `struct link_map` differs between
//! glibc versions; glibc says where in descriptors it exports for libthread_db
//! (`_thread_db_link_map_l_tls_modid`, `..._offset`: bit size, count, byte offset), which are
//! read from the libc the program loaded.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};
use rdb_tracee::Memory;

/// Where glibc keeps a module's TLS id and static offset in its `link_map`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkMapLayout {
    pub modid: u64,
    pub tls_offset: u64,
}

/// The layout glibc's libthread_db descriptors give, read from the libc file `libc`.
pub fn layout_from_libc(libc: &Path) -> Result<LinkMapLayout, String> {
    let data = std::fs::read(libc).map_err(|e| format!("cannot read {}: {e}", libc.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", libc.display()))?;
    let field = |name: &str| -> Result<u64, String> {
        let sym = file
            .dynamic_symbols()
            .chain(file.symbols())
            .find(|s| s.name() == Ok(name))
            .ok_or_else(|| format!("{} has no {name}", libc.display()))?;
        let section = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .ok_or_else(|| format!("{name} is in no section"))?;
        let bytes = section.data().map_err(|e| e.to_string())?;
        let at = (sym.address() - section.address()) as usize;
        let desc = bytes.get(at..at + 12).ok_or_else(|| format!("{name} is cut short"))?;
        // { bit size, element count, byte offset }
        Ok(u32::from_le_bytes(desc[8..12].try_into().expect("4 bytes")) as u64)
    };
    Ok(LinkMapLayout {
        modid: field("_thread_db_link_map_l_tls_modid")?,
        tls_offset: field("_thread_db_link_map_l_tls_offset")?,
    })
}

fn word(mem: &dyn Memory, addr: u64) -> Result<u64, String> {
    let mut b = [0u8; 8];
    mem.read_exact(addr, &mut b).map_err(|e| format!("cannot read {addr:#x}: {e}"))?;
    Ok(u64::from_le_bytes(b))
}

/// The address of the thread-local at `offset` of module `lm` for the thread whose thread
/// pointer is `fs_base`.
pub fn address(mem: &dyn Memory, layout: LinkMapLayout, fs_base: u64, lm: u64, offset: u64) -> Result<u64, String> {
    if fs_base == 0 {
        return Err("the thread has no thread pointer yet".into());
    }
    let modid = word(mem, lm + layout.modid)?;
    if modid == 0 {
        return Err("the module has no thread-local storage".into());
    }
    let dtv = word(mem, fs_base + 8)?;
    if dtv != 0 {
        let count = word(mem, dtv.wrapping_sub(16))?;
        if modid <= count {
            let block = word(mem, dtv + 16 * modid)?;
            if block != 0 && block != u64::MAX {
                return Ok(block + offset);
            }
        }
    }
    let tls_offset = word(mem, lm + layout.tls_offset)?;
    if tls_offset == 0 || tls_offset == u64::MAX || tls_offset == u64::MAX - 1 {
        return Err("the module's thread-local storage is not allocated for this thread yet".into());
    }
    Ok(fs_base.wrapping_sub(tls_offset) + offset)
}
