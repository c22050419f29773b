//! rdb-clang's driver: runs the user's clang command on stripped sources and
//! the extra compiles and links that produce the debug module and the
//! descriptors.
//!
//! # Main build (identical by construction)
//! The user's arguments run unchanged, plus `-ivfsoverlay FILE`: a clang
//! virtual-file-system overlay that maps each instrumented source's own path
//! to its stripped copy in a temporary directory (`use-external-names:
//! false`). Clang therefore reads the stripped text *at the original path*:
//! `__FILE__`, DWARF names, the `STT_FILE` symbol and quote-include lookup
//! are those of a plain build in place. `*.rdb.c` and `*.rdb.o` inputs are
//! removed from that command. (The overlay flag is not recorded in the
//! output unless the user asks for `-grecord-command-line`, which rdb-clang
//! refuses.)
//!
//! # Files beside each object `X.o` (compile step, `-c`)
//! - `X.o.rdb.bc`: the instrumented source as LLVM IR (`-O0 -g -fPIC`);
//! - `X.o.rdb-dwarf`: the DWARF twin (the same command plus `-g`) when the
//!   user's flags lack full debug info; its `.text` is checked identical;
//! - `X.o.rdb.json`: what the link step needs ([`ObjectInfo`]).
//!
//! Only for sources that contain debug text; other objects get nothing.
//! Debug sources `H.rdb.c` compile (with `-fPIC`) to `H.rdb.o`.
//!
//! # Link step
//! After the user's link: `<prog>.rdb-g` (the DWARF twin executable, when
//! any object has a twin; its `.text` is checked identical to `<prog>`), the
//! outlining pass over every object's bitcode (region ids numbered from 1 in
//! command-line order), `<prog>.rdb.so` (clang-14 `-shared -fPIC` of the
//! outlined modules with the debug sources and objects), and the two
//! descriptor files.

use crate::command::{Command, Input, Mode};
use crate::descriptors::CRegion;
use crate::pass::{outline_file, OutlinedRegion, PassError, PassInput, RegionSpec};
use crate::source::{analyse, Analysis, Diagnostic, Pos};
use rdb_descriptors::{ArgumentKind, SourceLocation};
use rdb_locate::{ArgumentSite, RegionSite};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitStatus};

