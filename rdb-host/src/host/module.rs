//! Loading a debug module into the host and finding its region functions.

use rdb_descriptors::{CALLBACK_TABLE_SECTION, REGION_TABLE_SECTION};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::path::Path;

use crate::sys;

/// A region's debug function: `extern "C" fn(argv: *const *const c_void)`.
pub(crate) type DebugFn = unsafe extern "C" fn(*const *const c_void);

/// Name of the optional slot a Rust debug module exports so that its
/// trampolines can report a caught panic to the host:
/// `#[no_mangle] static mut RDB_HOST_PANIC_HOOK: Option<unsafe extern "C" fn(*const u8, usize)>`.
pub const PANIC_HOOK_SYMBOL: &str = "RDB_HOST_PANIC_HOOK";

/// How to find one region's (or callback's) function.
pub(crate) enum Want {
    Symbol(String),
    RegionTable,
    CallbackTable,
}

pub(crate) struct Module {
    pub functions: HashMap<u32, DebugFn>,
}

/// The last panic message reported by the module during the current call.
pub(crate) static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

unsafe extern "C" fn report_panic(message: *const u8, len: usize) {
    let text = if message.is_null() {
        String::from("(no message)")
    } else {
        // SAFETY: the module passes a pointer to `len` bytes of its panic message.
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(message, len) }).into_owned()
    };
    if let Ok(mut slot) = PANIC.lock() {
        *slot = Some(text);
    }
}

/// Loads `path` and resolves every wanted region function; the error text
/// names every region that cannot be found.
pub(crate) fn load(path: &Path, wants: &[(u32, Want)]) -> Result<Module, String> {
    let c_path =
        CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| "path contains a NUL byte".to_string())?;
    let library = sys::Library::open(&c_path)?;
    let load_bias = library.load_bias()?;

    let hook = CString::new(PANIC_HOOK_SYMBOL).unwrap();
    if let Some(slot) = library.symbol(&hook) {
        let slot = slot as *mut c_void;
        // SAFETY: the module declares the slot as an `Option<unsafe extern "C" fn(*const u8, usize)>`.
        unsafe { *(slot as *mut Option<unsafe extern "C" fn(*const u8, usize)>) = Some(report_panic) };
    }

    let services = CString::new(rdb::SERVICES_SYMBOL).unwrap();
    if let Some(slot) = library.symbol(&services) {
        // SAFETY: the module's `rdb` crate declares the slot as `*const rdb::Services`; the
        // table is a static of this host.
        unsafe { *(slot as *mut *const rdb::Services) = &super::services::SERVICES };
    }

    let mut table: Option<HashMap<u32, u64>> = None;
    let mut callbacks: Option<HashMap<u32, u64>> = None;
    let mut functions = HashMap::new();
    let mut missing = Vec::new();
    for (region, want) in wants {
        let address = match want {
            Want::Symbol(name) => {
                let Ok(c_name) = CString::new(name.as_str()) else {
                    missing.push(format!("region {region}: symbol name `{name}` contains a NUL byte"));
                    continue;
                };
                match library.symbol(&c_name) {
                    Some(p) => p,
                    None => {
                        missing.push(format!("region {region}: no exported symbol `{name}`"));
                        continue;
                    }
                }
            }
            Want::RegionTable => {
                if table.is_none() {
                    table = Some(read_table(path, load_bias, REGION_TABLE_SECTION)?);
                }
                match table.as_ref().and_then(|t| t.get(region)) {
                    Some(&a) => a,
                    None => {
                        missing.push(format!("region {region}: no entry in section `{REGION_TABLE_SECTION}`"));
                        continue;
                    }
                }
            }
            Want::CallbackTable => {
                if callbacks.is_none() {
                    callbacks = Some(read_table(path, load_bias, CALLBACK_TABLE_SECTION)?);
                }
                match callbacks.as_ref().and_then(|t| t.get(region)) {
                    Some(&a) => a,
                    None => {
                        missing.push(format!("callback {region}: no entry in section `{CALLBACK_TABLE_SECTION}`"));
                        continue;
                    }
                }
            }
        };
        if !sys::object_at(address).is_some_and(|base| base == load_bias || load_bias == 0) {
            missing.push(format!("region {region}: function address {address:#x} is outside the module"));
            continue;
        }
        // SAFETY: the address is code of the module, with the documented calling convention.
        functions.insert(*region, unsafe { std::mem::transmute::<usize, DebugFn>(address as usize) });
    }
    if !missing.is_empty() {
        return Err(format!("{} (was the module built from the same source as the descriptors?)", missing.join("; ")));
    }
    Ok(Module { functions })
}

/// A table of the loaded module (`rdb_regions`, `rdb_callbacks`): the section's relocated
/// contents in memory (pairs of little-endian u64: id, function address).
fn read_table(path: &Path, load_bias: u64, name: &str) -> Result<HashMap<u32, u64>, String> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{} is not an ELF object: {e}", path.display()))?;
    let section =
        file.section_by_name(name).ok_or_else(|| format!("no section `{name}` (is this an rdb debug module?)"))?;
    let (address, size) = (section.address(), section.size());
    if address == 0 || size % 16 != 0 {
        return Err(format!("section `{name}` is not loaded or has a size ({size}) that is not a multiple of 16"));
    }
    let mut table = HashMap::new();
    for k in 0..size / 16 {
        let at = (load_bias + address + k * 16) as *const u64;
        // SAFETY: the section is allocated (SHF_ALLOC) and mapped with the module.
        let (id, function) = unsafe { (at.read_unaligned(), at.add(1).read_unaligned()) };
        let id = u32::try_from(id).map_err(|_| format!("id {id} in `{name}` is too large"))?;
        table.insert(id, function);
    }
    Ok(table)
}
