//! Why does a rebuilt binary differ from the recorded one?
//!
//! [`describe`] reads what an executable tells about its build (a
//! [`ProgramBuild`]): the compilers of its `.comment` section, the directories
//! its units were compiled in, its debug information, a digest of every
//! section, and for a Rust executable in a Cargo project that project's locked
//! package versions and the settings of the profile it was built with. `rdb
//! record` stores it in the trace; [`differences`] compares it with a rebuilt
//! binary and says what changed: the toolchain, the project's place, the
//! profile, the locked versions, the debug information, and in any case the
//! first section that differs (with the function or object at its first
//! differing byte when the recorded executable itself is at hand: traces keep
//! it). [`recording_advice`] says, before a recording, what a later replay
//! with regions will lack.

use crate::LocateError;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use rdb_descriptors::{CargoBuild, DebugLevel, ProgramBuild, SectionDigest};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// Most build directories kept (a C program of many translation units has one per unit,
/// usually the same).
const MAX_BUILD_DIRS: usize = 16;
/// Most changed packages listed.
const MAX_LOCK_CHANGES: usize = 10;

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> LocateError + '_ {
    move |source| LocateError::Io { path: path.into(), source }
}

/// What the executable at `path` tells about its build.
pub fn describe(path: &Path) -> Result<ProgramBuild, LocateError> {
    let data = std::fs::read(path).map_err(io_error(path))?;
    let file =
        object::File::parse(&*data).map_err(|e| LocateError::NotElf { path: path.into(), reason: e.to_string() })?;
    let mut build = ProgramBuild {
        blake3: rdb_descriptors::hash_bytes(&data),
        toolchain: toolchain(&file),
        build_dirs: build_dirs(&file).map_err(|source| LocateError::Dwarf { path: path.into(), source })?,
        debug_info: match crate::identity::debug_info_in(path, &file)? {
            crate::DebugInfo::None => DebugLevel::None,
            crate::DebugInfo::LinesOnly => DebugLevel::Lines,
            crate::DebugInfo::Full => DebugLevel::Full,
        },
        sections: sections(&file),
        cargo: None,
    };
    if build.is_rust() {
        build.cargo = cargo_project(path, &build.build_dirs);
    }
    Ok(build)
}

/// The strings of the `.comment` section, in order, without repeats.
fn toolchain(file: &object::File<'_>) -> Vec<String> {
    let Some(data) = file.section_by_name(".comment").and_then(|s| s.data().ok()) else { return Vec::new() };
    let mut out: Vec<String> = Vec::new();
    for s in data.split(|b| *b == 0).filter(|s| !s.is_empty()) {
        let s = String::from_utf8_lossy(s).trim().to_string();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Whether a compilation directory belongs to the toolchain or to a downloaded crate rather
/// than to the program's own sources.
fn is_foreign_dir(dir: &str) -> bool {
    dir.starts_with("/rustc/") || dir.contains("/.cargo/registry/") || dir.contains("/.cargo/git/")
}

/// `DW_AT_comp_dir` of every unit that exists on this machine, foreign ones left out (the
/// standard library's units name directories of the machine that built the toolchain).
fn build_dirs(file: &object::File<'_>) -> Result<Vec<String>, gimli::Error> {
    let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(std::borrow::Cow::Borrowed(&[])))
    };
    let sections = gimli::DwarfSections::load(load)?;
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut dirs = BTreeSet::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        if let Some(dir) = &unit.comp_dir {
            let dir = dir.to_string_lossy().into_owned();
            if !is_foreign_dir(&dir) && Path::new(&dir).is_dir() {
                dirs.insert(dir);
            }
        }
        if dirs.len() >= MAX_BUILD_DIRS {
            break;
        }
    }
    Ok(dirs.into_iter().collect())
}

fn sections(file: &object::File<'_>) -> Vec<SectionDigest> {
    file.sections()
        .filter_map(|s| {
            let name = s.name().ok()?.to_string();
            if name.is_empty() {
                return None;
            }
            let bytes = s.data().unwrap_or(&[]);
            let blake3 = if bytes.is_empty() { String::new() } else { rdb_descriptors::hash_bytes(bytes) };
            Some(SectionDigest { name, address: s.address(), size: s.size(), blake3 })
        })
        .collect()
}

