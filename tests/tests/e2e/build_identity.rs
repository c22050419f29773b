//! `cargo rdb build` of an instrumented sample app produces a main binary
//! byte-identical to a plain `cargo build` of the plain app at the same path
//! (dev and release), plus the debug module and descriptors. Release builds
//! with cargo's default profile (no debug information) take their
//! descriptors from a twin build proven to have the same code.

use rdb_tests::{assert_success, hash_file, run_cargo, run_cargo_rdb, scratch, tree_snapshot, SampleApp};

#[derive(Clone, Copy, PartialEq)]
enum Profile {
    Dev,
    /// The app's own release profile (`debug = "full"`).
    ReleaseWithDebugInfo,
    /// cargo's default release profile.
    ReleaseDefault,
}

fn identity(app: &str, profile: Profile) {
    let release = profile != Profile::Dev;
    let tmp = scratch("build");
    let sample = SampleApp::plain(app, tmp.path());
    if profile == Profile::ReleaseDefault {
        sample.default_release_profile();
    }
    let profile_dir = if release { "release" } else { "debug" };
    let mut args = vec!["build"];
    if release {
        args.push("--release");
    }
    assert_success("plain cargo build", &run_cargo(&sample.dir, &args));
    let plain = hash_file(&sample.dir.join("target").join(profile_dir).join(app));

    sample.instrument();
    if profile == Profile::ReleaseDefault {
        sample.default_release_profile();
    }
    // Plain cargo also builds the instrumented source (markers expand to nothing).
    assert_success("plain cargo build of the instrumented source", &run_cargo(&sample.dir, &args));
    let before = tree_snapshot(&sample.dir);
    let out = run_cargo_rdb(&sample.dir, &args);
    assert_success("cargo rdb build", &out);
    assert_eq!(before, tree_snapshot(&sample.dir), "cargo rdb build modified the user's files");

    let out_dir = sample.dir.join("target/rdb").join(profile_dir);
    let bin = out_dir.join(app);
    assert_eq!(hash_file(&bin), plain, "main binary differs from the plain build ({app}, {profile_dir})");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if profile == Profile::ReleaseDefault {
        // The twin's code was proven, function by function; at most a few
        // functions differ (LLVM allocates registers differently there).
        let proved = stderr.lines().find(|l| l.contains("Proved")).unwrap_or_else(|| panic!("no proof:\n{stderr}"));
        let numbers: Vec<usize> = proved.split([' ', ':']).filter_map(|w| w.parse().ok()).collect();
        if let [same, total, ..] = numbers[..] {
            assert!(same * 100 >= total * 99, "{proved}");
        } else {
            assert!(proved.contains("identical"), "{proved}");
        }
    }
    for suffix in ["", ".rdb.so", ".rdb-functions.json", ".rdb-arguments.json"] {
        let p = out_dir.join(format!("{app}{suffix}"));
        assert!(p.is_file(), "{} missing", p.display());
        assert!(stdout.contains(&p.display().to_string()), "path {} not printed:\n{stdout}", p.display());
    }
    let functions = rdb_descriptors::load_functions(&out_dir.join(format!("{app}.rdb-functions.json"))).unwrap();
    assert!(functions.toolchain.starts_with("rustc 1."), "{}", functions.toolchain);
    assert!(!functions.functions.is_empty());
    assert_eq!(functions.binary.blake3, plain);
    let arguments = rdb_descriptors::load_arguments(&out_dir.join(format!("{app}.rdb-arguments.json"))).unwrap();
    assert!(arguments.arguments.iter().any(|a| a.kind == rdb_descriptors::ArgumentKind::Static));
    // DWARF-derived parts (rdb-locate): every region runs somewhere; in a
    // dev build every argument has a size and a location there.
    assert!(functions.functions.iter().all(|f| !f.locations.is_empty()), "{:#?}", functions.functions);
    if !release {
        assert!(
            arguments.arguments.iter().all(|a| a.size > 0 && !a.locations.is_empty()),
            "{:#?}",
            arguments.arguments
        );
    }
}

pub fn minibc_dev() {
    identity("minibc", Profile::Dev);
}

pub fn minibc_release() {
    identity("minibc", Profile::ReleaseWithDebugInfo);
}

pub fn minibc_release_default_profile() {
    identity("minibc", Profile::ReleaseDefault);
}

pub fn jobq_dev() {
    identity("jobq", Profile::Dev);
}

pub fn jobq_release() {
    identity("jobq", Profile::ReleaseWithDebugInfo);
}

pub fn jobq_release_default_profile() {
    identity("jobq", Profile::ReleaseDefault);
}

pub fn race_release_default_profile() {
    identity("race", Profile::ReleaseDefault);
}

pub fn race_dev() {
    identity("race", Profile::Dev);
}

/// A second build with no change rewrites nothing in the shadows and keeps
/// the artefacts identical.
pub fn rebuild_without_change_is_identical() {
    let tmp = scratch("build");
    let sample = SampleApp::plain("minibc", tmp.path());
    sample.instrument();
    assert_success("first cargo rdb build", &run_cargo_rdb(&sample.dir, &["build"]));
    let shadow = sample.dir.join("target/rdb/shadow-main/src/vm.rs");
    let mtime = std::fs::metadata(&shadow).unwrap().modified().unwrap();
    let bin = sample.dir.join("target/rdb/debug/minibc");
    let first = hash_file(&bin);
    let out = run_cargo_rdb(&sample.dir, &["build", "-v"]);
    assert_success("second cargo rdb build", &out);
    assert_eq!(hash_file(&bin), first);
    assert_eq!(std::fs::metadata(&shadow).unwrap().modified().unwrap(), mtime, "unchanged file was rewritten");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(0 written, 0 removed)"), "{stderr}");
}

/// The user's rustflags (here from `.cargo/config.toml`, which cargo finds
/// from the shadow too) reach the main build, and identity still holds.
pub fn user_rustflags_are_kept() {
    let tmp = scratch("build");
    let sample = SampleApp::plain("jobq", tmp.path());
    std::fs::create_dir_all(sample.dir.join(".cargo")).unwrap();
    std::fs::write(sample.dir.join(".cargo/config.toml"), "[build]\nrustflags = [\"-C\", \"target-cpu=x86-64-v2\"]\n")
        .unwrap();
    assert_success("plain cargo build", &run_cargo(&sample.dir, &["build"]));
    let plain = hash_file(&sample.dir.join("target/debug/jobq"));
    sample.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&sample.dir, &["build"]));
    assert_eq!(hash_file(&sample.dir.join("target/rdb/debug/jobq")), plain);
    // Without the flags the binary differs: the flags were really applied.
    std::fs::remove_file(sample.dir.join(".cargo/config.toml")).unwrap();
    assert_success("cargo rdb build without flags", &run_cargo_rdb(&sample.dir, &["build"]));
    assert_ne!(hash_file(&sample.dir.join("target/rdb/debug/jobq")), plain);
}
