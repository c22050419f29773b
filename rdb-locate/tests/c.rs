//! C programs built with clang-14 at -O0 and -O2, located, and checked against gdb.

mod support;

use rdb_descriptors::Location;
use support::*;

fn list_sites() -> Vec<rdb_locate::RegionSite> {
    vec![
        site(
            1,
            "list.c",
            "insert-head",
            "insert",
            vec![local("n"), local("value"), global("head", "head"), global("inserted", "inserted")],
        ),
        site(2, "list.c", "len-next", "list_len", vec![local("len"), local("n"), global("calls", "calls")]),
        site(3, "list.c", "twice-ret", "twice", vec![local("v"), local("t")]),
        site(4, "list.c", "main-print", "main", vec![local("total"), local("argc")]),
    ]
}

fn argument<'a>(located: &'a rdb_locate::Located, region: u32, name: &str) -> &'a rdb_descriptors::ArgumentDescriptor {
    located.arguments.iter().find(|a| a.region == region && a.name == name).expect("argument described")
}

#[test]
fn o0_stack_locals_and_globals() {
    let built = clang("list.c", &["-O0"]);
    let sites = list_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
    assert!(located.warnings.is_empty(), "{:#?}", located.warnings);
    for f in &located.functions {
        assert_eq!(f.locations.len(), 1, "{f:#?}");
    }
    assert_eq!(located.functions[0].function.name, "insert");
    assert_eq!(located.functions[0].locations[0].symbol, "insert");
    assert_eq!(located.functions[2].locations[0].symbol, "twice", "not inlined at -O0");
    for a in located.arguments.iter().filter(|a| a.kind == rdb_descriptors::ArgumentKind::Local) {
        assert!(
            matches!(&a.locations[0].location, Location::Stack { base, offset } if base.name == "rbp" && *offset < 0),
            "{a:#?}"
        );
    }
    let n = argument(&located, 1, "n");
    assert_eq!((n.type_name.as_str(), n.size), ("struct node *", 8));
    assert_eq!(argument(&located, 2, "n").type_name, "const struct node *");
    let argc = argument(&located, 4, "argc");
    assert_eq!((argc.type_name.as_str(), argc.size), ("int", 4));
    // A function-local static is a symbol too (clang names it `list_len.calls`).
    let calls = argument(&located, 2, "calls");
    assert!(
        matches!(&calls.locations[0].location, Location::Symbol { symbol, .. } if symbol.contains("calls")),
        "{calls:#?}"
    );
    let head = argument(&located, 1, "head");
    assert!(
        matches!(&head.locations[0].location, Location::Symbol { symbol, offset: 0, .. } if symbol == "head"),
        "{head:#?}"
    );
    for region in 1..=4 {
        let checked = check_against_gdb(&built.binary, &sites, &located, region);
        assert!(checked.iter().all(|c| c.ours.is_some()), "{checked:#?}");
    }
}

#[test]
fn o2_registers_inlined_copies_and_entry_values() {
    let built = clang("list.c", &["-O2"]);
    let sites = list_sites();
    let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
    // `twice` is inlined into `insert` and `main`.
    let twice = &located.functions[2];
    assert_eq!(twice.locations.len(), 2, "{twice:#?}");
    let mut symbols: Vec<_> = twice.locations.iter().map(|l| l.symbol.as_str()).collect();
    symbols.sort();
    assert_eq!(symbols, ["insert", "main"]);
    let mut registers = 0;
    for region in 1..=4 {
        let checked = check_against_gdb(&built.binary, &sites, &located, region);
        registers += checked.iter().filter(|c| matches!(c.location, Location::Register { .. })).count();
    }
    assert!(registers >= 4, "expected register-allocated locals at -O2");
    // argc survives only as an entry value: the value edi had on entry to `main`.
    match &argument(&located, 4, "argc").locations[0].location {
        Location::EntryValue { value, .. } => {
            assert_eq!(**value, Location::Register { register: rdb_descriptors::Register::x86_64(5) })
        }
        other => panic!("argc: {other:?}"),
    }
    assert!(!located.warnings.iter().any(|w| w.contains("`argc`")), "{:#?}", located.warnings);
}

#[test]
fn gcc_frame_base_is_the_cfa() {
    for opt in ["-O0", "-O2"] {
        let built = gcc("list.c", &[opt]);
        let sites = list_sites();
        let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
        eprintln!("{opt}: {:#?}", located.warnings);
        let mut checked = Vec::new();
        for region in 1..=4 {
            checked.extend(check_against_gdb(&built.binary, &sites, &located, region));
        }
        eprintln!("{opt}: {checked:#?}");
        if opt == "-O0" {
            // fbreg over DW_OP_call_frame_cfa: CFA = rbp + 16 after the prologue.
            assert!(
                checked
                    .iter()
                    .filter(|c| !matches!(c.location, Location::Symbol { .. }))
                    .all(|c| matches!(&c.location, Location::Stack { base, .. } if base.name == "rbp")),
                "{checked:#?}"
            );
        }
        assert!(checked.iter().filter(|c| c.ours.is_some()).count() >= 6, "{opt}: {checked:#?}");
    }
}

#[test]
fn compressed_debug_sections() {
    let plain = clang("list.c", &["-O0"]);
    let compressed = clang("list.c", &["-O0", "-gz=zlib"]);
    let sites = list_sites();
    let a = rdb_locate::locate(&plain.binary, &sites).expect("locate");
    let b = rdb_locate::locate(&compressed.binary, &sites).expect("locate with SHF_COMPRESSED sections");
    assert_eq!(a, b);
}

#[test]
fn anchor_paths_absolute_relative_or_dotted() {
    let built = clang("list.c", &["-O0"]);
    let sites = list_sites();
    let reference = rdb_locate::locate(&built.binary, &sites).expect("locate");
    for file in [fixtures().join("list.c"), "./list.c".into()] {
        let mut moved = sites.clone();
        for s in &mut moved {
            s.anchor.file = file.clone();
        }
        let located = rdb_locate::locate(&built.binary, &moved).expect("locate");
        for (a, b) in located.functions.iter().zip(&reference.functions) {
            assert_eq!(a.locations, b.locations, "{}", file.display());
        }
    }
    // A path naming another file of the same name elsewhere does not match.
    let mut elsewhere = sites.clone();
    elsewhere[0].anchor.file = "/elsewhere/list.c".into();
    let located = rdb_locate::locate(&built.binary, &elsewhere).expect("locate");
    assert!(located.functions[0].locations.is_empty());
}
