use rdb_descriptors::*;
use std::path::PathBuf;

#[test]
fn schema_files_are_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema");
    for (name, text) in schemas() {
        let path = dir.join(name);
        if std::env::var_os("RDB_BLESS").is_some() {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(on_disk, text, "{} is stale: run `RDB_BLESS=1 cargo test -p rdb-descriptors`", path.display());
    }
}

#[test]
fn round_trip_and_version_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = ArgumentDescriptors::new();
    args.arguments.push(ArgumentDescriptor {
        region: 1,
        position: 0,
        name: "stack".into(),
        kind: ArgumentKind::Local,
        type_name: "alloc::vec::Vec<i64>".into(),
        size: 24,
        locations: vec![PlacedLocation {
            address: 0x1234,
            location: Location::Pieces {
                pieces: vec![
                    Piece { size: 8, location: Location::Register { register: Register::x86_64(3) } },
                    Piece { size: 16, location: Location::Stack { base: Register::x86_64(7), offset: -24 } },
                ],
            },
            type_name: None,
            size: None,
        }],
    });
    // A value kept at the function's entry (version 4).
    args.arguments.push(ArgumentDescriptor {
        region: 1,
        position: 1,
        name: "program".into(),
        kind: ArgumentKind::Local,
        type_name: "&[app::Stmt]".into(),
        size: 16,
        locations: vec![PlacedLocation {
            address: 0x1234,
            location: Location::EntryValue {
                entry: 0x1200,
                value: Box::new(Location::Pieces {
                    pieces: vec![
                        Piece { size: 8, location: Location::Register { register: Register::x86_64(4) } },
                        Piece { size: 8, location: Location::Register { register: Register::x86_64(1) } },
                    ],
                }),
                frame: FrameAddress { register: Register::x86_64(7), offset: 64 },
            },
            type_name: None,
            size: None,
        }],
    });
    let path = dir.path().join("a.rdb-arguments.json");
    store(&path, &args).unwrap();
    assert_eq!(load_arguments(&path).unwrap(), args);

    // Wrong format and wrong version are refused with a message naming them.
    let err = load_functions(&path).unwrap_err().to_string();
    assert!(err.contains("format `rdb-arguments`, expected `rdb-functions`"), "{err}");
    let text = std::fs::read_to_string(&path).unwrap().replace(&format!("\"version\": {VERSION}"), "\"version\": 99");
    std::fs::write(&path, text).unwrap();
    let err = load_arguments(&path).unwrap_err().to_string();
    assert!(err.contains("version 99"), "{err}");
    std::fs::write(&path, "not json").unwrap();
    assert!(matches!(load_arguments(&path), Err(Error::Json { .. })));
}

#[test]
fn register_names() {
    assert_eq!(Register::x86_64(7).name, "rsp");
    assert_eq!(Register::x86_64(16).name, "rip");
    assert_eq!(Register::x86_64(18).name, "xmm1");
}
