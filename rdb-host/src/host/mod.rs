//! The host process: loads the debug module, mirrors the program, runs
//! region functions on request. Entered through [`host_main`].

mod mirror;
pub(crate) mod module;
pub(crate) mod services;

use crate::channel::{Channel, Mailbox, Received, Side};
use crate::protocol::{self, Reader, Writer};
use module::{Module, Want};
use std::ffi::c_void;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

/// Environment variable set in every host process rdb starts.
pub(crate) const HOST_ENV: &str = "RDB_DEBUG_HOST_CHILD";

/// For a program that serves as its own debug host
/// ([`crate::HostOptions::program`] = its own executable): call first thing
/// in `main`; in a host process started by [`crate::DebugHost`] it runs the
/// host and never returns, otherwise it returns at once.
pub fn run_if_host() {
    if std::env::var_os(HOST_ENV).is_some() {
        host_main()
    }
}

/// Entry point of the host process (`rdb-debug-host --fd N`, or a program
/// that re-executes itself with these arguments). Never returns.
pub fn host_main() -> ! {
    let args: Vec<String> = std::env::args().collect();
    let fd = match args.iter().position(|a| a == "--fd").and_then(|i| args.get(i + 1)).and_then(|s| s.parse().ok()) {
        Some(fd) => fd,
        None => {
            eprintln!("rdb-debug-host: this program is started by rdb (usage: rdb-debug-host --fd N)");
            std::process::exit(2)
        }
    };
    // The host must not outlive the replayer; a Ctrl-C at the terminal is for
    // rdb to handle (the host dies with it through PDEATHSIG), not for the host.
    rdb_tracee::this_process::die_with_parent();
    rdb_tracee::this_process::ignore_terminal_signals();
    let code = match serve(fd) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("rdb-debug-host: {message}");
            1
        }
    };
    std::process::exit(code)
}

/// One message from rdb (the host's errors are strings it reports before exiting).
fn recv(fd: i32, buf: &mut [u8]) -> Result<usize, String> {
    protocol::recv(fd, buf).map_err(|e| format!("receiving from rdb: {e}"))
}

/// One message to rdb.
fn send(fd: i32, message: &[u8]) -> Result<(), String> {
    protocol::send(fd, message).map_err(|e| format!("sending to rdb: {e}"))
}

fn serve(fd: i32) -> Result<(), String> {
    let mut buf = vec![0u8; protocol::MAX_MESSAGE + 64 * 1024];
    let n = recv(fd, &mut buf)?;
    let module = match init(fd, &buf[..n]) {
        Ok(m) => {
            let uffd = mirror::userfaultfd().is_some();
            send(fd, &Writer::new(protocol::READY).u32(uffd as u32).0)?;
            m
        }
        Err(e) => {
            send(fd, &Writer::new(protocol::INIT_ERROR).bytes(e.as_bytes()).0)?;
            return Ok(());
        }
    };
    let spin = SPIN.get().copied().unwrap_or_default();
    let mailbox = match MAILBOX.get().copied().flatten() {
        // SAFETY: the replayer passed this descriptor for us alone.
        Some(mfd) => {
            Some(Mailbox::map(unsafe { OwnedFd::from_raw_fd(mfd) }).map_err(|e| format!("mapping the mailbox: {e}"))?)
        }
        None => None,
    };
    let mut channel = Channel::new(fd, Side::Host, mailbox, spin);
    loop {
        let n = match channel.recv(&mut buf, None) {
            Ok(Received::Message(n)) => n,
            Ok(Received::TimedOut) => continue,
            Err(e) => return Err(format!("receiving from rdb: {e}")),
        };
        if n == 0 {
            return Ok(()); // rdb closed the connection
        }
        let mut r = Reader(&buf[..n]);
        match r.u32() {
            Some(protocol::INVOKE) => {
                let reply = invoke(&module, r).unwrap_or_else(|e| {
                    let mut w = Writer::new(protocol::DONE);
                    w.u32(protocol::STATUS_PROTOCOL)
                        .u32(0)
                        .bytes(b"")
                        .bytes(format!("malformed request: {e}").as_bytes());
                    w
                });
                channel.send(&reply.0).map_err(|e| format!("sending to rdb: {e}"))?;
            }
            other => return Err(format!("unexpected message {other:?}")),
        }
    }
}

