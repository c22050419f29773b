//! `cargo rdb build`.

use crate::cargo::{self, RustFlags};
use crate::opts::BuildArgs;
use crate::{artefacts, debug_package, progress, shadow, term, twin, why};
use anyhow::{bail, Context, Result};
use cargo_metadata::{CargoOpt, Metadata, Package, PackageId, Target};
use rdb_extract::{Region, SourceInput};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// An error whose diagnostics were already printed.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("errors were reported above")
    }
}

impl std::error::Error for Reported {}

fn is_kind(t: &Target, kind: &str) -> bool {
    t.kind.iter().any(|k| k.to_string() == kind)
}

/// The `.rs` files under one of a package's source directories, except in
/// target directories and nested packages.
fn package_sources(dir: &Path, target_dir: &Path) -> Vec<PathBuf> {
    let walker = walkdir::WalkDir::new(dir).sort_by_file_name().into_iter();
    walker
        .filter_entry(|e| {
            let p = e.path();
            if !e.file_type().is_dir() || p == dir {
                return true;
            }
            p != target_dir && e.file_name() != ".git" && e.file_name() != "target" && !p.join("Cargo.toml").exists()
        })
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect()
}

fn crate_name_for(pkg: &Package, rel_to_pkg: &Path) -> String {
    let lib = pkg.targets.iter().find(|t| is_kind(t, "lib") || is_kind(t, "rlib"));
    let bins: Vec<&Target> = pkg.targets.iter().filter(|t| is_kind(t, "bin")).collect();
    // A file of src/bin/<name>... belongs to that binary.
    let mut parts = rel_to_pkg.iter();
    if parts.next().is_some_and(|p| p == "src") && parts.next().is_some_and(|p| p == "bin") {
        if let Some(first) = rel_to_pkg.iter().nth(2) {
            let stem = Path::new(first).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            if let Some(b) = bins.iter().find(|b| b.name == stem) {
                return b.name.replace('-', "_");
            }
        }
    }
    if rel_to_pkg == Path::new("src/main.rs") {
        if let Some(b) = bins.first() {
            return b.name.replace('-', "_");
        }
    }
    match (lib, bins.first()) {
        (Some(l), _) => l.name.replace('-', "_"),
        (None, Some(b)) => b.name.replace('-', "_"),
        (None, None) => pkg.name.replace('-', "_"),
    }
}

/// Workspace members `id` depends on, itself included.
fn member_closure(meta: &Metadata, id: &PackageId) -> BTreeSet<PackageId> {
    let members: BTreeSet<&PackageId> = meta.workspace_members.iter().collect();
    let mut seen = BTreeSet::new();
    let mut todo = vec![id.clone()];
    while let Some(p) = todo.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        if let Some(node) = meta.resolve.as_ref().and_then(|r| r.nodes.iter().find(|n| n.id == p)) {
            for d in &node.deps {
                if members.contains(&d.pkg) {
                    todo.push(d.pkg.clone());
                }
            }
        }
    }
    seen
}

fn timing(args: &BuildArgs, what: &str, since: std::time::Instant) {
    if args.verbose {
        term::status("Timing", format!("{what} done at {:.2}s", since.elapsed().as_secs_f64()));
    }
}

/// What `cargo rdb build` built.
pub struct Built {
    /// (binary name, main binary path) of each binary.
    pub binaries: Vec<(String, PathBuf)>,
    /// What the stripped build's warnings say debug code left outside its regions (see
    /// [`why`]).
    pub suspects: Vec<why::Suspect>,
    /// Some manifest declares `rdb-macros` or `rdb-api`, so the main build with them
    /// (`--keep-rdb-dependencies`) is another binary than the one without.
    pub declares_rdb_dependencies: bool,
}

