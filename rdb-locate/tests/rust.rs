//! Rust programs built with rustc, located, and checked against gdb.

mod support;

use rdb_descriptors::Location;
use support::*;

fn vm_sites() -> Vec<rdb_locate::RegionSite> {
    vec![
        site(
            1,
            "vm.rs",
            "run-acc",
            "Vm::run",
            vec![local("total"), local("self"), local("i"), global("COUNTER", "vm::COUNTER")],
        ),
        site(2, "vm.rs", "scale-ret", "scale", vec![local("x"), local("k"), local("y")]),
        site(3, "vm.rs", "largest-ret", "largest", vec![local("best")]),
        site(4, "vm.rs", "shadow-sum", "shadow", vec![local("x"), local("keep"), local("seed")]),
        site(5, "vm.rs", "total-call", "total_of", vec![local("xs"), local("s")]),
        // In the closure given to `map`, which starts at line 73.
        rdb_locate::RegionSite {
            bodies: vec![rdb_locate::Body { kind: rdb_locate::BodyKind::Closure, line: 73 }],
            ..site(6, "vm.rs", "closure-body", "main", vec![local("w"), local("v")])
        },
        site(7, "vm.rs", "run-acc", "Vm::run", vec![global("COUNTER", "crate::COUNTER")]),
        site(8, "vm.rs", "shadow-blank", "shadow", vec![local("x")]),
        site(9, "vm.rs", "discard-ret", "discard", vec![local("x")]),
    ]
}

/// The dev build, shared by the tests of this file (one rustc run).
fn dev_build() -> &'static Built {
    static BUILT: std::sync::OnceLock<Built> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| rustc("vm.rs", &[]))
}

fn argument<'a>(located: &'a rdb_locate::Located, region: u32, name: &str) -> &'a rdb_descriptors::ArgumentDescriptor {
    located.arguments.iter().find(|a| a.region == region && a.name == name).expect("argument described")
}

#[test]
fn dev_build_locals_self_static_and_inlined() {
    let built = dev_build();
    let sites = vm_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
    assert!(
        !located.warnings.iter().any(|w| w.starts_with("region 1") || w.starts_with("region 2")),
        "{:#?}",
        located.warnings
    );

    let run = &located.functions[0];
    assert_eq!(run.function.name, "vm::Vm::run");
    assert!(run.function.linkage_name.as_deref().is_some_and(|l| l.contains("3run")), "{:?}", run.function);
    assert_eq!(run.locations.len(), 1, "{run:#?}");
    assert!(run.locations[0].symbol.contains("2Vm3run"), "{run:#?}");
    assert!(run.locations[0].offset > 0);

    let total = argument(&located, 1, "total");
    assert_eq!((total.type_name.as_str(), total.size), ("i64", 8));
    assert!(matches!(total.locations[0].location, Location::Stack { .. }), "{total:#?}");
    let this = argument(&located, 1, "self");
    assert_eq!((this.type_name.as_str(), this.size), ("&mut vm::Vm", 8));
    let counter = argument(&located, 1, "COUNTER");
    assert_eq!(counter.type_name, "core::sync::atomic::AtomicU64");
    assert!(
        matches!(&counter.locations[0].location, Location::Symbol { symbol, offset: 0, .. } if symbol.contains("7COUNTER")),
        "{counter:#?}"
    );

    assert_eq!(argument(&located, 7, "COUNTER").locations, counter.locations, "`crate::` paths");

    // `scale` is #[inline(always)]: inlined into both calls in `main`.
    let scale = &located.functions[1];
    assert_eq!(scale.locations.len(), 2, "{scale:#?}");
    assert!(scale.locations.iter().all(|l| l.symbol.contains("4main")), "{scale:#?}");

    let checked = check_against_gdb(&built.binary, &sites, &located, 1);
    assert_eq!(checked.iter().find(|c| c.name == "total").and_then(|c| c.ours), Some(7));
    assert_eq!(checked.iter().find(|c| c.name == "COUNTER").and_then(|c| c.ours), Some(1));
    let checked = check_against_gdb(&built.binary, &sites, &located, 2);
    assert_eq!(checked.len(), 6);
}