/// The profile a binary of cargo's target directory was built with, from its directory
/// (`target/debug/app` is `dev`; `target/rdb/release/app`, as `cargo rdb build` writes it, is
/// `release`); empty when its place does not say.
fn profile_of(exe: &Path) -> String {
    let mut dir = exe.parent();
    if dir.and_then(Path::file_name).is_some_and(|n| n == "examples" || n == "deps") {
        dir = dir.and_then(Path::parent);
    }
    let name = dir.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let above = dir.and_then(Path::parent).and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    match name.as_str() {
        "debug" => "dev".into(),
        "release" => "release".into(),
        _ if matches!(above.as_deref(), Some("target" | "rdb")) => name,
        _ => String::new(),
    }
}

/// The Cargo project of a Rust executable: a build directory holding a `Cargo.toml` (rustc
/// runs in the workspace root), else the directory above the `target/` the executable is in.
fn cargo_project(exe: &Path, build_dirs: &[String]) -> Option<CargoBuild> {
    let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
    let root = build_dirs.iter().map(PathBuf::from).find(|d| d.join("Cargo.toml").is_file()).or_else(|| {
        exe.ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "target"))
            .and_then(Path::parent)
            .filter(|r| r.join("Cargo.toml").is_file())
            .map(Path::to_path_buf)
    })?;
    let profile = profile_of(&exe);
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
    let profile_settings = profile_table(&manifest, &profile);
    let locked = std::fs::read_to_string(root.join("Cargo.lock")).map(|l| locked_packages(&l)).unwrap_or_default();
    Some(CargoBuild { root: root.display().to_string(), profile, profile_settings, locked })
}

/// `[profile.NAME]` of a manifest as `key = value` lines (empty when absent or unreadable).
fn profile_table(manifest: &str, name: &str) -> String {
    let Ok(doc) = manifest.parse::<toml_edit::DocumentMut>() else { return String::new() };
    let Some(table) = doc.get("profile").and_then(|p| p.get(name)).and_then(|t| t.as_table_like()) else {
        return String::new();
    };
    table.iter().map(|(k, v)| format!("{k} = {}", v.to_string().trim())).collect::<Vec<_>>().join("\n")
}

/// `name version` of every package of a `Cargo.lock`, sorted.
fn locked_packages(lock: &str) -> Vec<String> {
    let Ok(doc) = lock.parse::<toml_edit::DocumentMut>() else { return Vec::new() };
    let Some(packages) = doc.get("package").and_then(|p| p.as_array_of_tables()) else { return Vec::new() };
    let mut out: Vec<String> = packages
        .iter()
        .filter_map(|p| Some(format!("{} {}", p.get("name")?.as_str()?, p.get("version")?.as_str()?)))
        .collect();
    out.sort();
    out
}

/// Advice to give before recording an executable, when a later replay with debug regions
/// will lack something it needs: an unoptimized Rust executable without full debug
/// information (a dev profile with `debug = false`). Regions need the recorded build's DWARF;
/// for an optimized build without it (cargo's default release profile) `cargo rdb` builds a
/// twin with debug information and proves its code the recorded one's, but at opt-level 0
/// rustc's code changes with debug information, so no twin can stand in for it. `None` when
/// nothing is missing, the build is optimized, or the program is not a Rust one.
pub fn recording_advice(build: &ProgramBuild, exe: &Path) -> Option<String> {
    if !build.is_rust() || build.debug_info == DebugLevel::Full {
        return None;
    }
    let optimized = build.cargo.as_ref().and_then(optimized_profile);
    if optimized == Some(true) {
        return None;
    }
    let (table, manifest) = match &build.cargo {
        Some(c) if !c.profile.is_empty() => {
            (format!("[profile.{}]", c.profile), Path::new(&c.root).join("Cargo.toml").display().to_string())
        }
        Some(c) => ("[profile.PROFILE]".into(), Path::new(&c.root).join("Cargo.toml").display().to_string()),
        None => ("[profile.PROFILE]".into(), "Cargo.toml".into()),
    };
    let optimization = match optimized {
        Some(false) => "an unoptimized Rust executable",
        _ => "a Rust executable (of a profile whose optimization rdb cannot tell)",
    };
    Some(format!(
        "{} is {optimization} with {}: debug regions (`cargo rdb replay`, `rdb replay --debug`) cannot run \
         against a recording of it, because rdb needs the recorded build's own debug information (at opt-level 0 \
         a Rust executable built with debug information has other code; optimized builds get a twin with debug \
         information instead).\nhelp: if you may want regions, stop now, add `debug = \"full\"` under `{table}` \
         in {manifest}, rebuild and record that build",
        exe.display(),
        build.debug_info
    ))
}

