//! Stepping over breakpoints without a single-step stop (`displace`): a breakpoint at every
//! instruction of a real program's functions, at -O0 and -O2, must leave the replay exact.
//!
//! The program folds everything it computes (including a return address, which an emulated
//! `call` must push exactly as the CPU would) into the lengths of its `write`s and its exit
//! status, which the replayer checks against the recording: a displaced instruction that
//! computed anything differently would show as a divergence. A store that faults (a signal
//! handler fixes the page up and the store runs again) checks that a displaced instruction's
//! fault shows the program its own address.

mod common;

use std::path::{Path, PathBuf};

use common::compile_c;

use iced_x86::{Decoder, DecoderOptions};
use object::{Object, ObjectSymbol};
use rdb_runtime::{record, replay, BreakpointStop, ProcessImage, RecordOptions, ReplayObserver, ReplayOptions};

const FUNCTIONS: [&str; 5] = ["step", "add", "mul", "rec", "touch"];

/// Link-time address of every instruction of `FUNCTIONS` in `exe`.
fn instructions(exe: &Path) -> Vec<u64> {
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let text = file.section_by_name(".text").unwrap();
    let (base, bytes) = (object::ObjectSection::address(&text), object::ObjectSection::data(&text).unwrap());
    let mut out = Vec::new();
    for sym in file.symbols().filter(|s| FUNCTIONS.contains(&s.name().unwrap_or(""))) {
        let start = (sym.address() - base) as usize;
        let code = &bytes[start..start + sym.size() as usize];
        let mut decoder = Decoder::with_ip(64, code, sym.address(), DecoderOptions::NONE);
        out.extend(decoder.iter().map(|i| i.ip()));
    }
    assert!(out.len() > 50, "found only {} instructions", out.len());
    out
}

struct Everywhere {
    exe: PathBuf,
    at: Vec<u64>,
    /// General registers and arithmetic flags at each hit.
    hits: Vec<[u64; 18]>,
}

impl ReplayObserver for Everywhere {
    fn on_exec(&mut self, image: &ProcessImage) -> Vec<u64> {
        if image.exe == self.exe {
            self.at.iter().map(|a| a + image.load_bias).collect()
        } else {
            vec![]
        }
    }
    fn on_breakpoint(&mut self, stop: &BreakpointStop<'_>) -> Result<(), String> {
        let r = &stop.regs;
        self.hits.push([
            r.rip,
            r.rsp,
            r.rax,
            r.rbx,
            r.rcx,
            r.rdx,
            r.rsi,
            r.rdi,
            r.rbp,
            r.r8,
            r.r9,
            r.r10,
            r.r11,
            r.r12,
            r.r13,
            r.r14,
            r.r15,
            r.eflags & 0x8d5,
        ]);
        Ok(())
    }
}

#[test]
fn a_breakpoint_at_every_instruction_leaves_the_replay_exact() {
    let dir = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        let exe = compile_c(dir.path(), "step_over", &format!("prog{opt}"), &[opt, "-g", "-fPIE", "-pie"], &[]);
        let trace = dir.path().join(format!("trace{opt}"));
        let rec = record(&RecordOptions { pin_cpu: true, ..common::record_options(&trace, &exe, &[]) }).unwrap();
        let at = instructions(&exe);
        let mut runs = Vec::new();
        for mode in ["displace", "displace", "single-step"] {
            // SAFETY: this test binary runs one test, on one thread at this point.
            unsafe {
                if mode == "single-step" {
                    std::env::set_var("RDB_SINGLE_STEP", "1");
                } else {
                    std::env::remove_var("RDB_SINGLE_STEP");
                }
            }
            let mut observer = Everywhere { exe: exe.canonicalize().unwrap(), at: at.clone(), hits: Vec::new() };
            let opts = ReplayOptions { trace_dir: trace.clone(), pin_cpu: true, echo_output: false };
            let outcome = replay(&opts, &mut observer).unwrap_or_else(|e| panic!("{opt}: {e}"));
            assert_eq!(outcome.exit_status, Some(rec.exit_status), "{opt}");
            assert_eq!(outcome.breakpoint_hits, observer.hits.len() as u64);
            eprintln!(
                "{opt}, {mode}: {} breakpoints, {} hits, {} single-stepped",
                at.len(),
                outcome.breakpoint_hits,
                outcome.breakpoint_steps
            );
            if mode == "single-step" {
                assert_eq!(outcome.breakpoint_steps, outcome.breakpoint_hits);
            } else {
                assert!(outcome.breakpoint_steps < outcome.breakpoint_hits / 2, "{opt}: mostly single-stepped");
            }
            runs.push(observer.hits);
        }
        // Thousands of instructions of these functions ran, each stopped once, in the same
        // order with the same registers in every replay, displaced or single-stepped.
        assert!(runs[0].len() > 5000, "{opt}: only {} hits", runs[0].len());
        assert_eq!(runs[0], runs[1], "{opt}");
        assert!(runs[0] == runs[2], "{opt}: displaced and single-stepped replays differ");
        let distinct: std::collections::HashSet<u64> = runs[0].iter().map(|h| h[0]).collect();
        assert!(distinct.len() > at.len() / 2, "{opt}: {} of {} instructions hit", distinct.len(), at.len());
    }
}