/// Why rdb-clang failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    #[error("{}", .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
    Diagnostics(Vec<Diagnostic>),
    #[error("{0}")]
    Usage(String),
    /// clang failed; it has printed its own diagnostics.
    #[error("`{command}` failed ({status})")]
    Clang { command: String, status: ExitStatus },
    /// The user's own command failed; clang printed the diagnostics.
    #[error("")]
    Failed(ExitStatus),
    #[error("cannot run `{program}`: {source} (set RDB_CLANG to the clang-14 binary)")]
    Spawn { program: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a readable ELF file: {message}")]
    Elf { path: PathBuf, message: String },
    #[error("{0}. Add `-g` to your own flags")]
    TwinMismatch(#[from] rdb_locate::TwinError),
    #[error(transparent)]
    Pass(#[from] PassError),
    #[error("{0}")]
    DebugModule(String),
    #[error(transparent)]
    Descriptors(#[from] crate::descriptors::DescriptorError),
}

impl DriverError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            DriverError::Clang { status, .. } | DriverError::Failed(status) => status.code().unwrap_or(1),
            DriverError::Usage(_) => 2,
            _ => 1,
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DriverError + '_ {
    move |source| DriverError::Io { path: path.to_path_buf(), source }
}

/// The clang rdb-clang drives (`RDB_CLANG`, default `clang-14`).
pub fn clang() -> String {
    std::env::var("RDB_CLANG").unwrap_or_else(|_| "clang-14".to_string())
}

/// A directory holding this rdb-clang's `rdb.h`, for plain builds of
/// instrumented sources: the source tree's `rdb-codegen-llvm/include` when it
/// holds the same header, else a copy written under `$XDG_CACHE_HOME` (or
/// `~/.cache`) `/rdb-clang/<version>/include`.
pub fn include_dir() -> Result<PathBuf, DriverError> {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    if std::fs::read_to_string(tree.join("rdb.h")).is_ok_and(|t| t == crate::RDB_H) {
        return Ok(tree);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let dir = cache.join("rdb-clang").join(env!("CARGO_PKG_VERSION")).join("include");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let header = dir.join("rdb.h");
    std::fs::write(&header, crate::RDB_H).map_err(io(&header))?;
    Ok(dir)
}

/// Version of the sidecar format ([`ObjectInfo`]).
pub const OBJECT_INFO_VERSION: u32 = 1;

/// `X.o.rdb.json`: what the link step needs to know about an object built
/// from a source with debug text. Internal to rdb-clang; versioned so a stale
/// file is refused, never misread.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectInfo {
    pub format: String,
    pub version: u32,
    /// The source path as given on the command line (as DWARF names it).
    pub source: PathBuf,
    /// The source's absolute path.
    pub source_abs: PathBuf,
    /// The instrumented LLVM IR.
    pub bitcode: PathBuf,
    /// The DWARF twin object, when the user's flags lacked `-g`.
    pub dwarf_twin: Option<PathBuf>,
    pub regions: Vec<RegionInfo>,
    pub debug_only: BTreeSet<String>,
    /// Lines of the source removed by stripping (to map lines).
    pub removed_lines: Vec<u32>,
    /// BLAKE3 of the object this describes (`None` inside a one-step
    /// build), so a stale description of a rebuilt object is ignored.
    pub object_blake3: Option<String>,
}

/// One region of an [`ObjectInfo`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RegionInfo {
    pub begin: (u32, u32),
    pub end: (u32, u32),
    /// In the stripped source.
    pub anchor: (u32, u32),
    /// Identifiers written in the region.
    pub identifiers: BTreeSet<String>,
    /// The lines of the statement before the region in its block (stripped source).
    #[serde(default)]
    pub before: Option<(u32, u32)>,
    /// Inside the braced body of a loop of its function (see `source::Region::in_loop`).
    #[serde(default)]
    pub in_loop: bool,
    /// The line of the `}` closing the region's block (stripped source).
    #[serde(default)]
    pub block_close: Option<u32>,
}

fn pos(p: Pos) -> (u32, u32) {
    (p.line, p.column)
}

/// Sidecar paths of an object.
pub fn sidecars(object: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let s = object.as_os_str().to_string_lossy();
    (
        PathBuf::from(format!("{s}.rdb.json")),
        PathBuf::from(format!("{s}.rdb.bc")),
        PathBuf::from(format!("{s}.rdb-dwarf")),
    )
}

struct Run {
    cmd: Command,
    tmp: tempfile::TempDir,
    cwd: PathBuf,
    /// Analyses of the sources that contain debug text, by source index.
    analyses: Vec<(Input, Analysis)>,
    overlay: Option<PathBuf>,
}

/// Runs rdb-clang with these arguments (without the program name).
pub fn run(args: Vec<String>) -> Result<(), DriverError> {
    if args.iter().any(|a| a == "--print-include-dir") {
        println!("{}", include_dir()?.display());
        return Ok(());
    }
    if args.iter().any(|a| a == "-grecord-command-line" || a == "-grecord-gcc-switches") {
        return Err(DriverError::Usage(
            "rdb-clang: -grecord-command-line records rdb-clang's extra flags in the object; drop it".into(),
        ));
    }
    let cmd = Command::parse(args).map_err(|m| DriverError::Usage(format!("rdb-clang: {m}")))?;
    let tmp = tempfile::Builder::new().prefix("rdb-clang-").tempdir().map_err(io(Path::new("/tmp")))?;
    let cwd = std::env::current_dir().map_err(io(Path::new(".")))?;
    let mut run = Run { cmd, tmp, cwd, analyses: Vec::new(), overlay: None };
    run.analyse()?;
    let result = match run.cmd.mode {
        Mode::Other => run.clang_main(),
        Mode::Compile => run.compile(),
        Mode::Link => run.link(),
    };
    if let Err(e) = &result {
        if !matches!(e, DriverError::Failed(_)) {
            // Like a failed compiler: no output is left for a build system
            // to take as up to date.
            run.remove_outputs();
        }
    }
    if std::env::var_os("RDB_KEEP_TEMPS").is_some() {
        let kept = run.tmp.keep();
        eprintln!("rdb-clang: temporary files kept in {}", kept.display());
    }
    result
}

fn command_line(program: &str, args: &[String]) -> String {
    std::iter::once(program).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// The user's own command failed: clang has said why.
fn quiet(e: DriverError) -> DriverError {
    match e {
        DriverError::Clang { status, .. } => DriverError::Failed(status),
        e => e,
    }
}

fn run_clang(args: &[String]) -> Result<(), DriverError> {
    let program = clang();
    let status = Process::new(&program)
        .args(args)
        .status()
        .map_err(|source| DriverError::Spawn { program: program.clone(), source })?;
    if !status.success() {
        return Err(DriverError::Clang { command: command_line(&program, args), status });
    }
    Ok(())
}

/// A clang running in the background.
struct Job {
    child: std::process::Child,
    args: Vec<String>,
}

impl Job {
    fn spawn(args: Vec<String>) -> Result<Job, DriverError> {
        let program = clang();
        let child =
            Process::new(&program).args(&args).spawn().map_err(|source| DriverError::Spawn { program, source })?;
        Ok(Job { child, args })
    }

    fn wait(mut self) -> Result<(), DriverError> {
        let status = self.child.wait().map_err(|source| DriverError::Spawn { program: clang(), source })?;
        if !status.success() {
            return Err(DriverError::Clang { command: command_line(&clang(), &self.args), status });
        }
        Ok(())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // A job dropped before `wait` (another compile failed) is stopped.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Run {
    fn remove_outputs(&self) {
        let mut outputs = Vec::new();
        match self.cmd.mode {
            Mode::Compile => outputs.extend(self.cmd.sources.iter().map(|s| self.object_of(&s.path))),
            Mode::Link => {
                outputs.push(self.cmd.output.as_ref().map(|(_, p)| p.clone()).unwrap_or_else(|| "a.out".into()))
            }
            Mode::Other => {}
        }
        for o in outputs {
            let _ = std::fs::remove_file(&o);
            let (json, bc, twin) = sidecars(&o);
            for f in [json, bc, twin] {
                let _ = std::fs::remove_file(f);
            }
            let paths = rdb_descriptors::artefact_paths(&o);
            for f in [paths.debug_module, paths.functions, paths.arguments] {
                let _ = std::fs::remove_file(f);
            }
        }
    }

    fn abs(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }

    /// Reads and checks every program source; writes the stripped copies and
    /// the overlay.
    fn analyse(&mut self) -> Result<(), DriverError> {
        let mut diags = Vec::new();
        let mut roots = Vec::new();
        for (n, input) in self.cmd.sources.iter().enumerate() {
            let text = match std::fs::read_to_string(&input.path) {
                Ok(t) => t,
                // clang reports missing or unreadable sources itself.
                Err(_) => continue,
            };
            match analyse(&input.path, &text) {
                Err(mut d) => diags.append(&mut d),
                Ok(a) if a.instrumented => {
                    let copy = self.tmp.path().join(format!("stripped-{n}.c"));
                    std::fs::write(&copy, &a.stripped).map_err(io(&copy))?;
                    roots.push(serde_json::json!({
                        "type": "file",
                        "name": self.abs(&input.path),
                        "external-contents": copy,
                    }));
                    self.analyses.push((input.clone(), a));
                }
                Ok(_) => {}
            }
        }
        if !diags.is_empty() {
            return Err(DriverError::Diagnostics(diags));
        }
        if !roots.is_empty() {
            let overlay = serde_json::json!({
                "version": 0,
                "case-sensitive": "true",
                "use-external-names": false,
                "roots": roots,
            });
            let path = self.tmp.path().join("overlay.yaml");
            std::fs::write(&path, overlay.to_string()).map_err(io(&path))?;
            self.overlay = Some(path);
        }
        let inc = self.tmp.path().join("include");
        std::fs::create_dir_all(&inc).map_err(io(&inc))?;
        std::fs::write(inc.join("rdb.h"), crate::RDB_H).map_err(io(&inc))?;
        Ok(())
    }

    fn overlay_args(&self) -> Vec<String> {
        match &self.overlay {
            Some(p) => vec!["-ivfsoverlay".into(), p.display().to_string()],
            None => Vec::new(),
        }
    }

    /// The user's command without debug inputs, on stripped sources. When
    /// it fails, clang has said why: rdb-clang exits with its status and
    /// adds nothing, as clang itself would.
    fn clang_main(&self) -> Result<(), DriverError> {
        run_clang(&self.main_args()).map_err(quiet)
    }

    fn main_args(&self) -> Vec<String> {
        let mut args = self.cmd.without(&self.cmd.debug_inputs());
        args.extend(self.overlay_args());
        args
    }

    fn object_of(&self, source: &Path) -> PathBuf {
        match (&self.cmd.output, self.cmd.sources.len() + self.cmd.debug_sources.len()) {
            (Some((_, o)), 1) => o.clone(),
            _ => PathBuf::from(source.file_stem().unwrap_or_default()).with_extension("o"),
        }
    }

    /// The instrumented compile of one source to LLVM IR.
    fn instrumented_ir(&self, source: &Path, out: &Path) -> Result<(), DriverError> {
        run_clang(&self.ir_args(source, out))
    }

    fn ir_args(&self, source: &Path, out: &Path) -> Vec<String> {
        let mut args = self.cmd.compile_flags();
        args.extend(
            [
                "-D__RDB_INSTRUMENT__=1",
                "-I",
                &self.tmp.path().join("include").display().to_string(),
                "-O0",
                "-g",
                "-fPIC",
                "-fno-discard-value-names",
                "-Wno-error",
                "-w",
                "-c",
                "-emit-llvm",
            ]
            .map(String::from),
        );
        args.push(source.display().to_string());
        args.push("-o".into());
        args.push(out.display().to_string());
        args
    }

    /// The DWARF twin of one compile: the user's command for this source
    /// only, with `-g` added and the output renamed.
    fn twin_args(&self, input: &Input, out: &Path) -> Vec<String> {
        let others: Vec<usize> = self
            .cmd
            .sources
            .iter()
            .chain(&self.cmd.debug_sources)
            .filter(|i| i.index != input.index)
            .map(|i| i.index)
            .collect();
        let mut remove = others;
        if let Some((i, _)) = &self.cmd.output {
            remove.push(*i);
            if self.cmd.args[*i] == "-o" {
                remove.push(i + 1);
            }
        }
        // Dependency output belongs to the user's compile only.
        for (i, a) in self.cmd.args.iter().enumerate() {
            if matches!(a.as_str(), "-MD" | "-MMD" | "-MP" | "-MG")
                || a.starts_with("-MF")
                || a.starts_with("-MT")
                || a.starts_with("-MQ")
            {
                remove.push(i);
                if matches!(a.as_str(), "-MF" | "-MT" | "-MQ") {
                    remove.push(i + 1);
                }
            }
        }
        let args: Vec<String> = self.cmd.without(&remove);
        let mut args = args;
        args.extend(["-g".to_string(), "-o".to_string(), out.display().to_string()]);
        args.extend(self.overlay_args());
        args
    }

    /// Debug sources compile to objects (`-fPIC`) for the debug module, each as a unit that
    /// adds its event callbacks' entries and records (see `callbacks`).
    fn compile_debug_source(&self, input: &Input, out: &Path) -> Result<(), DriverError> {
        let source = self.abs(&input.path);
        let text = std::fs::read_to_string(&source).map_err(io(&source))?;
        let found = crate::callbacks::scan(&input.path, &text).map_err(DriverError::Diagnostics)?;
        let unit = self.tmp.path().join(format!("debug-unit-{}.c", input.index));
        std::fs::write(&unit, crate::callbacks::wrapper_unit(&source, &found)).map_err(io(&unit))?;
        let mut args = self.cmd.compile_flags();
        let inc = self.tmp.path().join("include").display().to_string();
        args.extend(["-D__RDB_INSTRUMENT__=1", "-I", &inc, "-fPIC", "-g", "-c"].map(String::from));
        args.push(unit.display().to_string());
        args.extend(["-o".to_string(), out.display().to_string()]);
        run_clang(&args)
    }

    fn ir_path(&self, input: &Input) -> PathBuf {
        self.tmp.path().join(format!("ir-{}.bc", input.index))
    }

    /// Compiles every instrumented source to IR and checks its regions,
    /// before anything is written at the user's output paths: a bad region
    /// fails the command like a compile error.
    fn check_sources(&self) -> Result<(), DriverError> {
        for (input, _) in &self.analyses {
            self.instrumented_ir(&input.path, &self.ir_path(input))?;
        }
        self.check_regions()
    }

    /// Runs the pass on every compiled IR file to check its regions.
    fn check_regions(&self) -> Result<(), DriverError> {
        for (input, analysis) in &self.analyses {
            let ir = self.ir_path(input);
            // The link step outlines again, knowing every program symbol.
            let specs: Vec<RegionSpec> = analysis
                .regions
                .iter()
                .enumerate()
                .map(|(k, r)| RegionSpec {
                    id: k as u32 + 1,
                    begin_line: r.begin.line,
                    end_line: r.end.line,
                    identifiers: r.identifiers.clone(),
                })
                .collect();
            let check = PassInput {
                file: &input.path,
                regions: &specs,
                debug_only: &analysis.debug_only,
                program_symbols: &HashSet::new(),
            };
            outline_file(&ir, &self.tmp.path().join(format!("check-{}.bc", input.index)), &check)?;
        }
        Ok(())
    }

    /// The per-source rdb work of a compile: IR, twin, sidecar.
    fn rdb_object(
        &self,
        input: &Input,
        analysis: &Analysis,
        object: &Path,
        twin_dir: Option<&Path>,
    ) -> Result<ObjectInfo, DriverError> {
        let (json, bc, twin) = match twin_dir {
            None => sidecars(object),
            Some(d) => {
                let stem = format!("src{}", input.index);
                (
                    d.join(format!("{stem}.rdb.json")),
                    d.join(format!("{stem}.rdb.bc")),
                    d.join(format!("{stem}.rdb-dwarf")),
                )
            }
        };
        let ir = self.ir_path(input);
        if twin_dir.is_none() {
            std::fs::copy(&ir, &bc).map_err(io(&bc))?;
        } else {
            std::fs::rename(&ir, &bc).map_err(io(&bc))?;
        }
        let dwarf_twin = if self.cmd.full_debug_info || twin_dir.is_some() {
            None
        } else {
            // Compiled beside the main compile (see `compile`).
            let built = self.twin_path(input);
            check_same_code(object, &built)?;
            std::fs::rename(&built, &twin).or_else(|_| std::fs::copy(&built, &twin).map(|_| ())).map_err(io(&twin))?;
            Some(twin)
        };
        let info = ObjectInfo {
            format: "rdb-clang-object".into(),
            version: OBJECT_INFO_VERSION,
            source: input.path.clone(),
            source_abs: self.abs(&input.path),
            bitcode: self.abs(&bc),
            dwarf_twin: dwarf_twin.map(|t| self.abs(&t)),
            regions: analysis
                .regions
                .iter()
                .map(|r| RegionInfo {
                    begin: pos(r.begin),
                    end: pos(r.end),
                    anchor: pos(r.anchor),
                    identifiers: r.identifiers.clone(),
                    before: r.before,
                    in_loop: r.in_loop,
                    block_close: r.block_close,
                })
                .collect(),
            debug_only: analysis.debug_only.clone(),
            removed_lines: analysis.removed_lines.clone(),
            object_blake3: match twin_dir {
                None => Some(rdb_descriptors::hash_file(object).map_err(io(object))?),
                Some(_) => None,
            },
        };
        let text = serde_json::to_string_pretty(&info).expect("sidecar serialises");
        std::fs::write(&json, text).map_err(io(&json))?;
        Ok(info)
    }

    fn twin_path(&self, input: &Input) -> PathBuf {
        self.tmp.path().join(format!("twin-{}.o", input.index))
    }

    /// The user's compile, the instrumented IR and the DWARF twin run side
    /// by side; regions are checked once the IR is there (a bad region then
    /// removes the outputs, see `run`).
    fn compile(&self) -> Result<(), DriverError> {
        let main = if !self.cmd.sources.is_empty() || !self.cmd.objects.is_empty() {
            Some(Job::spawn(self.main_args())?)
        } else {
            None
        };
        let mut ir = Vec::new();
        let mut twins = Vec::new();
        for (input, _) in &self.analyses {
            ir.push(Job::spawn(self.ir_args(&input.path, &self.ir_path(input)))?);
            if !self.cmd.full_debug_info {
                twins.push(Job::spawn(self.twin_args(input, &self.twin_path(input)))?);
            }
        }
        if let Some(main) = main {
            main.wait().map_err(quiet)?;
        }
        for job in ir {
            job.wait()?;
        }
        self.check_regions()?;
        for job in twins {
            job.wait()?;
        }
        for input in &self.cmd.sources {
            let object = self.object_of(&input.path);
            match self.analyses.iter().find(|(i, _)| i.index == input.index) {
                Some((_, analysis)) => {
                    self.rdb_object(input, analysis, &object, None)?;
                }
                None => {
                    // No debug text (any more): drop descriptions left by an
                    // earlier build of this object.
                    let (json, bc, twin) = sidecars(&object);
                    for f in [json, bc, twin] {
                        let _ = std::fs::remove_file(f);
                    }
                }
            }
        }
        for input in &self.cmd.debug_sources {
            let name = input.path.file_name().unwrap_or_default().to_string_lossy();
            let out = match (&self.cmd.output, self.cmd.sources.len() + self.cmd.debug_sources.len()) {
                (Some((_, o)), 1) => o.clone(),
                _ => PathBuf::from(format!("{}.o", name.trim_end_matches(".c"))),
            };
            self.compile_debug_source(input, &out)?;
        }
        Ok(())
    }

    fn link(&self) -> Result<(), DriverError> {
        if !self.cmd.debug_sources.is_empty() && self.cmd.sources.is_empty() && self.cmd.objects.is_empty() {
            return Err(DriverError::Usage(
                "rdb-clang: only debug sources (*.rdb.c) to link: add the program's sources or objects".into(),
            ));
        }
        self.check_sources()?;
        self.clang_main()?;
        let prog = self.cmd.output.as_ref().map(|(_, p)| p.clone()).unwrap_or_else(|| PathBuf::from("a.out"));
        // Objects built in this step (one-step compile+link) and given ones.
        let mut infos: Vec<ObjectInfo> = Vec::new();
        let mut any_twin = false;
        let mut inputs: Vec<&Input> = self.cmd.sources.iter().chain(&self.cmd.objects).collect();
        inputs.sort_by_key(|i| i.index); // region ids follow the command line
        for input in inputs {
            if let Some((_, analysis)) = self.analyses.iter().find(|(i, _)| i.index == input.index) {
                let info = self.rdb_object(input, analysis, Path::new(""), Some(self.tmp.path()))?;
                any_twin |= !self.cmd.full_debug_info;
                infos.push(info);
            } else if self.cmd.objects.contains(input) {
                let (json, _, _) = sidecars(&input.path);
                if json.exists() {
                    let info = load_object_info(&json)?;
                    let current = rdb_descriptors::hash_file(&input.path).ok();
                    if info.object_blake3.is_some() && info.object_blake3 != current {
                        eprintln!(
                            "rdb-clang: warning: {} changed since rdb-clang compiled it (rebuilt by another compiler?); its debug regions are left out",
                            input.path.display()
                        );
                        continue;
                    }
                    any_twin |= info.dwarf_twin.is_some();
                    infos.push(info);
                }
            }
        }
        // The DWARF twin executable.
        let dwarf_binary = if any_twin {
            let twin = PathBuf::from(format!("{}.rdb-g", prog.display()));
            self.twin_link(&twin)?;
            check_same_code(&prog, &twin)?;
            twin
        } else {
            prog.clone()
        };
        let program_symbols = defined_symbols(&prog)?;
        // Outline every object's regions.
        let mut outlined_bc = Vec::new();
        let mut next_id = 1u32;
        let mut regions = Vec::new();
        for (n, info) in infos.iter().enumerate() {
            let specs: Vec<RegionSpec> = info
                .regions
                .iter()
                .enumerate()
                .map(|(k, r)| RegionSpec {
                    id: next_id + k as u32,
                    begin_line: r.begin.0,
                    end_line: r.end.0,
                    identifiers: r.identifiers.clone(),
                })
                .collect();
            next_id += specs.len() as u32;
            let out = self.tmp.path().join(format!("debug-{n}.bc"));
            let input = PassInput {
                file: &info.source,
                regions: &specs,
                debug_only: &info.debug_only,
                program_symbols: &program_symbols,
            };
            let outlined = outline_file(&info.bitcode, &out, &input)?;
            for o in outlined {
                let mut r = info.regions[(o.id - specs[0].id) as usize].clone();
                let at_block_end = r.anchor;
                let text = std::fs::read_to_string(&info.source_abs).unwrap_or_default();
                let at_brace = text
                    .lines()
                    .nth(crate::source::instrumented_line(&info.removed_lines, r.anchor.0) as usize - 1)
                    .and_then(|l| l.chars().nth(r.anchor.1 as usize - 1))
                    == Some('}');
                // A region ending its block runs before whatever executes next when only the
                // region's path goes there (a `for` loop's step): anchor there. Otherwise (the
                // end of an `if`, a `while` loop's condition) it is anchored at the brace and
                // runs where its block's last statement ends (`ends_block`).
                if let Some((line, column)) = o.continues_at {
                    if at_brace && !info.removed_lines.contains(&line) {
                        r.anchor = (crate::source::stripped_line(&info.removed_lines, line), column);
                    }
                }
                let ends_block = at_brace && r.anchor == at_block_end;
                regions.push(c_region(info, &r, at_block_end, ends_block, o));
            }
            outlined_bc.push(out);
        }
        let paths = rdb_descriptors::artefact_paths(&prog);
        self.debug_module(&outlined_bc, &paths.debug_module, &program_symbols)?;
        let callbacks = crate::callbacks::read_specs(&paths.debug_module).map_err(DriverError::DebugModule)?;
        // The user's lines of the stripped sources the binary's DWARF describes.
        let line_maps: Vec<rdb_descriptors::LineMap> = infos
            .iter()
            .filter(|info| !info.removed_lines.is_empty())
            .map(|info| {
                let total = std::fs::read_to_string(&info.source_abs).map_or(0, |t| t.lines().count() as u32);
                let kept = total.saturating_sub(info.removed_lines.len() as u32);
                rdb_descriptors::LineMap {
                    file: info.source_abs.clone(),
                    lines: (1..=kept).map(|l| crate::source::instrumented_line(&info.removed_lines, l)).collect(),
                }
            })
            .collect();
        let warnings =
            crate::descriptors::write(&prog, &dwarf_binary, &paths, &regions, &callbacks, &line_maps, toolchain())?;
        for w in warnings {
            eprintln!("rdb-clang: warning: {w}");
        }
        Ok(())
    }

    /// Links the DWARF twin: the user's link with every object replaced by
    /// its twin (one-step sources are compiled with `-g` by clang itself).
    fn twin_link(&self, twin: &Path) -> Result<(), DriverError> {
        let mut args = Vec::new();
        let skip = self.cmd.debug_inputs();
        let mut i = 0;
        while i < self.cmd.args.len() {
            if skip.contains(&i) {
                i += 1;
                continue;
            }
            if let Some((o, _)) = &self.cmd.output {
                if i == *o {
                    i += if self.cmd.args[i] == "-o" { 2 } else { 1 };
                    continue;
                }
            }
            let a = &self.cmd.args[i];
            let replaced = self.cmd.objects.iter().find(|o| o.index == i).and_then(|o| {
                let (json, _, _) = sidecars(&o.path);
                load_object_info(&json).ok().and_then(|inf| inf.dwarf_twin)
            });
            args.push(replaced.map(|p| p.display().to_string()).unwrap_or_else(|| a.clone()));
            i += 1;
        }
        if !self.cmd.sources.is_empty() {
            args.push("-g".into());
        }
        args.extend(["-o".to_string(), twin.display().to_string()]);
        args.extend(self.overlay_args());
        run_clang(&args)
    }

    /// Builds `<prog>.rdb.so` from the outlined modules and debug inputs.
    fn debug_module(
        &self,
        bitcode: &[PathBuf],
        out: &Path,
        program_symbols: &HashSet<String>,
    ) -> Result<(), DriverError> {
        let mut objects = Vec::new();
        for input in &self.cmd.debug_sources {
            let o = self.tmp.path().join(format!("debug-src-{}.o", input.index));
            self.compile_debug_source(input, &o)?;
            objects.push(o);
        }
        // The C side of the debug-side API (`rdb_watch`, `rdb_backtrace`, ...).
        let api = self.tmp.path().join("rdb_api.c");
        std::fs::write(&api, crate::RDB_API_C).map_err(io(&api))?;
        let inc = self.tmp.path().join("include").display().to_string();
        let api_object = self.tmp.path().join("rdb_api.o");
        run_clang(
            &[
                "-O0",
                "-g",
                "-fPIC",
                "-c",
                "-I",
                &inc,
                &api.display().to_string(),
                "-o",
                &api_object.display().to_string(),
            ]
            .map(String::from),
        )?;
        objects.push(api_object);
        let mut args: Vec<String> = ["-shared", "-fPIC", "-O0", "-g"].map(String::from).to_vec();
        args.extend(bitcode.iter().map(|p| p.display().to_string()));
        args.extend(objects.iter().map(|p| p.display().to_string()));
        args.extend(self.cmd.debug_objects.iter().map(|i| i.path.display().to_string()));
        if bitcode.is_empty() && objects.is_empty() && self.cmd.debug_objects.is_empty() {
            let empty = self.tmp.path().join("empty.c");
            std::fs::write(&empty, "/* no debug regions */\n").map_err(io(&empty))?;
            args.push(empty.display().to_string());
        }
        args.extend(["-o".to_string(), out.display().to_string()]);
        run_clang(&args)?;
        // Debug code must not bind to program symbols by name: they would
        // resolve to the debug module's own copy or to nothing at all.
        let data = std::fs::read(out).map_err(io(out))?;
        let file =
            object::File::parse(&*data).map_err(|e| DriverError::Elf { path: out.into(), message: e.to_string() })?;
        use object::{Object, ObjectSymbol};
        let bad: Vec<String> = file
            .dynamic_symbols()
            .filter(|s| s.is_undefined())
            .filter_map(|s| s.name().ok().map(str::to_string))
            .filter(|n| program_symbols.contains(n) && !is_libc_name(n))
            .collect();
        if !bad.is_empty() {
            return Err(DriverError::DebugModule(format!(
                "error: debug-only code refers to program symbols by name: {}\n  = help: debug-only functions (in *.rdb.c files or marked debug-only) cannot use program objects directly; pass them from a debug region as parameters",
                bad.join(", ")
            )));
        }
        Ok(())
    }
}

/// Symbols the main binary and the C runtime both define (crt objects link
/// them into every executable).
fn is_libc_name(n: &str) -> bool {
    matches!(
        n,
        "_init"
            | "_fini"
            | "__dso_handle"
            | "_IO_stdin_used"
            | "__data_start"
            | "data_start"
            | "_edata"
            | "_end"
            | "__bss_start"
    )
}

fn load_object_info(path: &Path) -> Result<ObjectInfo, DriverError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let info: ObjectInfo = serde_json::from_str(&text).map_err(|e| {
        DriverError::Usage(format!(
            "{}: not an rdb-clang object description ({e}); rebuild the object with rdb-clang",
            path.display()
        ))
    })?;
    if info.format != "rdb-clang-object" || info.version != OBJECT_INFO_VERSION {
        return Err(DriverError::Usage(format!(
            "{}: rdb-clang object description version {} (this rdb-clang reads {}); rebuild the object with this rdb-clang",
            path.display(),
            info.version,
            OBJECT_INFO_VERSION
        )));
    }
    Ok(info)
}

/// Defined symbols of an ELF file (static and dynamic symbol tables).
pub fn defined_symbols(path: &Path) -> Result<HashSet<String>, DriverError> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).map_err(io(path))?;
    let file =
        object::File::parse(&*data).map_err(|e| DriverError::Elf { path: path.into(), message: e.to_string() })?;
    Ok(file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| !s.is_undefined())
        .filter_map(|s| s.name().ok().filter(|n| !n.is_empty()).map(str::to_string))
        .collect())
}