/// How long the main loop busy-waits for the next request ([`crate::HostOptions::spin`]).
static SPIN: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
/// The mailbox descriptor the replayer passed, if any.
static MAILBOX: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();

fn init(fd: i32, message: &[u8]) -> Result<Module, String> {
    let bad = || "malformed init message".to_string();
    let mut r = Reader(message);
    if r.u32() != Some(protocol::INIT) {
        return Err(bad());
    }
    let pid = r.u32().ok_or_else(bad)? as i32;
    let fill = r.u32().ok_or_else(bad)?;
    let abort_on_write = r.u32().ok_or_else(bad)? != 0;
    let chunk_pages = r.u32().ok_or_else(bad)?.clamp(1, 256) as u64;
    let cpu = r.u32().ok_or_else(bad)?;
    let faults = r.u32().ok_or_else(bad)?;
    let spin = std::time::Duration::from_micros(r.u32().ok_or_else(bad)? as u64);
    let mailbox = r.u32().ok_or_else(bad)?;
    let tsc_disabled = r.u32().ok_or_else(bad)? != 0;
    let path = PathBuf::from(String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned());
    let binary = PathBuf::from(String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned());
    services::set_binary(binary);
    let mut line_maps = std::collections::HashMap::new();
    for _ in 0..r.u32().ok_or_else(bad)? {
        let file = PathBuf::from(String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned());
        let n = r.u32().ok_or_else(bad)?;
        let mut lines = Vec::with_capacity(n.min(1 << 20) as usize);
        for _ in 0..n {
            lines.push(r.u32().ok_or_else(bad)?);
        }
        line_maps.insert(file, lines);
    }
    services::set_line_maps(line_maps);
    let count = r.u32().ok_or_else(bad)?;
    let mut wants = Vec::new();
    for _ in 0..count {
        let region = r.u32().ok_or_else(bad)?;
        let kind = r.u32().ok_or_else(bad)?;
        let name = String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned();
        wants.push((
            region,
            match kind {
                0 => Want::Symbol(name),
                2 => Want::CallbackTable,
                _ => Want::RegionTable,
            },
        ));
    }
    let npatches = r.u32().ok_or_else(bad)? as usize;
    let mut patches = Vec::with_capacity(npatches.min(mirror::MAX_PATCHES));
    for _ in 0..npatches {
        let offset = r.u64().ok_or_else(bad)?;
        let byte = r.u32().ok_or_else(bad)? as u8;
        patches.push((offset, byte));
    }
    if patches.len() > mirror::MAX_PATCHES {
        return Err(format!(
            "{} breakpoint locations; the host restores at most {}",
            patches.len(),
            mirror::MAX_PATCHES
        ));
    }
    if cpu != u32::MAX {
        let _ = rdb_tracee::this_process::pin_to_cpu(cpu as usize);
    }
    // SAFETY: single-threaded host, before any debug code runs.
    let st = unsafe { mirror::state() };
    st.fd = fd;
    st.pid = pid;
    st.fill = fill;
    st.abort_on_write = abort_on_write;
    st.chunk = chunk_pages.next_power_of_two() * 4096;
    st.patches[..patches.len()].copy_from_slice(&patches);
    st.npatches = patches.len();
    SPIN.set(spin).ok();
    MAILBOX.set((mailbox != u32::MAX).then_some(mailbox as i32)).ok();
    if faults != protocol::FAULTS_SIGNAL {
        let opened = mirror::open_userfaultfd();
        if let (Err(why), protocol::FAULTS_USERFAULTFD) = (&opened, faults) {
            return Err(format!(
                "userfaultfd is not available to the debug host ({why}); it needs access to \
                 /dev/userfaultfd (root), or CAP_SYS_PTRACE or `sysctl vm.unprivileged_userfaultfd=1` \
                 on kernels without that device, or use the fault-handler mode"
            ));
        }
        if opened.is_ok() {
            std::thread::Builder::new()
                .name("rdb-uffd".into())
                .spawn(mirror::serve_userfaultfd)
                .map_err(|e| format!("cannot start the userfaultfd thread: {e}"))?;
        }
    }
    mirror::install_handlers();
    if tsc_disabled {
        mirror::disable_tsc().map_err(|e| format!("cannot disable the TSC: {e}"))?;
    }
    module::load(&path, &wants)
}