/// Whether a Cargo profile optimizes: its `opt-level` setting, else that of the profile it
/// inherits from (`release` and `bench` do, `dev` and `test` do not); `None` when unknown.
fn optimized_profile(cargo: &CargoBuild) -> Option<bool> {
    let settings: toml_edit::DocumentMut = cargo.profile_settings.parse().ok()?;
    if let Some(level) = settings.get("opt-level") {
        return Some(match (level.as_integer(), level.as_str()) {
            (Some(n), _) => n != 0,
            (_, Some(s)) => s != "0",
            _ => return None,
        });
    }
    let base = settings.get("inherits").and_then(|i| i.as_str()).unwrap_or(&cargo.profile);
    match base {
        "release" | "bench" => Some(true),
        "dev" | "debug" | "test" => Some(false),
        _ => None,
    }
}

/// One thing that differs between the recorded build and a rebuilt binary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Difference {
    /// Other compilers or linkers.
    Toolchain { recorded: Vec<String>, now: Vec<String> },
    /// Built in another directory (paths are compiled into the binary).
    BuildDir { recorded: Vec<String>, now: Vec<String> },
    /// Built with another profile, or the profile's settings changed.
    Profile { manifest: PathBuf, recorded: (String, String), now: (String, String) },
    /// `Cargo.lock` locks other versions: `name old → new` or `name old (gone)`.
    Locked { lock: PathBuf, changes: Vec<String> },
    /// Other debug information.
    DebugInfo { recorded: DebugLevel, now: DebugLevel },
    /// Where the bytes differ: the first section (loaded sections first), and the function or
    /// object at its first differing byte when known.
    Section { section: String, detail: String, symbol: Option<String> },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Toolchain { recorded, now } => write!(
                f,
                "another toolchain: the recorded program was built by {}, this one by {} (build with the recorded \
                 toolchain, e.g. `rustup override set VERSION`, or record again)",
                recorded.join(" / "),
                now.join(" / ")
            ),
            Difference::BuildDir { recorded, now } => write!(
                f,
                "another directory: the recorded program was built in {}, this one in {} (source paths are compiled \
                 into the binary: build in the recorded directory, or record again)",
                recorded.join(", "),
                now.join(", ")
            ),
            Difference::Profile { recorded, now, .. } if recorded.0 != now.0 => write!(
                f,
                "another profile: the recorded program was built with the `{}` profile, this one with `{}` (pick the \
                 recorded one: `--profile {}`{})",
                recorded.0,
                now.0,
                recorded.0,
                if recorded.0 == "release" { " or `--release`" } else { "" },
            ),
            Difference::Profile { manifest, recorded, now } => write!(
                f,
                "the `[profile.{}]` settings of {} changed since the recording: they were {}, they are now {} (a \
                 binary built with other settings cannot replay that trace: restore them, or record again with \
                 this build)",
                recorded.0,
                manifest.display(),
                settings(&recorded.1),
                settings(&now.1)
            ),
            Difference::Locked { lock, changes } => write!(
                f,
                "{} locks other versions than when the program was recorded: {} (restore the recorded lock file, \
                 or record again)",
                lock.display(),
                changes.join(", ")
            ),
            Difference::DebugInfo { recorded, now } => write!(
                f,
                "other debug information: the recorded program has {recorded}, this one has {now} (the profile's \
                 `debug` setting changed after the recording; a binary built with another setting cannot replay \
                 that trace: restore it, or record again with this build)"
            ),
            Difference::Section { section, detail, symbol } => {
                write!(f, "the first difference is in section `{section}`: {detail}")?;
                if let Some(s) = symbol {
                    write!(f, ", in `{s}`")?;
                }
                Ok(())
            }
        }
    }
}

