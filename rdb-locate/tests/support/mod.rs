//! Test support: build fixtures with real compilers, locate sites, and check
//! the computed locations against gdb reading the same running program.

#![allow(dead_code)]

use rdb_descriptors::{ArgumentKind, Location, SourceLocation};
use rdb_locate::{ArgumentSite, Located, RegionSite};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Load address gdb gives a position-independent executable with ASLR off.
pub const PIE_BIAS: u64 = 0x5555_5555_4000;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A binary built from a fixture into cargo's per-target temporary
/// directory (`target/tmp`), named after the fixture and flags.
pub struct Built {
    pub binary: PathBuf,
}

/// Where a fixture built with `flags` goes: one directory per test binary,
/// so test binaries never write the same file.
fn output_path(file: &str, flags: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().ok().and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rdb-locate").join(exe.unwrap_or_default());
    std::fs::create_dir_all(&dir).expect("target tmp dir");
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    let flags: String =
        flags.iter().map(|f| f.replace(|c: char| !c.is_ascii_alphanumeric(), "")).collect::<Vec<_>>().join("-");
    dir.join(format!("{stem}-{flags}"))
}

/// Runs a compiler once per output path and process: tests of one binary
/// run in parallel and may ask for the same build.
fn build_once(binary: &Path, command: &mut Command) {
    static BUILT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !built.iter().any(|b| b == binary) {
        run(command);
        built.push(binary.to_path_buf());
    }
}

/// `program` under `timeout`, so a hung compiler fails the test instead of
/// stalling the suite.
fn timed(program: &str) -> Command {
    rdb_tests::timed(600, program)
}