fn invoke(module: &Module, mut r: Reader<'_>) -> Result<Writer, &'static str> {
    let region = r.u32().ok_or("region")?;
    let flags = r.u32().ok_or("flags")?;
    let pid = r.u32().ok_or("pid")? as i32;
    let bias = r.u64().ok_or("load bias")?;
    let mut stop = services::StopRegs { regs: [0; 27], after_access: flags & protocol::FLAG_AFTER_ACCESS != 0 };
    for reg in &mut stop.regs {
        *reg = r.u64().ok_or("registers")?;
    }
    services::set_stop(Some(stop));
    // SAFETY: main loop, no debug code running.
    let st = unsafe { mirror::state() };
    st.pid = pid;
    st.bias = bias;
    if flags & protocol::FLAG_INVALIDATE != 0 {
        st.invalidate();
    }
    services::set_check_backtraces(flags & protocol::FLAG_CHECK_BACKTRACE != 0);
    services::take_checks();
    if flags & protocol::FLAG_MAPS != 0 {
        let before = r.0;
        let n = r.u32().ok_or("maps")? as usize;
        if r.0.len() < n * protocol::RANGE_SIZE {
            return Err("maps");
        }
        r.0 = &r.0[n * protocol::RANGE_SIZE..];
        if !st.apply_message(&before[..4 + n * protocol::RANGE_SIZE]) {
            return Err("maps");
        }
    }
    let count = r.u32().ok_or("arguments")?;
    // Register and constant values live in 16-byte aligned host storage.
    let mut storage: Vec<Vec<Aligned>> = Vec::new();
    let mut argv: Vec<*const c_void> = Vec::with_capacity(count as usize);
    let mut in_program: Vec<(u64, u64)> = Vec::new();
    // Records' pointers to other arguments: (storage index, byte offset, argument index).
    let mut fixups: Vec<(usize, usize, usize)> = Vec::new();
    // Copies of program memory: (host address, length, program address).
    let mut copies: Vec<(u64, u64, u64)> = Vec::new();
    for _ in 0..count {
        match r.u32().ok_or("argument")? {
            0 => {
                let address = r.u64().ok_or("argument")?;
                let size = r.u64().ok_or("argument")?;
                in_program.push((address, size));
                argv.push(address as *const c_void);
            }
            kind => {
                let bytes = r.bytes().ok_or("argument")?;
                let mut cell = vec![Aligned([0; 16]); bytes.len().div_ceil(16).max(1)];
                for (slot, chunk) in cell.iter_mut().zip(bytes.chunks(16)) {
                    slot.0[..chunk.len()].copy_from_slice(chunk);
                }
                if kind == 3 {
                    let from = r.u64().ok_or("copy")?;
                    copies.push((cell.as_ptr() as u64, bytes.len() as u64, from));
                }
                if kind == 2 {
                    for _ in 0..r.u32().ok_or("record")? {
                        let offset = r.u32().ok_or("record")? as usize;
                        let index = r.u32().ok_or("record")? as usize;
                        if offset + 8 > bytes.len() || index >= count as usize {
                            return Err("record pointer out of range");
                        }
                        fixups.push((storage.len(), offset, index));
                    }
                }
                argv.push(cell.as_ptr().cast());
                storage.push(cell);
            }
        }
    }
    for (cell, offset, index) in fixups {
        let address = (argv[index] as u64).to_le_bytes();
        let record = &mut storage[cell];
        for (i, b) in address.into_iter().enumerate() {
            let at = offset + i;
            record[at / 16].0[at % 16] = b;
        }
    }
    services::set_copies(copies);
    // A null after the last argument: a module expecting more arguments than
    // the descriptors give crashes on a null pointer, not on stray memory.
    argv.push(std::ptr::null());
    let mut reply = Writer::new(protocol::DONE);
    if st.ncollisions > 0 {
        let text = collision_report(&st.collisions[..st.ncollisions]);
        st.ncollisions = 0;
        reply.u32(protocol::STATUS_COLLISION).u32(0).bytes(b"").bytes(text.as_bytes());
        return Ok(reply);
    }
    if region == protocol::WATCH_REPORT {
        st.in_call = true;
        services::report_watch(&argv);
        // SAFETY: only reads the state after the report.
        let st = unsafe { mirror::state() };
        st.in_call = false;
        drop(storage);
        reply.u32(protocol::STATUS_RAN).u32(0).bytes(b"").bytes(b"").u32(0);
        return Ok(reply);
    }
    let Some(&function) = module.functions.get(&region) else {
        reply
            .u32(protocol::STATUS_PROTOCOL)
            .u32(0)
            .bytes(b"")
            .bytes(format!("region {region} was not loaded").as_bytes());
        return Ok(reply);
    };
    st.nwrites = 0;
    st.wrote = false;
    // Debug code is about to read its arguments: fill their pages now, in
    // one go, rather than one fault each.
    st.prefetch(&in_program);
    st.in_call = true;
    // SAFETY: the function has the documented calling convention and argv
    // holds one valid address per argument; program memory is mirrored
    // read-only and faults are handled by the mirror.
    unsafe { function(argv.as_ptr()) };
    // SAFETY: only reads the state after the call returned.
    let st = unsafe { mirror::state() };
    st.in_call = false;
    // The debug module's C stdio (shared libc in the host).
    crate::sys::flush_c_stdio();
    if st.wrote {
        // Discard the private copies the writes landed in.
        st.invalidate();
    }
    drop(storage);
    let status = if st.ncollisions > 0 { protocol::STATUS_RAN_WITH_COLLISION } else { protocol::STATUS_RAN };
    reply.u32(status).u32(st.nwrites as u32);
    for &w in &st.writes[..st.nwrites] {
        reply.u64(w);
    }
    let panic = module::PANIC.lock().ok().and_then(|mut p| p.take()).unwrap_or_default();
    reply.bytes(panic.as_bytes());
    let collisions = if st.ncollisions > 0 {
        let text = collision_report(&st.collisions[..st.ncollisions]);
        st.ncollisions = 0;
        text
    } else {
        String::new()
    };
    reply.bytes(collisions.as_bytes());
    let watches = services::take_watches();
    reply.u32(watches.len() as u32);
    for w in watches {
        reply.u64(w.address).u64(w.len).u32(w.access).bytes(w.label.as_bytes());
    }
    let checks = services::take_checks();
    reply.u32(checks.len() as u32);
    for c in checks {
        reply.u32(c.ok as u32).u32(c.line).u32(c.column);
        reply.bytes(c.condition.as_bytes()).bytes(c.message.as_bytes()).bytes(c.backtrace.as_bytes());
    }
    Ok(reply)
}

/// 16 bytes, 16-byte aligned: a slice of these is contiguous aligned storage.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Aligned([u8; 16]);

/// Describes program ranges that could not be mirrored because the host
/// has its own memory there.
fn collision_report(ranges: &[protocol::RangeSpec]) -> String {
    let own = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let own = rdb_tracee::procfs::parse_maps(&own);
    let mut parts = Vec::new();
    for r in ranges {
        let hits: Vec<String> = own
            .iter()
            .filter(|m| m.start < r.end && r.start < m.end)
            .map(|m| format!("{:#x}-{:#x} {}", m.start, m.end, if m.name.is_empty() { "(anonymous)" } else { &m.name }))
            .collect();
        parts.push(format!(
            "program range {:#x}-{:#x} overlaps the debug host's own {}",
            r.start,
            r.end,
            if hits.is_empty() { "memory".to_string() } else { hits.join(", ") }
        ));
    }
    format!(
        "{}; debug code could read the wrong bytes there. Record the program with ASLR disabled (rdb does by default) and retry",
        parts.join("; ")
    )
}