#[test]
fn dev_build_monomorphised_copies_and_shadowing() {
    let built = dev_build();
    let sites = vm_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
    // `largest::<i64>` and `largest::<u8>`: one location each, differently typed.
    let largest = &located.functions[2];
    assert_eq!(largest.locations.len(), 2, "{largest:#?}");
    // `best` has another type in the second copy: its location says so.
    let best = argument(&located, 3, "best");
    assert!(best.locations.iter().any(|p| p.type_name.is_some() && p.size.is_some()), "{best:#?}");
    let checked = check_against_gdb(&built.binary, &sites, &located, 3);
    assert_eq!(checked.len(), 2);
    // The second `let x` shadows the first: x = seed * 3 + 100.
    let checked = check_against_gdb(&built.binary, &sites, &located, 4);
    let value = |name: &str| checked.iter().find(|c| c.name == name).and_then(|c| c.ours).unwrap();
    assert_eq!(value("x"), value("seed") * 3 + 100);
    assert_eq!(value("keep"), value("seed") * 3);
    // A slice is a fat pointer: 16 bytes on the stack.
    // A region in a closure runs in the closure's code, with its locals.
    let closure = &located.functions[5];
    assert_eq!(closure.function.name, "vm::main::{closure#0}");
    let checked = check_against_gdb(&built.binary, &sites, &located, 6);
    assert_eq!(checked.iter().find(|c| c.name == "w").and_then(|c| c.ours), Some(0));
    let xs = argument(&located, 5, "xs");
    assert_eq!((xs.type_name.as_str(), xs.size), ("&[i64]", 16));
    // No code on the anchor's line: the next line's code, with a note.
    let blank = &located.functions[7];
    assert_eq!(blank.locations, located.functions[3].locations);
    assert!(blank.note.as_deref().is_some_and(|n| n.contains("no code for line")), "{blank:#?}");
    assert!(matches!(xs.locations[0].location, Location::Stack { .. }), "{xs:#?}");
}

#[test]
fn release_build_registers_and_optimized_out() {
    let built = rustc("vm.rs", &["-C", "opt-level=2"]);
    let sites = vm_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");

    // `run` stays out of line (#[inline(never)]); its locals live in registers.
    // Its loop is unrolled four times, with a remainder loop: five copies of
    // the statement, one per iteration (the store of `self.acc` sunk after
    // the loop is not one).
    let run = &located.functions[0];
    assert_eq!(run.locations.len(), 5, "{run:#?}");
    let checked = check_against_gdb(&built.binary, &sites, &located, 1);
    let in_register = checked.iter().filter(|c| matches!(c.location, Location::Register { .. })).count();
    assert!(in_register >= 2, "{checked:#?}");
    assert_eq!(checked.iter().find(|c| c.name == "total").and_then(|c| c.ours), Some(7));

    // `scale` inlined twice; the optimiser dropped some of its variables,
    // which are described as optimized out (gdb agrees), with their type.
    let scale = &located.functions[1];
    assert_eq!(scale.locations.len(), 2, "{scale:#?}");
    let checked = check_against_gdb(&built.binary, &sites, &located, 2);
    assert!(checked.iter().any(|c| c.location == Location::OptimizedOut), "{checked:#?}");
    let y = argument(&located, 2, "y");
    assert_eq!((y.type_name.as_str(), y.size), ("i64", 8));
    assert!(located.warnings.iter().any(|w| w.contains("`y` is optimized out")), "{:#?}", located.warnings);
    // A slice in two registers: pieces.
    let xs = argument(&located, 5, "xs");
    assert!(matches!(&xs.locations[0].location, Location::Pieces { pieces } if pieces.len() == 2), "{xs:#?}");
    check_against_gdb(&built.binary, &sites, &located, 5);
    // `discard::<i64>`, whose result `main` drops, is inlined into `main` with no code left:
    // the note says why the region will never run and what would keep it.
    let discard = &located.functions[8];
    assert!(discard.locations.is_empty(), "{discard:#?}");
    let note = discard.note.as_deref().unwrap_or_default();
    assert!(note.contains("`discard`") && note.contains("#[inline(never)]"), "{note}");
    assert!(located.warnings.iter().any(|w| w.contains("region 9") && w.contains("it will never run")));
    // In a dev build it has a location of its own.
    let dev = rdb_locate::locate(&dev_build().binary, &sites).expect("locate");
    assert_eq!(dev.functions[8].locations.len(), 1, "{:#?}", dev.functions[8]);
    // `x` is `seed * 3 + 100`, computed from a register: reported as not expressible.
    check_against_gdb(&built.binary, &sites, &located, 4);
    assert!(
        located.warnings.iter().any(|w| w.contains("`x`") && w.contains("cannot express")),
        "{:#?}",
        located.warnings
    );
}

