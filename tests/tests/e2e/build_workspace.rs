//! A workspace with several members and a path dependency: regions in a
//! library member and in two binaries; every main binary is identical to the
//! plain build, every debug module holds the regions compiled into its binary.

use rdb_tests::{assert_success, hash_file, run_cargo, run_cargo_rdb, scratch, tree_snapshot, SampleApp};

pub fn workspace_with_path_dependency() {
    let tmp = scratch("build");
    let ws = SampleApp::fixture("workspace", tmp.path());
    let dir = ws.dir.clone();
    assert_success("plain cargo build", &run_cargo(&dir, &["build"]));
    let plain_app = hash_file(&dir.join("target/debug/app"));
    let plain_tool = hash_file(&dir.join("target/debug/tool"));
    assert_success("plain cargo build --profile checked", &run_cargo(&dir, &["build", "--profile", "checked"]));
    let plain_checked = hash_file(&dir.join("target/checked/app"));

    ws.instrument();
    assert_success("plain cargo build of the instrumented workspace", &run_cargo(&dir, &["build"]));
    let before = tree_snapshot(&dir);
    let out = run_cargo_rdb(&dir, &["build"]);
    assert_success("cargo rdb build", &out);
    assert_eq!(before, tree_snapshot(&dir));
    let out_dir = dir.join("target/rdb/debug");
    assert_eq!(hash_file(&out_dir.join("app")), plain_app, "app differs");
    assert_eq!(hash_file(&out_dir.join("tool")), plain_tool, "tool differs");

    let app = rdb_descriptors::load_functions(&out_dir.join("app.rdb-functions.json")).unwrap();
    let mut fns: Vec<&str> = app.functions.iter().map(|f| f.function.name.as_str()).collect();
    fns.sort();
    assert_eq!(fns, ["app::main", "util::mean"]);
    let args = rdb_descriptors::load_arguments(&out_dir.join("app.rdb-arguments.json")).unwrap();
    let statics: Vec<&str> = args
        .arguments
        .iter()
        .filter(|a| a.kind == rdb_descriptors::ArgumentKind::Static)
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(statics, ["CALLS", "CALLS"], "the static is passed in both regions");
    // Every region has a code location and every argument a location there.
    assert!(app.functions.iter().all(|f| !f.locations.is_empty()), "{:#?}", app.functions);
    assert!(args.arguments.iter().all(|a| a.locations.len() == 1 && a.size > 0), "{:#?}", args.arguments);
    // `tool` has no region of its own but runs the library's.
    let tool = rdb_descriptors::load_functions(&out_dir.join("tool.rdb-functions.json")).unwrap();
    let fns: Vec<&str> = tool.functions.iter().map(|f| f.function.name.as_str()).collect();
    assert_eq!(fns, ["util::mean"]);

    // Both debug modules hold the regions of their binaries.
    use object::{Object, ObjectSection};
    for (bin, expected) in [("app", 2), ("tool", 1)] {
        let data = std::fs::read(out_dir.join(format!("{bin}.rdb.so"))).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let section = file.section_by_name(rdb_descriptors::REGION_TABLE_SECTION).expect("region table");
        assert_eq!(section.size() / 16, expected, "{bin}");
    }

    // A custom profile of the workspace.
    assert_success("cargo rdb build --profile checked", &run_cargo_rdb(&dir, &["build", "--profile", "checked"]));
    assert_eq!(hash_file(&dir.join("target/rdb/checked/app")), plain_checked);
    assert!(dir.join("target/rdb/checked/app.rdb.so").is_file());

    // -p / --bin select one binary.
    let out = run_cargo_rdb(&dir, &["build", "-p", "app", "--bin", "tool"]);
    assert_success("cargo rdb build --bin tool", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("tool.rdb.so") && !stdout.contains("app.rdb.so"), "{stdout}");
}

pub fn missing_debug_info_is_explained() {
    let tmp = scratch("build");
    let dir = SampleApp::fixture("nodebug", tmp.path()).dir;
    let out = run_cargo_rdb(&dir, &["build"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[profile.dev]\n    debug = \"full\""), "{stderr}");
    assert!(!dir.join("target/rdb/debug/nodebug").exists());
}