/// Builds every selected binary.
pub fn run(args: &BuildArgs) -> Result<Built> {
    let started = std::time::Instant::now();
    term::set_quiet(args.quiet);
    let progress = progress::start();
    let features = if args.all_features {
        Some(CargoOpt::AllFeatures)
    } else if !args.features.is_empty() {
        Some(CargoOpt::SomeFeatures(
            args.features
                .iter()
                .flat_map(|f| f.split([' ', ',']))
                .filter(|f| !f.is_empty())
                .map(String::from)
                .collect(),
        ))
    } else {
        None
    };
    let meta = {
        let mut cmd = cargo_metadata::MetadataCommand::new();
        cmd.cargo_path(cargo::cargo_path());
        if let Some(m) = &args.manifest_path {
            cmd.manifest_path(m);
        }
        if args.no_default_features {
            cmd.features(CargoOpt::NoDefaultFeatures);
        }
        if let Some(f) = features {
            cmd.features(f);
        }
        cmd.exec().context("`cargo metadata` failed")?
    };
    let ws_root = meta.workspace_root.clone().into_std_path_buf();
    let target_dir = meta.target_directory.clone().into_std_path_buf();
    let rdb_dir = target_dir.join("rdb");
    let shadow_main = rdb_dir.join("shadow-main");
    let shadow_debug = rdb_dir.join("shadow-debug");
    let build_dir = rdb_dir.join("target");
    let debug_build_dir = rdb_dir.join("target-debug");
    let (profile, profile_dir) = args.profile();

    let members = meta.workspace_packages();
    let selected: Vec<&Package> = if args.packages.is_empty() {
        let defaults: Vec<&PackageId> = meta.workspace_default_members.iter().collect();
        members.iter().copied().filter(|p| defaults.contains(&&p.id)).collect()
    } else {
        let mut v = Vec::new();
        for spec in &args.packages {
            match members.iter().find(|p| &p.name == spec) {
                Some(p) => v.push(*p),
                None => bail!("package `{spec}` is not a member of the workspace at {}", ws_root.display()),
            }
        }
        v
    };
    let mut bins: Vec<(&Package, &Target)> =
        selected.iter().flat_map(|p| p.targets.iter().filter(|t| is_kind(t, "bin")).map(move |t| (*p, t))).collect();
    if !args.bins.is_empty() {
        for b in &args.bins {
            if !bins.iter().any(|(_, t)| &t.name == b) {
                bail!("no binary target named `{b}` in the selected packages");
            }
        }
        bins.retain(|(_, t)| args.bins.contains(&t.name));
    }
    if bins.is_empty() {
        bail!("the selected packages have no binary target: `cargo rdb build` builds programs (use -p or --bin to pick one)");
    }

    // 1. Extraction, over every member (binaries may use member libraries).
    let mut inputs = Vec::new();
    let mut file_pkg: BTreeMap<PathBuf, PackageId> = BTreeMap::new();
    for pkg in &members {
        let pkg_dir = pkg.manifest_path.parent().expect("manifest in a dir").as_std_path();
        // The directories of the package's targets (src/, tests/, ...).
        let mut roots: Vec<&Path> = pkg.targets.iter().filter_map(|t| t.src_path.as_std_path().parent()).collect();
        roots.sort();
        roots.dedup();
        roots.dedup_by(|b, a| b.starts_with(*a));
        let files: BTreeSet<PathBuf> = roots.iter().flat_map(|r| package_sources(r, &target_dir)).collect();
        for path in files {
            let rel_ws = path.strip_prefix(&ws_root).unwrap_or(&path).to_path_buf();
            let rel_pkg = path.strip_prefix(pkg_dir).unwrap_or(&path);
            let module_path = rel_pkg.strip_prefix("src").map(rdb_extract::module_path_of).unwrap_or_default();
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            file_pkg.insert(rel_ws.clone(), pkg.id.clone());
            inputs.push(SourceInput { path: rel_ws, text, module_path, crate_name: crate_name_for(pkg, rel_pkg) });
        }
    }
    timing(args, "metadata and reading sources", started);
    let extraction = match rdb_extract::extract(&inputs, 1) {
        Ok(x) => x,
        Err(diags) => {
            eprintln!("{diags}");
            return Err(Reported.into());
        }
    };

    timing(args, "extraction", started);

    // 2. Shadow copies.
    let (region_crate, api_crate) = debug_package::write_support_crates(&rdb_dir)?;
    let extracted: BTreeMap<&Path, &rdb_extract::ExtractedFile> =
        extraction.files.iter().map(|f| (f.path.as_path(), f)).collect();
    let mut main_files = BTreeMap::new();
    let mut debug_files = BTreeMap::new();
    let mut declares_rdb_dependencies = false;
    for rel in shadow::source_files(&ws_root, &target_dir)? {
        let (m, d) = if let Some(f) = extracted.get(rel.as_path()) {
            (f.stripped.clone().into_bytes(), f.debug.clone().into_bytes())
        } else if rel.file_name().is_some_and(|n| n == "Cargo.toml") {
            let text = std::fs::read_to_string(ws_root.join(&rel))
                .with_context(|| format!("cannot read {}", rel.display()))?;
            let bad = || format!("cannot read {} as TOML", rel.display());
            let stripped = rdb_extract::strip_manifest(&text).with_context(bad)?;
            let debug = if text.parse::<toml_edit::DocumentMut>().with_context(bad)?.contains_key("package") {
                // The package's debug code calls `::rdb_region::region` and may use `rdb::`.
                let with = rdb_extract::add_path_dependency(&stripped, "rdb-region", &region_crate.to_string_lossy())
                    .with_context(bad)?;
                rdb_extract::add_path_dependency(&with, "rdb-api", &api_crate.to_string_lossy()).with_context(bad)?
            } else {
                stripped.clone()
            };
            declares_rdb_dependencies |= stripped != text;
            let main = if args.keep_rdb_dependencies { text } else { stripped };
            (main.into_bytes(), debug.into_bytes())
        } else {
            let bytes = std::fs::read(ws_root.join(&rel)).with_context(|| format!("cannot read {}", rel.display()))?;
            (bytes.clone(), bytes)
        };
        main_files.insert(rel.clone(), m);
        debug_files.insert(rel, d);
    }
    keep_shadow_lock(&ws_root, &shadow_main, &mut main_files)?;
    keep_shadow_lock(&ws_root, &shadow_debug, &mut debug_files)?;
    let synced = shadow::sync(&shadow_main, &main_files)?;
    shadow::sync(&shadow_debug, &debug_files)?;
    for shadow in [&shadow_main, &shadow_debug] {
        if let Ok(hash) = rdb_descriptors::hash_file(&ws_root.join("Cargo.lock")) {
            shadow::write_atomic(&lock_stamp(shadow), hash.as_bytes())?;
        }
    }
    timing(args, "shadow sync", started);
    if args.verbose {
        term::status(
            "Synced",
            format!("{} ({} written, {} removed)", shadow_main.display(), synced.written, synced.removed),
        );
    }

    // 3. Main build.
    let flags = RustFlags::with(&[
        format!("--remap-path-prefix={}={}", shadow_main.display(), ws_root.display()),
        format!("--remap-path-prefix={}={}", shadow_debug.display(), ws_root.display()),
    ]);
    let mut common: Vec<OsString> =
        vec!["--profile".into(), profile.clone().into(), "--target-dir".into(), build_dir.clone().into()];
    if args.all_features {
        common.push("--all-features".into());
    }
    if args.no_default_features {
        common.push("--no-default-features".into());
    }
    for f in &args.features {
        common.push("--features".into());
        common.push(f.into());
    }
    let mut main_args = common.clone();
    main_args.push("--manifest-path".into());
    main_args.push(shadow_main.join("Cargo.toml").into());
    for (p, t) in &bins {
        main_args.extend(["-p".into(), p.name.clone().into(), "--bin".into(), t.name.clone().into()]);
    }
    // 4. Debug modules, one per binary, built while the main build runs:
    // on a few cores the two overlap well (rustc's front end is serial).
    let mut debug_args = common.clone();
    // Own target directory: cargo's cache of rustc's target information is
    // keyed by the rustc wrapper, so sharing one directory with the main
    // build (which must not use a wrapper: cargo hashes it into symbol
    // names) would re-probe rustc on every build.
    if let Some(i) = debug_args.iter().position(|a| a == "--target-dir") {
        debug_args[i + 1] = debug_build_dir.clone().into();
    }
    // Features were resolved into the generated manifests.
    debug_args.retain(|a| a != "--all-features" && a != "--no-default-features");
    let mut i = 0;
    while i < debug_args.len() {
        if debug_args[i] == "--features" {
            debug_args.drain(i..i + 2);
        } else {
            i += 1;
        }
    }
    let root_manifest =
        std::fs::read_to_string(ws_root.join("Cargo.toml")).context("cannot read the workspace's Cargo.toml")?;
    let mut debug_manifests = Vec::new();
    for (pkg, bin) in &bins {
        let pkg_dir = rdb_dir.join("debug-packages").join(&bin.name);
        let manifest =
            debug_package::manifest(&root_manifest, &meta, pkg, bin, &shadow_debug, &region_crate, &api_crate)?;
        let mut files = BTreeMap::new();
        files.insert(PathBuf::from("Cargo.toml"), manifest.into_bytes());
        if let Ok(lock) = std::fs::read(ws_root.join("Cargo.lock")) {
            // Same dependency versions as the program. cargo updates this
            // copy; it is reset on every build.
            files.insert(PathBuf::from("Cargo.lock"), lock);
        }
        shadow::sync(&pkg_dir, &files)?;
        debug_manifests.push(pkg_dir.join("Cargo.toml"));
    }
    let wrapper = std::env::current_exe().context("cannot find the cargo-rdb executable")?;
    let env = [("RUSTC_WORKSPACE_WRAPPER", wrapper.into_os_string()), (crate::wrapper::ENV, OsString::from("1"))];
    let build_debug_modules = || -> Result<Vec<PathBuf>> {
        let mut modules = Vec::new();
        for ((_, bin), manifest) in bins.iter().zip(&debug_manifests) {
            let mut a = debug_args.clone();
            a.push("--manifest-path".into());
            a.push(manifest.into());
            term::status("Building", format!("debug module of `{}`", bin.name));
            let artefacts = cargo::build(&shadow_debug, &a, &flags, &env, args.quiet)?;
            let so = artefacts
                .iter()
                .filter(|a| a.kinds.iter().any(|k| k == "cdylib"))
                .flat_map(|a| a.files.iter())
                .find(|f| f.extension().is_some_and(|e| e == "so"))
                .cloned()
                .with_context(|| format!("cargo reported no shared object for the debug module of `{}`", bin.name))?;
            modules.push(so);
        }
        timing(args, "debug builds", started);
        Ok(modules)
    };
    term::status("Building", format!("main binaries ({profile} profile, regions stripped)"));
    let (main_artefacts, debug_modules) = std::thread::scope(|scope| {
        let debug = scope.spawn(build_debug_modules);
        let main = cargo::build_collecting(&shadow_main, &main_args, &flags, &[], args.quiet);
        timing(args, "main build", started);
        (main, debug.join().unwrap_or_else(|_| Err(anyhow::anyhow!("the debug build thread panicked"))))
    });
    let (main_artefacts, diagnostics) = main_artefacts?;
    let debug_modules = debug_modules?;
    let sources: Vec<why::SourceFile<'_>> = extraction
        .files
        .iter()
        .zip(&inputs)
        .filter(|(f, _)| f.instrumented)
        .map(|(f, input)| why::SourceFile { path: &f.path, user: &input.text, stripped: &f.stripped })
        .collect();
    let suspects = why::suspects(&diagnostics, &sources);
    for s in suspects.iter().filter(|s| s.certain) {
        term::warn(s);
    }

    let toolchain = cargo::rustc_version()?;
    let out_dir = rdb_dir.join(&profile_dir);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut exes = Vec::new();
    for (_, bin) in &bins {
        let exe = main_artefacts
            .iter()
            .find(|a| a.target_name == bin.name && a.kinds.iter().any(|k| k == "bin"))
            .and_then(|a| a.executable.clone())
            .with_context(|| format!("cargo reported no executable for binary `{}`", bin.name))?;
        exes.push(exe);
    }
    // Where the DWARF comes from: the binary itself, or (a profile without
    // full debug information, like cargo's default release profile) a twin
    // build with it whose code is proven the same, function by function.
    let mut dwarf: Vec<(PathBuf, Option<rdb_locate::TwinMap>)> = exes.iter().map(|e| (e.clone(), None)).collect();
    let lacking: Vec<usize> = (0..exes.len())
        .filter(|&i| !matches!(rdb_locate::debug_info(&exes[i]), Ok(rdb_locate::DebugInfo::Full)))
        .collect();
    if !lacking.is_empty() {
        let twin_dir = rdb_dir.join("target-twin");
        let script = twin::write_link_script(&rdb_dir)?;
        let mut extra = vec![
            format!("--remap-path-prefix={}={}", shadow_main.display(), ws_root.display()),
            format!("--remap-path-prefix={}={}", shadow_debug.display(), ws_root.display()),
        ];
        extra.extend(twin::rustflags(&script, &toolchain));
        let twin_flags = RustFlags::with(&extra);
        let mut twin_args = main_args.clone();
        if let Some(i) = twin_args.iter().position(|a| a == "--target-dir") {
            twin_args[i + 1] = twin_dir.into();
        }
        term::status("Building", format!("twin with debug information ({profile} profile has none)"));
        let twins =
            cargo::build(&shadow_main, &twin_args, &twin_flags, &twin::ENV.map(|(k, v)| (k, v.into())), args.quiet)?;
        timing(args, "twin build", started);
        for i in lacking {
            let name = &bins[i].1.name;
            let twin = twins
                .iter()
                .find(|a| a.target_name == *name && a.kinds.iter().any(|k| k == "bin"))
                .and_then(|a| a.executable.clone())
                .with_context(|| format!("cargo reported no executable for the twin of `{name}`"))?;
            let map = rdb_locate::prove_twin(&exes[i], &twin).with_context(|| {
                format!(
                    "binary `{name}` was built without debug info, and its twin built with debug info cannot describe it\n\
                     help: add to {}:\n\n    [profile.{profile}]\n    debug = \"full\"\n\nthen build and record again",
                    ws_root.join("Cargo.toml").display()
                )
            })?;
            twin::report(name, &map, args.verbose);
            dwarf[i] = (twin, Some(map));
        }
    }
    let mut outputs = Vec::new();
    for (((pkg, bin), so), (exe, (dwarf, twin))) in bins.iter().zip(debug_modules).zip(exes.iter().zip(&dwarf)) {
        // 5. Artefacts.
        let out_bin = out_dir.join(&bin.name);
        let paths = rdb_descriptors::artefact_paths(&out_bin);
        shadow::copy_atomic(exe, &out_bin)?;
        shadow::copy_atomic(&so, &paths.debug_module)?;
        let closure = member_closure(&meta, &pkg.id);
        let pkg_rel = pkg
            .manifest_path
            .parent()
            .expect("in a dir")
            .as_std_path()
            .strip_prefix(&ws_root)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let regions: Vec<&Region> = extraction
            .regions
            .iter()
            .filter(|r| file_pkg.get(&r.file).is_some_and(|id| closure.contains(id)))
            .filter(|r| region_in_binary(&r.file, &pkg_rel, pkg, bin, &file_pkg))
            .collect();
        let callbacks: Vec<&rdb_extract::Callback> = extraction
            .callbacks
            .iter()
            .filter(|c| file_pkg.get(&c.file).is_some_and(|id| closure.contains(id)))
            .filter(|c| region_in_binary(&c.file, &pkg_rel, pkg, bin, &file_pkg))
            .collect();
        // Descriptors describe the binary as copied (its identity is recorded).
        let dwarf = if dwarf == exe { &out_bin } else { dwarf };
        let line_maps: Vec<rdb_descriptors::LineMap> = extraction
            .files
            .iter()
            .filter(|f| f.instrumented && file_pkg.get(&f.path).is_some_and(|id| closure.contains(id)))
            .map(|f| rdb_descriptors::LineMap { file: ws_root.join(&f.path), lines: f.line_map.clone() })
            .collect();
        let (functions, arguments, warnings) = artefacts::write_descriptors(
            &out_bin,
            dwarf,
            twin.as_ref(),
            &toolchain,
            &regions,
            &artefacts::EventInputs { callbacks: &callbacks, line_maps: &line_maps },
            &ws_root,
        )?;
        for w in warnings {
            term::warn(format!("`{}`: {w}", bin.name));
        }
        let counts = (regions.len(), callbacks.len());
        outputs.push((bin.name.clone(), out_bin, paths.debug_module, functions, arguments, counts));
    }
    drop(progress);
    let mut built = Vec::new();
    for (name, bin, module, functions, arguments, (n, c)) in outputs {
        let callbacks = match c {
            0 => String::new(),
            1 => " and 1 callback".to_string(),
            c => format!(" and {c} callbacks"),
        };
        term::status("Finished", format!("`{name}` with {n} debug region{}{callbacks}", if n == 1 { "" } else { "s" }));
        // `cargo rdb record`/`replay` keep stdout for the program and print no paths.
        if args.print_paths {
            for p in [&bin, &module, &functions, &arguments] {
                println!("{}", p.display());
            }
        }
        built.push((name, bin));
    }
    Ok(Built { binaries: built, suspects, declares_rdb_dependencies })
}