/// Checks that a DWARF twin (object or executable) has the same code as the
/// user's build (see [`rdb_locate::check_same_code`]).
pub fn check_same_code(main: &Path, twin: &Path) -> Result<(), DriverError> {
    Ok(rdb_locate::check_same_code(main, twin)?)
}

/// A located region's site: positions in the user's file (`begin`, `end`)
/// and in the stripped one (`anchor`, `block_end`), its arguments (program
/// functions are statics found by symbol).
fn c_region(
    info: &ObjectInfo,
    region: &RegionInfo,
    at_block_end: (u32, u32),
    ends_block: bool,
    outlined: OutlinedRegion,
) -> CRegion {
    let loc = |file: &Path, (line, column): (u32, u32)| SourceLocation { file: file.to_path_buf(), line, column };
    let site = RegionSite {
        region: outlined.id,
        begin: loc(&info.source_abs, region.begin),
        end: loc(&info.source_abs, region.end),
        anchor: loc(&info.source, region.anchor),
        // C regions that end a block are anchored where execution continues when only their
        // path goes there (see `source.rs`); the brace says which variables they see.
        ends_block,
        last_statement: region.before,
        block_end: (at_block_end != region.anchor).then(|| loc(&info.source, at_block_end)),
        bodies: Vec::new(),
        // Not known to the C front end: copies are placed at their anchor rows only.
        first_in_body: false,
        in_loop: region.in_loop,
        block_close_line: region.block_close,
        before_loop: None,
        function: outlined.function.clone(),
        arguments: outlined
            .arguments
            .iter()
            .map(|a| ArgumentSite {
                name: a.name.clone(),
                kind: if a.local { ArgumentKind::Local } else { ArgumentKind::Static },
                static_path: None,
                after_await: None,
                written_after: Vec::new(),
                unchanged: false,
                unwritten_before: false,
                address_only: a.address_only,
            })
            .collect(),
    };
    CRegion { site, entry: outlined.entry }
}

/// First line of `clang --version`.
fn toolchain() -> String {
    Process::new(clang())
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "clang (unknown version)".into())
}
