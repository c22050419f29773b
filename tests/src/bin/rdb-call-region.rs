//! Loads a debug module and calls one region's debug function the way a
//! replayer does: through the `rdb_regions` table, with an `argv` of pointers.
//!
//! `rdb-call-region MODULE.so REGION-ID ARG...`, each ARG one of
//! `string:TEXT` (a `String`), `string-ref:TEXT` (a `&String`),
//! `usize:N`, `atomic-usize:N` (a `std::sync::atomic::AtomicUsize`).
//! `\n` in TEXT is a line break.

use object::{Object, ObjectSection};
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::AtomicUsize;

type DebugFn = unsafe extern "C" fn(*const *const c_void);

struct Found {
    path: CString,
    bias: u64,
}

unsafe extern "C" fn find_module(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> i32 {
    // SAFETY: dl_iterate_phdr passes a valid info; data is our `Found`.
    let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
    if info.dlpi_name.is_null() {
        return 0;
    }
    // SAFETY: non-null names are NUL-terminated strings owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dlpi_name) };
    if name == found.path.as_c_str() {
        found.bias = info.dlpi_addr;
        return 1;
    }
    0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: rdb-call-region MODULE.so REGION-ID ARG...");
        std::process::exit(2);
    }
    let module = std::fs::canonicalize(&args[1]).expect("module path");
    let id: u64 = args[2].parse().expect("region id");
    let path = CString::new(module.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: loading a shared object we built; its initialisers are Rust std's.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a valid C string after a failure.
        let err = unsafe { CStr::from_ptr(libc::dlerror()) };
        panic!("dlopen failed: {err:?}");
    }
    let mut found = Found { path, bias: u64::MAX };
    // SAFETY: the callback only reads the info it is given.
    unsafe { libc::dl_iterate_phdr(Some(find_module), &mut found as *mut Found as *mut c_void) };
    assert_ne!(found.bias, u64::MAX, "module not found among loaded objects");

    let data = std::fs::read(&module).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let section =
        file.section_by_name(rdb_descriptors::REGION_TABLE_SECTION).expect("module has no rdb_regions section");
    let table = (found.bias + section.address()) as *const [u64; 2];
    let entries = (section.size() / 16) as usize;
    let mut function = None;
    for i in 0..entries {
        // SAFETY: the section is mapped (allocated) and relocated by the loader.
        let [rid, addr] = unsafe { table.add(i).read() };
        if rid == id {
            function = Some(addr);
        }
    }
    let Some(addr) = function else { panic!("region {id} is not in the table ({entries} entries)") };

    // Hand-built arguments; leaked so they outlive the call.
    let mut argv: Vec<*const c_void> = Vec::new();
    for spec in &args[3..] {
        let (kind, value) = spec.split_once(':').expect("ARG is KIND:VALUE");
        let value = value.replace("\\n", "\n");
        let ptr: *const c_void = match kind {
            "string" => Box::into_raw(Box::new(value)) as *const c_void,
            "string-ref" => {
                let s: &'static String = Box::leak(Box::new(value));
                Box::into_raw(Box::new(s)) as *const c_void
            }
            "usize" => Box::into_raw(Box::new(value.parse::<usize>().unwrap())) as *const c_void,
            "atomic-usize" => Box::into_raw(Box::new(AtomicUsize::new(value.parse().unwrap()))) as *const c_void,
            other => panic!("unknown argument kind {other}"),
        };
        argv.push(ptr);
    }
    // SAFETY: the table entry is the region's debug function, whose argument
    // types the caller matched to the descriptors.
    let f: DebugFn = unsafe { std::mem::transmute(addr as usize) };
    unsafe { f(argv.as_ptr()) };
}