fn lock_stamp(shadow: &Path) -> PathBuf {
    let name = shadow.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    shadow.with_file_name(format!("{name}.lock-source"))
}

/// cargo rewrites the shadow's `Cargo.lock` (the `rdb-macros` entry goes);
/// keep that version while the user's lock file is unchanged, so that a
/// rebuild without changes writes nothing.
fn keep_shadow_lock(ws_root: &Path, shadow: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) -> Result<()> {
    let Ok(user_lock) = rdb_descriptors::hash_file(&ws_root.join("Cargo.lock")) else { return Ok(()) };
    let stamp = std::fs::read(lock_stamp(shadow)).unwrap_or_default();
    if stamp == user_lock.as_bytes() {
        if let Ok(current) = std::fs::read(shadow.join("Cargo.lock")) {
            files.insert(PathBuf::from("Cargo.lock"), current);
        }
    }
    Ok(())
}

/// Whether a region's file is compiled into `bin`: files of other packages
/// (libraries the binary depends on), or files of the binary's own package
/// that are not another target's (other binaries, tests, examples, benches).
fn region_in_binary(
    file: &Path,
    pkg_rel: &Path,
    pkg: &Package,
    bin: &Target,
    file_pkg: &BTreeMap<PathBuf, PackageId>,
) -> bool {
    if file_pkg.get(file) != Some(&pkg.id) {
        return true;
    }
    let rel = file.strip_prefix(pkg_rel).unwrap_or(file);
    let first = rel.iter().next().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if matches!(first.as_str(), "tests" | "examples" | "benches") || rel == Path::new("build.rs") {
        return false;
    }
    let pkg_dir = pkg.manifest_path.parent().expect("dir").as_std_path();
    let other_root = pkg.targets.iter().any(|t| {
        t.name != bin.name
            && t.src_path.as_std_path().strip_prefix(pkg_dir).is_ok_and(|p| p == rel)
            && !is_kind(t, "lib")
    });
    if other_root {
        return false;
    }
    if rel.starts_with("src/bin") {
        let bin_src = bin.src_path.as_std_path();
        let stem_dir = bin_src.parent().unwrap_or(bin_src);
        return bin_src.ends_with(rel)
            || (bin_src.file_name().is_some_and(|n| n == "main.rs")
                && rel.starts_with(
                    stem_dir.strip_prefix(pkg.manifest_path.parent().expect("dir").as_std_path()).unwrap_or(stem_dir),
                ));
    }
    true
}
