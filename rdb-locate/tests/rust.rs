//! Rust programs built with rustc, located, and checked against gdb.

mod support;

use rdb_descriptors::Location;
use support::*;

fn vm_sites() -> Vec<rdb_locate::RegionSite> {
    vec![
        site(1, "vm.rs", "run-acc", "Vm::run", vec![local("total"), local("self"), local("i"), global("COUNTER", "vm::COUNTER")]),
        site(2, "vm.rs", "scale-ret", "scale", vec![local("x"), local("k"), local("y")]),
    ]
}

fn argument<'a>(located: &'a rdb_locate::Located, region: u32, name: &str) -> &'a rdb_descriptors::ArgumentDescriptor {
    located.arguments.iter().find(|a| a.region == region && a.name == name).expect("argument described")
}

#[test]
fn dev_build_locals_self_static_and_inlined() {
    let built = rustc("vm.rs", &[]);
    let sites = vm_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
    assert!(located.warnings.is_empty(), "{:#?}", located.warnings);

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
fn release_build_registers_and_optimized_out() {
    let built = rustc("vm.rs", &["-C", "opt-level=2"]);
    let sites = vm_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");

    // `run` stays out of line (#[inline(never)]); its locals live in registers.
    let run = &located.functions[0];
    assert_eq!(run.locations.len(), 1, "{run:#?}");
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
}