fn settings(table: &str) -> String {
    if table.is_empty() {
        "cargo's defaults".into()
    } else {
        format!("`{}`", table.lines().collect::<Vec<_>>().join("; "))
    }
}

/// What differs between the recorded build and the binary at `rebuilt`: its causes first,
/// then where the bytes differ. `recorded` is what the trace recorded about the build (facts
/// that describe another file are ignored); `recorded_binary` is the recorded executable
/// itself, when at hand (a trace keeps it), which gives the facts when the trace has none and
/// names the function at the first differing byte. Empty when the files are identical or
/// nothing is known of the recorded build.
pub fn differences(
    recorded: Option<&ProgramBuild>,
    recorded_binary: Option<&Path>,
    rebuilt: &Path,
) -> Result<Vec<Difference>, LocateError> {
    let described;
    let recorded = match (recorded, recorded_binary) {
        (Some(r), _) => r,
        (None, Some(binary)) => {
            described = describe(binary)?;
            &described
        }
        (None, None) => return Ok(Vec::new()),
    };
    let now = describe(rebuilt)?;
    if now.blake3 == recorded.blake3 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let compilers = |t: &[String]| -> BTreeSet<String> { t.iter().cloned().collect() };
    if !recorded.toolchain.is_empty() && compilers(&recorded.toolchain) != compilers(&now.toolchain) {
        let only =
            |a: &[String], b: &[String]| -> Vec<String> { a.iter().filter(|x| !b.contains(x)).cloned().collect() };
        out.push(Difference::Toolchain {
            recorded: only(&recorded.toolchain, &now.toolchain),
            now: only(&now.toolchain, &recorded.toolchain),
        });
    }
    if !recorded.build_dirs.is_empty() && !now.build_dirs.is_empty() && recorded.build_dirs != now.build_dirs {
        out.push(Difference::BuildDir { recorded: recorded.build_dirs.clone(), now: now.build_dirs.clone() });
    }
    if let (Some(r), Some(n)) = (&recorded.cargo, &now.cargo) {
        let manifest = Path::new(&n.root).join("Cargo.toml");
        if !r.profile.is_empty()
            && !n.profile.is_empty()
            && (r.profile != n.profile || r.profile_settings != n.profile_settings)
        {
            out.push(Difference::Profile {
                manifest,
                recorded: (r.profile.clone(), r.profile_settings.clone()),
                now: (n.profile.clone(), n.profile_settings.clone()),
            });
        }
        let changes = lock_changes(&r.locked, &n.locked);
        if !changes.is_empty() {
            out.push(Difference::Locked { lock: Path::new(&n.root).join("Cargo.lock"), changes });
        }
    }
    if recorded.debug_info != now.debug_info {
        out.push(Difference::DebugInfo { recorded: recorded.debug_info, now: now.debug_info });
    }
    let recorded_bytes = match recorded_binary {
        Some(p) => Some(std::fs::read(p).map_err(io_error(p))?),
        None => None,
    };
    let recorded_bytes = recorded_bytes.filter(|b| rdb_descriptors::hash_bytes(b) == recorded.blake3);
    let rebuilt_bytes = std::fs::read(rebuilt).map_err(io_error(rebuilt))?;
    out.push(first_section_difference(recorded, &now, recorded_bytes.as_deref(), &rebuilt_bytes));
    Ok(out)
}

