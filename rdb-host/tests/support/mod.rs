//! Test support: fixture builds, and a live program stopped under ptrace at
//! a breakpoint (ASLR off, as rdb records).

#![allow(dead_code)]

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use rdb_descriptors::*;
use rdb_tracee::{Memory, Regs, Target};
use std::io::{self, IoSliceMut};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Built fixtures, once per test binary.
pub struct Fixtures {
    pub dir: PathBuf,
    pub program: PathBuf,
    pub c_module: PathBuf,
    pub rust_module: PathBuf,
}

pub fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::Builder::new().prefix("rdb-host-test").tempdir().unwrap().keep();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let program = dir.join("program");
        run(rdb_tests::timed(600, "clang-14").args(["-O0", "-g", "-o"]).arg(&program).arg(src.join("program.c")));
        let c_module = dir.join("module.so");
        run(rdb_tests::timed(600, "clang-14")
            .args(["-O1", "-g", "-shared", "-fPIC", "-o"])
            .arg(&c_module)
            .arg(src.join("module.c")));
        let rust_module = dir.join("rust_module.so");
        run(rdb_tests::timed(600, std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--edition", "2021", "--crate-type", "cdylib", "-C", "link-dead-code", "-o"])
            .arg(&rust_module)
            .arg(src.join("module.rs")));
        Fixtures { dir, program, c_module, rust_module }
    })
}

fn run(cmd: &mut Command) {
    rdb_tests::run_ok("building a fixture", cmd);
}

/// Module-relative address of a symbol of `binary`, and whether it is PIE.
pub fn symbol(binary: &Path, name: &str) -> (u64, bool) {
    rdb_tests::symbol(binary, name)
}

/// The program's output when run without any tracing.
pub fn plain_run(args: &[&str]) -> String {
    let out = Command::new(&fixtures().program).args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// A live program, stopped at a breakpoint on `checkpoint`.
pub struct Live {
    pub pid: Pid,
    pub regs: Regs,
    pub bias: u64,
    pub breakpoint: u64,
    original: i64,
    pub output: PathBuf,
    exited: bool,
}

impl Live {
    /// Starts the program under ptrace (ASLR off), with a breakpoint at
    /// `checkpoint`; returns once stopped at the first hit.
    pub fn start(args: &[&str], tag: &str) -> Live {
        let f = fixtures();
        let output = f.dir.join(format!("program-{tag}.out"));
        let mut cmd = Command::new(&f.program);
        cmd.args(args).stdin(Stdio::null()).stdout(std::fs::File::create(&output).unwrap());
        // SAFETY: personality and ptrace(TRACEME) are async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::personality::set(nix::sys::personality::Persona::ADDR_NO_RANDOMIZE)
                    .map_err(io::Error::from)?;
                ptrace::traceme().map_err(io::Error::from)
            });
        }
        let child = cmd.spawn().unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        std::mem::forget(child);
        match waitpid(pid, None).unwrap() {
            WaitStatus::Stopped(_, Signal::SIGTRAP) => {}
            other => panic!("unexpected first stop {other:?}"),
        }
        ptrace::setoptions(pid, ptrace::Options::PTRACE_O_EXITKILL).unwrap();
        let (address, pie) = symbol(&f.program, "checkpoint");
        let bias = if pie { load_bias(pid.as_raw(), &f.program) } else { 0 };
        let breakpoint = address + bias;
        let original = ptrace::read(pid, breakpoint as ptrace::AddressType).unwrap();
        let patched = (original & !0xff) | 0xcc;
        ptrace::write(pid, breakpoint as ptrace::AddressType, patched).unwrap();
        // SAFETY: zeroed registers, overwritten at the first stop.
        let regs = unsafe { std::mem::zeroed() };
        let mut live = Live { pid, regs, bias, breakpoint, original, output, exited: false };
        assert!(live.resume(), "the program exited before its first checkpoint");
        live
    }

    /// Resumes the program until the next breakpoint hit (true) or its exit (false).
    pub fn resume(&mut self) -> bool {
        if self.exited {
            return false;
        }
        if self.regs.rip == self.breakpoint {
            // Step over the breakpoint with the original instruction in place.
            ptrace::write(self.pid, self.breakpoint as ptrace::AddressType, self.original).unwrap();
            ptrace::step(self.pid, None).unwrap();
            assert!(matches!(waitpid(self.pid, None).unwrap(), WaitStatus::Stopped(_, Signal::SIGTRAP)));
            let patched = (self.original & !0xff) | 0xcc;
            ptrace::write(self.pid, self.breakpoint as ptrace::AddressType, patched).unwrap();
        }
        ptrace::cont(self.pid, None).unwrap();
        match waitpid(self.pid, None).unwrap() {
            WaitStatus::Stopped(_, Signal::SIGTRAP) => {
                let mut regs = ptrace::getregs(self.pid).unwrap();
                assert_eq!(regs.rip - 1, self.breakpoint, "stopped elsewhere");
                regs.rip = self.breakpoint;
                ptrace::setregs(self.pid, regs).unwrap();
                self.regs = regs;
                true
            }
            WaitStatus::Exited(_, 0) => {
                self.exited = true;
                false
            }
            other => panic!("unexpected stop {other:?}"),
        }
    }

    /// Runs the program to its end; returns its output.
    pub fn finish(mut self) -> String {
        while self.resume() {}
        std::fs::read_to_string(&self.output).unwrap()
    }

    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read_exact(addr, &mut b).unwrap();
        u64::from_le_bytes(b)
    }

    /// Module-relative address of the breakpoint.
    pub fn location(&self) -> u64 {
        self.breakpoint - self.bias
    }
}