#[test]
fn descriptor_files_round_trip() {
    let built = dev_build();
    let located = rdb_locate::locate(&built.binary, &vm_sites()).expect("locate");
    let identity = rdb_locate::binary_identity(&built.binary).expect("identity");
    assert_eq!(identity.size, std::fs::metadata(&built.binary).unwrap().len());
    assert_eq!(identity.blake3.len(), 64);
    let (functions, arguments) =
        located.clone().into_descriptors(rdb_descriptors::Language::Rust, "rustc".into(), identity, "vm.rdb.so".into());
    let dir = tempfile::tempdir().unwrap();
    let paths = rdb_descriptors::artefact_paths(&dir.path().join("vm"));
    rdb_descriptors::store(&paths.functions, &functions).unwrap();
    rdb_descriptors::store(&paths.arguments, &arguments).unwrap();
    assert_eq!(rdb_descriptors::load_functions(&paths.functions).unwrap().functions, located.functions);
    assert_eq!(rdb_descriptors::load_arguments(&paths.arguments).unwrap().arguments, located.arguments);
}

/// `bodies.rs`: regions in closures written in generic code, next to a
/// one-line closure, and before an `.await` in a loop (dev build).
fn bodies_sites() -> Vec<rdb_locate::RegionSite> {
    let body = |kind, marker: &str| rdb_locate::Body { kind, line: anchor("bodies.rs", marker).line };
    use rdb_locate::BodyKind::{AsyncFn, Closure};
    vec![
        // In the `sort_by` closure of a method of `impl<K> Tally<K>`.
        rdb_locate::RegionSite {
            bodies: vec![body(Closure, "sort-by-body")],
            ..site(1, "bodies.rs", "sort-by-cmp", "Tally::top", vec![local("a"), local("b")])
        },
        // In a default trait method, before a statement holding a closure.
        site(2, "bodies.rs", "score-sum", "Scorer::score", vec![local("words")]),
        // In the `fold` closure of a function with an `impl Iterator` argument.
        rdb_locate::RegionSite {
            bodies: vec![body(Closure, "fold-body")],
            ..site(3, "bodies.rs", "fold-step", "checksum", vec![local("acc"), local("x")])
        },
        // In an `async fn`, before the `.await` of a loop's body.
        rdb_locate::RegionSite {
            bodies: vec![body(AsyncFn, "summarize-body")],
            ..site(4, "bodies.rs", "summarize-await", "summarize", vec![local("id"), local("sum")])
        },
    ]
}

#[test]
fn dev_build_closures_in_generic_code_and_async_bodies() {
    let built = rustc("bodies.rs", &[]);
    let sites = bodies_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
    assert!(located.warnings.is_empty(), "{:#?}", located.warnings);
    let symbols = |region: usize| -> Vec<&str> {
        located.functions[region - 1].locations.iter().map(|l| l.symbol.as_str()).collect()
    };
    // A closure in a generic function is generic too: one copy per
    // instantiation (`Tally<String>`, `Tally<usize>`), found although its
    // DWARF name's generic arguments hold paths
    // (`{closure#1}<alloc::string::String>`), and not the nested closure
    // written on the anchor's line (`{closure#0}` of `{closure#1}`).
    let sort_by = &located.functions[0];
    assert_eq!(sort_by.locations.len(), 2, "{sort_by:#?}");
    assert_eq!(located.instantiations[0].len(), 2);
    assert!(located.instantiations[0].iter().any(|i| i.contains("String")), "{:?}", located.instantiations);
    // The default method's own code only, not the `|w| self.weight(w)`
    // closure's code on the same line (whose DWARF name,
    // `{closure#0}<bodies::LenScorer>`, holds a path too).
    assert_eq!(symbols(2).len(), 1, "{:#?}", located.functions[1]);
    assert!(symbols(2)[0].contains("6Scorer5score17h"), "{:?}", symbols(2));
    // The `fold` closure of both instantiations of `checksum`.
    assert_eq!(located.functions[2].locations.len(), 2, "{:#?}", located.functions[2]);
    // The `async fn`: where the statement starts, once per iteration, not
    // also where the state machine resumes the suspended future (in the
    // middle of the statement, at the `.await`).
    assert_eq!(located.functions[3].locations.len(), 1, "{:#?}", located.functions[3]);
    // (`words` is a slice, which gdb prints as its elements, and the `async
    // fn`'s variables live in the future, read through its pointer: the
    // replay checks those, rdb-tests `regions_in_generic_closure_async`.)
    check_against_gdb(&built.binary, &sites, &located, 1);
    let checked = check_against_gdb(&built.binary, &sites, &located, 3);
    assert!(checked.iter().any(|c| c.name == "acc" && c.ours == Some(17)), "{checked:#?}");
}