/// Packages whose locked version changed or that are no longer locked (packages added since
/// are left out: adding `rdb-macros` adds its own).
fn lock_changes(recorded: &[String], now: &[String]) -> Vec<String> {
    let split = |s: &String| s.split_once(' ').map(|(n, v)| (n.to_string(), v.to_string()));
    let now_set: BTreeSet<&String> = now.iter().collect();
    let mut changes = Vec::new();
    for (name, version) in recorded.iter().filter(|p| !now_set.contains(p)).filter_map(split) {
        let new: Vec<String> = now.iter().filter_map(split).filter(|(n, _)| *n == name).map(|(_, v)| v).collect();
        changes.push(if new.is_empty() {
            format!("{name} {version} (no longer locked)")
        } else {
            format!("{name} {version} → {}", new.join(" / "))
        });
    }
    if changes.len() > MAX_LOCK_CHANGES {
        let more = changes.len() - MAX_LOCK_CHANGES;
        changes.truncate(MAX_LOCK_CHANGES);
        changes.push(format!("{more} more"));
    }
    changes
}

/// The first section that differs, loaded sections first (they are what runs), in the
/// recorded file's order.
fn first_section_difference(
    recorded: &ProgramBuild,
    now: &ProgramBuild,
    recorded_bytes: Option<&[u8]>,
    rebuilt_bytes: &[u8],
) -> Difference {
    let recorded_file = recorded_bytes.and_then(|b| object::File::parse(b).ok());
    let rebuilt_file = object::File::parse(rebuilt_bytes).ok();
    // The build id is a hash of the rest: it differs whenever anything else does.
    let derived = |s: &&SectionDigest| s.name == ".note.gnu.build-id";
    let loaded = recorded.sections.iter().filter(|s| s.address != 0 && !derived(s));
    let unloaded = recorded.sections.iter().filter(|s| s.address == 0);
    for s in loaded.chain(unloaded).chain(recorded.sections.iter().filter(derived)) {
        let Some(n) = now.sections.iter().find(|n| n.name == s.name) else {
            return Difference::Section {
                section: s.name.clone(),
                detail: "this build has no such section".into(),
                symbol: None,
            };
        };
        if n == s {
            continue;
        }
        let mut detail = if n.address != s.address || n.size != s.size {
            format!(
                "{} bytes at {:#x} in the recorded program, {} bytes at {:#x} in this one",
                s.size, s.address, n.size, n.address
            )
        } else {
            "same place and size, other bytes".to_string()
        };
        let mut symbol = None;
        if let (Some(rf), Some(nf)) = (&recorded_file, &rebuilt_file) {
            if let Some(offset) = first_differing_byte(rf, nf, &s.name) {
                let address = s.address + offset;
                detail.push_str(&format!("; first differing byte at offset {offset:#x}"));
                if s.address != 0 {
                    detail.push_str(&format!(" (address {address:#x})"));
                    symbol = symbol_at(rf, address);
                }
            }
        }
        if s.address == 0 && s.name.starts_with(".debug") {
            detail.push_str(
                "; the code and data are the same, only the debug information differs: lines were added or \
                 removed outside the regions (a `use` or a helper only debug code needs must be `#[debug_only]`), \
                 or the sources moved",
            );
        }
        return Difference::Section { section: s.name.clone(), detail, symbol };
    }
    if let Some(extra) = now.sections.iter().find(|n| !recorded.sections.iter().any(|s| s.name == n.name)) {
        return Difference::Section {
            section: extra.name.clone(),
            detail: "the recorded program has no such section".into(),
            symbol: None,
        };
    }
    Difference::Section {
        section: "(none)".into(),
        detail: "every section is the same; the files differ in their ELF headers".into(),
        symbol: None,
    }
}

/// Offset of the first byte at which section `name` differs between two files.
fn first_differing_byte(a: &object::File<'_>, b: &object::File<'_>, name: &str) -> Option<u64> {
    let da = a.section_by_name(name)?.data().ok()?;
    let db = b.section_by_name(name)?.data().ok()?;
    let same = da.iter().zip(db).take_while(|(x, y)| x == y).count();
    (same < da.len().max(db.len())).then_some(same as u64)
}