impl Memory for Live {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
        let len = buf.len();
        Ok(process_vm_readv(self.pid, &mut [IoSliceMut::new(buf)], &[RemoteIoVec { base: addr as usize, len }])?)
    }
}

impl Target for Live {
    fn tid(&self) -> rdb_tracee::Pid {
        rdb_tracee::Pid(self.pid.as_raw())
    }
    fn regs(&self) -> &Regs {
        &self.regs
    }
    fn load_bias(&self) -> u64 {
        self.bias
    }
}

fn load_bias(pid: i32, program: &Path) -> u64 {
    let maps = rdb_tracee::procfs::maps(rdb_tracee::Pid(pid)).unwrap();
    let canonical = program.canonicalize().unwrap();
    maps.iter().find(|m| Path::new(&m.name) == canonical).expect("program mapping").start
}

/// Descriptors for the fixture: regions 1-6 of the C module (symbols
/// `__rdb_entry_N`) or regions 10-11 of the Rust module (region table), all
/// placed at `checkpoint` with the same five arguments.
pub fn descriptors(
    location: u64,
    regions: &[u32],
    entry: fn(u32) -> DebugEntry,
) -> (FunctionDescriptors, ArgumentDescriptors) {
    let f = fixtures();
    let identity = BinaryIdentity { path: f.program.clone(), size: 0, blake3: String::new() };
    let mut functions = FunctionDescriptors::new(Language::C, "clang-14".into(), identity, "module.so".into());
    let mut arguments = ArgumentDescriptors::new();
    let (counter, _) = symbol(&f.program, "counter");
    let (message, _) = symbol(&f.program, "message");
    let (big, _) = symbol(&f.program, "big");
    let (len_fn, _) = symbol(&f.program, "len_fn");
    let (checkpoint_fn, _) = symbol(&f.program, "checkpoint_fn");
    let src = |line| SourceLocation { file: "program.c".into(), line, column: 5 };
    for &region in regions {
        functions.functions.push(FunctionDescriptor {
            region,
            entry: entry(region),
            begin: src(region * 10),
            end: src(region * 10 + 2),
            anchor: src(region * 10 + 3),
            function: EnclosingFunction { name: "checkpoint".into(), linkage_name: None },
            locations: vec![CodeLocation { address: location, symbol: "checkpoint".into(), offset: 0, entry_id: None }],
            note: None,
            unserved: Vec::new(),
        });
        let args = [
            ("head", 8, Location::Register { register: Register::x86_64(5) }),
            ("i", 8, Location::Register { register: Register::x86_64(4) }),
            ("counter", 8, Location::Symbol { symbol: "counter".into(), offset: 0, address: counter }),
            ("local", 8, Location::Stack { base: Register::x86_64(1), offset: 0 }),
            ("message", 64, Location::Symbol { symbol: "message".into(), offset: 0, address: message }),
            ("big", 8, Location::Symbol { symbol: "big".into(), offset: 0, address: big }),
            ("len_fn", 8, Location::Symbol { symbol: "len_fn".into(), offset: 0, address: len_fn }),
            ("ratio", 8, Location::Register { register: Register::x86_64(17) }),
            (
                "checkpoint_fn",
                8,
                Location::Symbol { symbol: "checkpoint_fn".into(), offset: 0, address: checkpoint_fn },
            ),
        ];
        for (position, (name, size, place)) in args.into_iter().enumerate() {
            arguments.arguments.push(ArgumentDescriptor {
                region,
                position: position as u32,
                name: name.into(),
                kind: ArgumentKind::Local,
                type_name: "long".into(),
                size,
                locations: vec![PlacedLocation { address: location, location: place, type_name: None, size: None }],
            });
        }
    }
    (functions, arguments)
}

pub fn c_entry(region: u32) -> DebugEntry {
    DebugEntry::Symbol { name: format!("__rdb_entry_{region}") }
}

pub fn table_entry(_region: u32) -> DebugEntry {
    DebugEntry::RegionTable
}

/// A file to collect the host's stdout, and its path.
pub fn output_file(tag: &str) -> (std::fs::File, PathBuf) {
    let path = fixtures().dir.join(format!("host-{tag}.out"));
    (std::fs::File::create(&path).unwrap(), path)
}

pub fn host_program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rdb-debug-host"))
}
