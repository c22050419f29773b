//! Bad input: clear errors or warnings, never a panic.

mod support;

use rdb_descriptors::Location;
use rdb_locate::{locate, LocateError};
use support::*;

fn c_sites() -> Vec<rdb_locate::RegionSite> {
    vec![site(1, "list.c", "insert-head", "insert", vec![local("n"), global("head", "head")])]
}

#[test]
fn missing_file_names_the_path() {
    let err = locate(std::path::Path::new("/nonexistent/prog"), &c_sites()).unwrap_err();
    assert!(matches!(err, LocateError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/prog"), "{err}");
}

#[test]
fn not_an_elf_file() {
    let path = fixtures().join("list.c");
    let err = locate(&path, &c_sites()).unwrap_err();
    assert!(matches!(err, LocateError::NotElf { .. }), "{err:?}");
    assert!(err.to_string().contains("list.c"), "{err}");
}

#[test]
fn c_without_g_says_to_add_g() {
    let built = clang_exactly("list.c", &["-O0"]);
    let err = locate(&built.binary, &c_sites()).unwrap_err();
    assert!(matches!(err, LocateError::NoDebugInfo { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("`-g`") && text.contains("debug = \"full\""), "{text}");
}

#[test]
fn rust_without_debug_info_says_which_setting() {
    // Only the standard library's DWARF is in the binary.
    let built = rustc_exactly("vm.rs", &[]);
    let sites = vec![site(1, "vm.rs", "run-acc", "Vm::run", vec![local("total")])];
    let err = locate(&built.binary, &sites).unwrap_err();
    assert!(matches!(err, LocateError::NoDebugInfo { .. }), "{err:?}");
    assert!(err.to_string().contains("[profile.dev]"), "{err}");
}

#[test]
fn rust_line_tables_only() {
    let built = rustc_exactly("vm.rs", &["-C", "debuginfo=line-tables-only"]);
    // Code locations work from line tables alone...
    let bare = vec![site(1, "vm.rs", "run-acc", "Vm::run", vec![])];
    let located = locate(&built.binary, &bare).expect("line tables suffice for code locations");
    assert_eq!(located.functions[0].locations.len(), 1);
    // ...variables need full debug info.
    let sites = vec![site(1, "vm.rs", "run-acc", "Vm::run", vec![local("total")])];
    let err = locate(&built.binary, &sites).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("line-tables-only") && text.contains("debug = \"full\""), "{text}");
}

#[test]
fn unknown_function_variable_and_file_are_warnings() {
    let built = clang("list.c", &["-O0"]);
    let sites = vec![
        site(1, "list.c", "insert-head", "no_such_function", vec![local("n")]),
        site(
            2,
            "list.c",
            "insert-head",
            "insert",
            vec![local("no_such_var"), global("nowhere", "nowhere"), global("tls_hits", "tls_hits")],
        ),
        rdb_locate::RegionSite {
            anchor: rdb_descriptors::SourceLocation { file: "other.c".into(), line: 3, column: 1 },
            ..site(3, "list.c", "insert-head", "insert", vec![])
        },
    ];
    let located = locate(&built.binary, &sites).expect("partial results");
    assert!(located.functions[0].locations.is_empty());
    assert!(located.functions[0].note.as_deref().is_some_and(|n| n.contains("no_such_function")));
    assert!(located.functions[2].note.as_deref().is_some_and(|n| n.contains("other.c")));
    assert_eq!(located.functions[1].locations.len(), 1);
    let var = &located.arguments[1];
    assert_eq!(var.locations[0].location, Location::OptimizedOut);
    assert_eq!(located.arguments[3].locations[0].location, Location::OptimizedOut);
    assert!(
        located.warnings.iter().any(|w| w.contains("`tls_hits`") && w.contains("thread-local")),
        "{:#?}",
        located.warnings
    );
    for needle in ["no_such_function", "`no_such_var`", "`nowhere`", "other.c"] {
        assert!(
            located.warnings.iter().any(|w| w.contains(needle)),
            "no warning about {needle}: {:#?}",
            located.warnings
        );
    }
}

/// Overwrites bytes across the DWARF sections of a real binary and locates
/// in each mutant: every outcome must be a value or an error.
#[test]
fn corrupt_dwarf_never_panics() {
    use object::{Object, ObjectSection};
    let built = clang("list.c", &["-O2"]);
    let original = std::fs::read(&built.binary).unwrap();
    let file = object::File::parse(&*original).unwrap();
    let mut ranges = Vec::new();
    for name in [
        ".debug_info",
        ".debug_abbrev",
        ".debug_line",
        ".debug_loclists",
        ".debug_rnglists",
        ".debug_str_offsets",
        ".debug_addr",
        ".eh_frame",
        ".symtab",
    ] {
        if let Some((offset, size)) = file.section_by_name(name).and_then(|s| s.file_range()) {
            ranges.push((name, offset as usize, size as usize));
        }
    }
    assert!(ranges.len() >= 5, "{ranges:?}");
    let sites = vec![
        site(1, "list.c", "insert-head", "insert", vec![local("n"), local("value"), global("head", "head")]),
        site(3, "list.c", "twice-ret", "twice", vec![local("v"), local("t")]),
    ];
    let mut outcomes = (0, 0);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for (name, offset, size) in &ranges {
        for step in 0..40 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut data = original.clone();
            let at = offset + (seed as usize % size.max(&1));
            let width = 1 + step % 4;
            for (k, byte) in data[at..(at + width).min(offset + size)].iter_mut().enumerate() {
                *byte = match step % 3 {
                    0 => 0xff,
                    1 => 0,
                    _ => (seed >> (8 * k)) as u8,
                };
            }
            let result = rdb_locate::loader::Binary::parse(&built.binary, &data)
                .and_then(|binary| rdb_locate::locate_in(&binary, &sites));
            match result {
                Ok(_) => outcomes.0 += 1,
                Err(e) => {
                    assert!(e.to_string().contains(&*built.binary.to_string_lossy()), "{name}: {e}");
                    outcomes.1 += 1;
                }
            }
        }
    }
    eprintln!("mutants located: {}, refused with an error: {}", outcomes.0, outcomes.1);
    assert!(outcomes.1 > 0, "corruption was never detected");
}