fn run(command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(output.status.success(), "{command:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// `rustc -g <flags> FILE` run in the fixtures directory, so the DWARF names
/// the file by its relative name.
pub fn rustc(file: &str, flags: &[&str]) -> Built {
    let mut all = vec!["-g"];
    all.extend_from_slice(flags);
    rustc_exactly(file, &all)
}

/// `rustc <flags> FILE`, no `-g` added.
pub fn rustc_exactly(file: &str, flags: &[&str]) -> Built {
    let binary = output_path(file, flags);
    build_once(
        &binary,
        timed("rustc").current_dir(fixtures()).args(["--edition", "2021"]).args(flags).arg("-o").arg(&binary).arg(file),
    );
    Built { binary }
}

/// `clang-14 -g <flags> FILE` run in the fixtures directory.
pub fn clang(file: &str, flags: &[&str]) -> Built {
    let mut all = vec!["-g"];
    all.extend_from_slice(flags);
    clang_exactly(file, &all)
}

/// `gcc -g <flags> FILE` (its DWARF uses `DW_OP_call_frame_cfa` frame bases).
pub fn gcc(file: &str, flags: &[&str]) -> Built {
    let binary = output_path(file, &[&["gcc"], flags].concat());
    build_once(&binary, timed("gcc").current_dir(fixtures()).arg("-g").args(flags).arg("-o").arg(&binary).arg(file));
    Built { binary }
}

/// `cargo build <flags>` of the fixture package `dir` (its own workspace),
/// into a target directory of its own; returns the binary `name`.
pub fn cargo(dir: &str, flags: &[&str], name: &str) -> Built {
    let target = output_path(dir, flags);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = timed(&cargo);
    command
        .current_dir(fixtures().join(dir))
        .args(["build", "--quiet", "--offline"])
        .args(flags)
        .arg("--target-dir")
        .arg(&target);
    // The package must build as users build it, whatever this test run sets.
    command.env_remove("RUSTFLAGS").env_remove("CARGO_ENCODED_RUSTFLAGS");
    let marker = target.join("built");
    build_once(&marker, &mut command);
    let profile = if flags.contains(&"--release") { "release" } else { "debug" };
    Built { binary: target.join(profile).join(name) }
}

/// `clang-14 <flags> FILE`, no `-g` added.
pub fn clang_exactly(file: &str, flags: &[&str]) -> Built {
    let binary = output_path(file, flags);
    build_once(&binary, timed("clang-14").current_dir(fixtures()).args(flags).arg("-o").arg(&binary).arg(file));
    Built { binary }
}

/// The source location of the line marked `ANCHOR: marker` in a fixture:
/// its first non-blank character.
pub fn anchor(file: &str, marker: &str) -> SourceLocation {
    let text = std::fs::read_to_string(fixtures().join(file)).expect("fixture");
    let tag = format!("ANCHOR: {marker}");
    for (i, line) in text.lines().enumerate() {
        if line.contains(&tag) && (line.ends_with(&tag) || line.contains(&format!("{tag} "))) {
            let column = line.chars().take_while(|c| c.is_whitespace()).count() + 1;

            return SourceLocation { file: file.into(), line: i as u32 + 1, column: column as u32 };
        }
    }
    panic!("no `{tag}` in {file}");
}

pub fn local(name: &str) -> ArgumentSite {
    ArgumentSite {
        name: name.into(),
        kind: ArgumentKind::Local,
        static_path: None,
        after_await: None,
        written_after: Vec::new(),
        unchanged: false,
        unwritten_before: false,
        address_only: false,
    }
}

pub fn global(name: &str, path: &str) -> ArgumentSite {
    ArgumentSite {
        name: name.into(),
        kind: ArgumentKind::Static,
        static_path: Some(path.into()),
        after_await: None,
        written_after: Vec::new(),
        unchanged: false,
        unwritten_before: false,
        address_only: false,
    }
}

pub fn site(region: u32, file: &str, marker: &str, function: &str, arguments: Vec<ArgumentSite>) -> RegionSite {
    let anchor = anchor(file, marker);
    let begin = SourceLocation { line: anchor.line.saturating_sub(2), ..anchor.clone() };
    let end = SourceLocation { line: anchor.line.saturating_sub(1), ..anchor.clone() };
    RegionSite {
        region,
        begin,
        end,
        anchor,
        function: function.into(),
        arguments,
        ends_block: false,
        last_statement: None,
        first_in_body: false,
        in_loop: false,
        block_close_line: None,
        before_loop: None,
        block_end: None,
        bodies: Vec::new(),
    }
}

/// What gdb printed for one expression: the text after `= `; `None` when
/// the program never reached `address` (a copy of a statement for inputs
/// the test does not give, e.g. the remainder loop of an unrolled loop).
fn gdb(binary: &Path, address: u64, prints: &[String]) -> Option<Vec<String>> {
    let mut command = Command::new("timeout");
    command.args(["120", "gdb", "-nx", "-batch", "-ex", "set disable-randomization on", "-ex", "set pagination off"]);
    command.args(["-ex", "set confirm off", "-ex", "starti", "-ex"]).arg(format!("break *{address:#x}"));
    command.args(["-ex", "continue"]);
    for (i, p) in prints.iter().enumerate() {
        command.arg("-ex").arg(format!("echo @@{i}@@"));
        command.arg("-ex").arg(p);
    }
    command.arg(binary);
    let output = command.output().expect("gdb runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let mut values = Vec::new();
    for i in 0..prints.len() {
        let tag = format!("@@{i}@@");
        let text = stdout
            .split(&tag)
            .nth(1)
            .map(|rest| rest.split("@@").next().unwrap_or(rest).trim().to_string())
            .unwrap_or_default();
        let value = text.split_once(" = ").map(|(_, v)| v.trim().to_string());
        values.push(value.unwrap_or_else(|| format!("<gdb error: {text} / {stderr}>")));
    }
    let stopped = stdout.contains(&format!("Breakpoint 1, {address:#018x}")) || stdout.contains("Breakpoint 1,");
    stopped.then_some(values)
}

/// The last hex number in a gdb value (`(*mut app::Vm) 0x7ffe...` → 0x7ffe...).
fn last_hex(text: &str) -> Option<u64> {
    let token = text.split(|c: char| c.is_whitespace() || c == '(' || c == ')').rev().find(|t| t.starts_with("0x"))?;
    let digits: String = token[2..].chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).ok()
}

/// Every hex number in a gdb value, in order.
fn all_hex(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| t.starts_with("0x"))
        .filter_map(|t| u64::from_str_radix(&t[2..], 16).ok())
        .collect()
}

fn mask(value: u64, size: u64) -> u64 {
    if size >= 8 {
        value
    } else {
        value & ((1u64 << (size * 8)) - 1)
    }
}

/// gdb expression reading the value a descriptor location designates
/// (integers and pointers up to 8 bytes).
fn read_expression(location: &Location, bias: u64) -> Option<String> {
    Some(match location {
        Location::Register { register } => format!("p/x ${}", register.name),
        Location::Stack { base, offset } => format!("p/x *(unsigned long long *)(${} + ({offset}))", base.name),
        Location::Symbol { address, .. } => format!("p/x *(unsigned long long *)({:#x})", bias + address),
        Location::Computed { register, offset } => format!("p/x (unsigned long long)(${} + ({offset}))", register.name),
        _ => return None,
    })
}

/// How one argument compared with gdb at one code location.
#[derive(Debug)]
pub struct Checked {
    pub name: String,
    pub address: u64,
    pub location: Location,
    pub ours: Option<u64>,
    pub gdb: String,
}

/// Runs the binary under gdb, stops at each code location of region
/// `region` (first hit), reads every argument both through the descriptor
/// and through gdb's `print`, and asserts they agree: equal values, or both
/// optimised out. Returns what was compared.
pub fn check_against_gdb(binary: &Path, sites: &[RegionSite], located: &Located, region: u32) -> Vec<Checked> {
    let site = sites.iter().find(|s| s.region == region).expect("site");
    let loaded = rdb_locate::loader::Binary::load(binary).expect("binary loads");
    let bias = if loaded.position_independent { PIE_BIAS } else { 0 };
    let function = located.functions.iter().find(|f| f.region == region).expect("region located");
    assert!(!function.locations.is_empty(), "region {region} has no code location: {function:#?}");
    let arguments: Vec<_> = located.arguments.iter().filter(|a| a.region == region).collect();
    let mut checked = Vec::new();
    let mut reached = 0;
    for code in &function.locations {
        // symbol + offset names the same address.
        assert_eq!(
            loaded.symbols.address_of(&code.symbol).map(|a| a + code.offset),
            Some(code.address),
            "symbol+offset disagrees with the address: {code:?}"
        );
        let mut prints = Vec::new();
        for argument in &arguments {
            let placed = argument.locations.iter().find(|p| p.address == code.address).expect("placed location");
            prints.push("set language c".to_string());
            let read = match &placed.location {
                // One print per piece would shift the numbering: print them as one list.
                Location::Pieces { pieces } => {
                    let parts: Vec<String> = pieces
                        .iter()
                        .map(|p| {
                            read_expression(&p.location, bias)
                                .map(|e| e.trim_start_matches("p/x ").to_string())
                                .unwrap_or_else(|| "0".into())
                        })
                        .collect();
                    let parts: Vec<String> = parts.iter().map(|p| format!("(unsigned long long)({p})")).collect();
                    format!("p/x {{{}}}", parts.join(", "))
                }
                l => read_expression(l, bias).unwrap_or_else(|| "p 0".into()),
            };
            prints.push(read);
            // In C mode gdb prints a Rust fat pointer as its fields, not as
            // the slice it points to: that is what pieces are compared with.
            let is_pieces = matches!(placed.location, Location::Pieces { .. });
            prints.push(if is_pieces { "set language c" } else { "set language auto" }.to_string());
            let argument_site = &site.arguments[argument.position as usize];
            // At the start of an inlined callee gdb's innermost frame is the
            // callee's: print from the innermost frame that knows the name.
            prints.push("echo".into());
            prints.push(format!(
                "frame apply all -s -q p/x {}",
                argument_site.static_path.as_deref().unwrap_or(&argument.name)
            ));
        }
        let Some(values) = gdb(binary, code.address + bias, &prints) else { continue };
        reached += 1;
        for (i, argument) in arguments.iter().enumerate() {
            let placed = argument.locations.iter().find(|p| p.address == code.address).unwrap();
            let theirs = values[i * 5 + 4].clone();
            let ours = match &placed.location {
                Location::Implicit { bytes } => {
                    let mut le = [0u8; 8];
                    for (j, b) in (0..bytes.len().min(16)).step_by(2).enumerate() {
                        le[j] = u8::from_str_radix(&bytes[b..b + 2], 16).unwrap();
                    }
                    Some(u64::from_le_bytes(le))
                }
                l => read_expression(l, bias).and_then(|_| last_hex(&values[i * 5 + 1])),
            };
            let ours = ours.map(|v| mask(v, argument.size));
            match &placed.location {
                // gdb can also print values computed from registers
                // (DW_OP_stack_value over arithmetic), which the descriptor
                // format cannot express: then a warning must say so.
                Location::OptimizedOut => assert!(
                    theirs.contains("optimized out")
                        // gdb finds no such variable in scope there: no value either.
                        // (`frame apply all -s` prints nothing when no frame knows the name.)
                        || theirs.starts_with("<gdb error:  /")
                        || located.warnings.iter().any(|w| {
                            w.contains(&format!("`{}`", argument.name))
                                && w.contains(&format!("{:#x}", code.address))
                                && w.contains("cannot express")
                        }),
                    "`{}` at {:#x}: we say optimized out (without saying why), gdb prints {theirs}",
                    argument.name,
                    code.address
                ),
                // Read at the function's entry, not here: the replay checks those end to end
                // (rdb-tests, clang_replay::entry_values_give_the_o0_values_at_o2).
                Location::EntryValue { .. } => {}
                Location::Pieces { pieces }
                    if pieces.iter().any(|p| matches!(p.location, Location::EntryValue { .. })) => {}
                Location::Pieces { pieces } => {
                    let ours = all_hex(&values[i * 5 + 1]);
                    let gdb_values = all_hex(&theirs);
                    let masked: Vec<u64> = ours.iter().zip(pieces).map(|(v, p)| mask(*v, p.size)).collect();
                    assert_eq!(
                        masked, gdb_values,
                        "`{}` at {:#x}: our pieces {pieces:?} read {ours:x?}, gdb prints {theirs}",
                        argument.name, code.address
                    );
                }
                _ => {
                    let gdb_value = last_hex(&theirs).map(|v| mask(v, argument.size));
                    assert_eq!(
                        ours, gdb_value,
                        "`{}` ({}, {} bytes) at {:#x}: our location {:?} reads {:?}, gdb prints {theirs}",
                        argument.name, argument.type_name, argument.size, code.address, placed.location, ours
                    );
                    assert!(ours.is_some(), "`{}`: nothing read", argument.name);
                }
            }
            checked.push(Checked {
                name: argument.name.clone(),
                address: code.address,
                location: placed.location.clone(),
                ours,
                gdb: theirs,
            });
        }
    }
    assert!(reached > 0, "gdb stopped at no location of region {region}: {:#?}", function.locations);
    checked
}
