//! A debug module works without rdb's runtime: load it in a separate
//! process, find a region's debug function through the `rdb_regions` table,
//! call it with hand-built arguments of the program's types, check its output.

use rdb_tests::{assert_success, output, run_cargo_rdb, scratch, timed, SampleApp};

pub fn region_of_minibc_main_runs_from_dlopen() {
    let tmp = scratch("build");
    let sample = SampleApp::plain("minibc", tmp.path());
    sample.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&sample.dir, &["build"]));
    let out_dir = sample.dir.join("target/rdb/debug");
    let functions = rdb_descriptors::load_functions(&out_dir.join("minibc.rdb-functions.json")).unwrap();
    let arguments = rdb_descriptors::load_arguments(&out_dir.join("minibc.rdb-arguments.json")).unwrap();
    let region = functions.functions.iter().find(|f| f.function.name == "minibc::main").expect("a region in main");
    assert_eq!(region.entry, rdb_descriptors::DebugEntry::RegionTable);
    let mut args: Vec<_> = arguments.arguments.iter().filter(|a| a.region == region.region).collect();
    args.sort_by_key(|a| a.position);
    let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["path", "source", "PROGRAMS_RUN"]);

    // path: &String, source: String, PROGRAMS_RUN: AtomicUsize.
    let out = output(
        timed(60, env!("CARGO_BIN_EXE_rdb-call-region"))
            .arg(out_dir.join("minibc.rdb.so"))
            .arg(region.region.to_string())
            .args(["string-ref:prog.bc", "string:a = 1;\\nprint a;\\n", "atomic-usize:41"]),
    );
    assert_success("rdb-call-region", &out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rdb: prog.bc: 2 lines, programs run: 41\n");
}

pub fn every_region_is_in_the_table() {
    let tmp = scratch("build");
    let sample = SampleApp::plain("jobq", tmp.path());
    sample.instrument();
    assert_success("cargo rdb build", &run_cargo_rdb(&sample.dir, &["build"]));
    let out_dir = sample.dir.join("target/rdb/debug");
    let functions = rdb_descriptors::load_functions(&out_dir.join("jobq.rdb-functions.json")).unwrap();
    let data = std::fs::read(out_dir.join("jobq.rdb.so")).unwrap();
    use object::{Object, ObjectSection};
    let file = object::File::parse(&*data).unwrap();
    let section = file.section_by_name(rdb_descriptors::REGION_TABLE_SECTION).unwrap();
    let bytes = section.data().unwrap();
    let mut ids: Vec<u64> = bytes.chunks(16).map(|c| u64::from_le_bytes(c[..8].try_into().unwrap())).collect();
    ids.sort();
    let mut expected: Vec<u64> = functions.functions.iter().map(|f| f.region as u64).collect();
    expected.sort();
    assert_eq!(ids, expected);
}