/// The function or object covering `address`, demangled.
fn symbol_at(file: &object::File<'_>, address: u64) -> Option<String> {
    let best = file
        .symbols()
        .filter(|s| matches!(s.kind(), SymbolKind::Text | SymbolKind::Data))
        .filter(|s| s.address() <= address && address < s.address() + s.size().max(1))
        .filter(|s| s.name().is_ok_and(|n| !n.is_empty()))
        .min_by_key(|s| s.size())?;
    Some(format!("{:#}", rustc_demangle::demangle(best.name().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_come_from_the_target_directory() {
        assert_eq!(profile_of(Path::new("/p/target/debug/app")), "dev");
        assert_eq!(profile_of(Path::new("/p/target/release/app")), "release");
        assert_eq!(profile_of(Path::new("/p/target/rdb/debug/app")), "dev");
        assert_eq!(profile_of(Path::new("/p/target/rdb/fast/app")), "fast");
        assert_eq!(profile_of(Path::new("/p/target/fast/app")), "fast");
        assert_eq!(profile_of(Path::new("/p/target/debug/examples/x")), "dev");
        assert_eq!(profile_of(Path::new("/usr/bin/ls")), "");
    }

    #[test]
    fn lock_changes_name_versions_and_ignore_additions() {
        let recorded = vec!["a 1.0.0".to_string(), "b 2.0.0".into(), "c 3.0.0".into()];
        let now = vec!["a 1.0.0".to_string(), "b 2.1.0".into(), "rdb-macros 0.1.0".into()];
        assert_eq!(lock_changes(&recorded, &now), ["b 2.0.0 → 2.1.0", "c 3.0.0 (no longer locked)"]);
        assert!(lock_changes(&recorded, &recorded).is_empty());
    }

    #[test]
    fn optimized_profiles_need_no_advice() {
        let cargo = |profile: &str, settings: &str| CargoBuild {
            root: "/p".into(),
            profile: profile.into(),
            profile_settings: settings.into(),
            locked: Vec::new(),
        };
        assert_eq!(optimized_profile(&cargo("release", "")), Some(true));
        assert_eq!(optimized_profile(&cargo("dev", "")), Some(false));
        assert_eq!(optimized_profile(&cargo("dev", "opt-level = 2")), Some(true));
        assert_eq!(optimized_profile(&cargo("release", "opt-level = 0")), Some(false));
        assert_eq!(optimized_profile(&cargo("release", "opt-level = \"s\"")), Some(true));
        assert_eq!(optimized_profile(&cargo("fast", "inherits = \"release\"")), Some(true));
        assert_eq!(optimized_profile(&cargo("custom", "")), None);
        let build = |profile: &str| ProgramBuild {
            blake3: String::new(),
            toolchain: vec!["rustc version 1.95.0".into()],
            build_dirs: Vec::new(),
            debug_info: DebugLevel::None,
            sections: Vec::new(),
            cargo: Some(cargo(profile, "")),
        };
        let exe = Path::new("/p/target/x");
        {
            assert!(build("release").is_rust());
            assert_eq!(recording_advice(&build("release"), exe), None);
            let advice = recording_advice(&build("dev"), exe).unwrap();
            assert!(advice.contains("unoptimized") && advice.contains("[profile.dev]"), "{advice}");
        }
    }

    #[test]
    fn profile_tables_are_read_as_settings() {
        let manifest = "[package]\nname = \"x\"\n\n[profile.release]\ndebug = \"full\"\nlto = true\n";
        assert_eq!(profile_table(manifest, "release"), "debug = \"full\"\nlto = true");
        assert_eq!(profile_table(manifest, "dev"), "");
        let lock = "version = 4\n\n[[package]]\nname = \"b\"\nversion = \"1.0.0\"\n\n[[package]]\nname = \"a\"\nversion = \"0.2.0\"\nsource = \"registry+x\"\n";
        assert_eq!(locked_packages(lock), ["a 0.2.0", "b 1.0.0"]);
    }
}
