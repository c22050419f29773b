//! A cargo package (paths relative to the package root, modules in their own
//! files, a static in a module), dev and release with `debug = "full"`.

mod support;

use rdb_descriptors::{Location, SourceLocation};
use support::*;

fn sites() -> Vec<rdb_locate::RegionSite> {
    let at = |file: &str, marker: &str| {
        let a = anchor(&format!("cargo-app/{file}"), marker);
        SourceLocation { file: file.into(), ..a }
    };
    let mut record = site(
        1,
        "cargo-app/src/stats.rs",
        "record-push",
        "Stats::record",
        vec![local("self"), local("value"), local("bigger"), global("HITS", "app::stats::HITS")],
    );
    record.anchor = at("src/stats.rs", "record-push");
    let mut main = site(2, "cargo-app/src/main.rs", "main-print", "main", vec![local("n"), local("mean")]);
    main.anchor = at("src/main.rs", "main-print");
    vec![record, main]
}

#[test]
fn dev_and_release_profiles() {
    for flags in [&[][..], &["--release"][..]] {
        let built = cargo("cargo-app", flags, "app");
        let sites = sites();
        let located = rdb_locate::locate(&built.binary, &sites).expect("locate");
        let record = &located.functions[0];
        assert_eq!(record.function.name, "app::stats::Stats::record", "{flags:?}");
        assert_eq!(record.locations.len(), 1, "{flags:?} {record:#?}");
        let hits = located.arguments.iter().find(|a| a.name == "HITS").unwrap();
        assert!(
            matches!(&hits.locations[0].location, Location::Symbol { symbol, .. } if symbol.contains("4HITS")),
            "{hits:#?}"
        );
        let mut checked = check_against_gdb(&built.binary, &sites, &located, 1);
        checked.extend(check_against_gdb(&built.binary, &sites, &located, 2));
        let value = |name: &str| checked.iter().find(|c| c.name == name).and_then(|c| c.ours);
        // First call: record(0); HITS already counted it.
        assert_eq!(value("HITS"), Some(1), "{flags:?} {checked:#?}");
        if flags.is_empty() {
            assert_eq!(value("value"), Some(0));
            assert_eq!(value("n"), Some(4));
        }
    }
}
