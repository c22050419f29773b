//! Editing `Cargo.toml` files (with `toml_edit`, which keeps everything it
//! is not asked to change as it was).

use toml_edit::{DocumentMut, Item, Table};

/// The keys a dependency on `rdb-macros` or the debug-side API (`rdb-api`, imported as `rdb`)
/// may use.
const MACROS: [&str; 4] = ["rdb-macros", "rdb_macros", "rdb-api", "rdb_api"];

/// Packages whose dependencies the main build drops (under any key).
const PACKAGES: [&str; 2] = ["rdb-macros", "rdb-api"];

/// Why a manifest could not be edited.
pub type ManifestError = toml_edit::TomlError;

/// Removes the `rdb-macros` and `rdb-api` dependencies from a `Cargo.toml` text: their entry in
/// every dependency table (`[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, their `[target.'cfg(..)'.*]` forms and
/// `[workspace.dependencies]`), whether written inline or as a table of its
/// own. The rest of the text is kept byte for byte; a manifest without that
/// dependency comes back unchanged.
pub fn strip_manifest(text: &str) -> Result<String, ManifestError> {
    let mut doc: DocumentMut = text.parse()?;
    let mut changed = false;
    let root = doc.as_table_mut();
    changed |= strip_dependency_tables(root);
    if let Some(targets) = root.get_mut("target").and_then(Item::as_table_like_mut) {
        for (_, target) in targets.iter_mut() {
            if let Some(t) = target.as_table_like_mut() {
                for (_, item) in t.iter_mut() {
                    changed |= remove_macros(item);
                }
            }
        }
    }
    if let Some(ws) = root.get_mut("workspace").and_then(Item::as_table_like_mut) {
        if let Some(deps) = ws.get_mut("dependencies") {
            changed |= remove_macros(deps);
        }
    }
    Ok(if changed { doc.to_string() } else { text.to_string() })
}

fn strip_dependency_tables(root: &mut Table) -> bool {
    let mut changed = false;
    for key in ["dependencies", "dev-dependencies", "dev_dependencies", "build-dependencies", "build_dependencies"] {
        if let Some(item) = root.get_mut(key) {
            changed |= remove_macros(item);
        }
    }
    changed
}

fn remove_macros(deps: &mut Item) -> bool {
    let Some(table) = deps.as_table_like_mut() else { return false };
    let mut changed = false;
    let renamed: Vec<String> = table
        .iter()
        .filter(|(_, v)| {
            let package = v.as_table_like().and_then(|t| t.get("package")).and_then(|p| p.as_str());
            package.is_some_and(|p| PACKAGES.contains(&p))
        })
        .map(|(k, _)| k.to_string())
        .collect();
    for key in MACROS.iter().copied().chain(renamed.iter().map(String::as_str)) {
        changed |= table.remove(key).is_some();
    }
    changed
}

/// Adds a path dependency `name = { path = "..." }` to the `[dependencies]`
/// of a manifest (creating the table when there is none).
pub fn add_path_dependency(text: &str, name: &str, path: &str) -> Result<String, ManifestError> {
    let mut doc: DocumentMut = text.parse()?;
    let deps = doc.as_table_mut().entry("dependencies").or_insert_with(|| Item::Table(Table::new()));
    let mut spec = toml_edit::InlineTable::new();
    spec.insert("path", path.into());
    match deps.as_table_like_mut() {
        Some(t) => {
            t.insert(name, Item::Value(spec.into()));
        }
        None => {
            let mut t = Table::new();
            t.insert(name, Item::Value(spec.into()));
            *deps = Item::Table(t);
        }
    }
    Ok(doc.to_string())
}

/// The `[profile.*]` tables of a manifest, as a manifest text of their own
/// (empty when there are none).
pub fn profile_tables(text: &str) -> Result<String, ManifestError> {
    let doc: DocumentMut = text.parse()?;
    let mut out = DocumentMut::new();
    if let Some(profile) = doc.get("profile") {
        out.insert("profile", profile.clone());
    }
    Ok(out.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_dependency_entries_and_tables() {
        let m = "[package]\nname = \"a\"\n\n[dependencies]\nrdb-macros = { path = \"../rdb-macros\" }\nlibc = \"0.2\"\n\n[dependencies.rdb_macros]\npath = \"x\"\n\n[dev-dependencies]\nrdb-macros = {\n  path = \"y\",\n}\nz = \"1\"\n\n[target.'cfg(unix)'.dependencies]\nrdb-macros = \"0.1\"\nnix = \"0.29\"\n";
        assert_eq!(
            strip_manifest(m).unwrap(),
            "[package]\nname = \"a\"\n\n[dependencies]\nlibc = \"0.2\"\n\n[dev-dependencies]\nz = \"1\"\n\n[target.'cfg(unix)'.dependencies]\nnix = \"0.29\"\n"
        );
    }

    #[test]
    fn removes_the_debug_side_api_under_any_key() {
        let m = "[package]\nname = \"a\"\n\n[dependencies]\nrdb-api = { path = \"../rdb-api\" }\nrdb = { package = \"rdb-api\", path = \"x\" }\nlibc = \"0.2\"\n";
        assert_eq!(strip_manifest(m).unwrap(), "[package]\nname = \"a\"\n\n[dependencies]\nlibc = \"0.2\"\n");
    }

    #[test]
    fn leaves_other_manifests_untouched() {
        let m = "# comment\n[package]\nname   =   \"a\"  # spaced\n[dependencies]\nlibc='0.2'\n";
        assert_eq!(strip_manifest(m).unwrap(), m);
        assert!(strip_manifest("[package\n").is_err());
    }

    #[test]
    fn adds_a_path_dependency() {
        let with =
            add_path_dependency("[package]\nname = \"a\"\n\n[dependencies]\nlibc = \"0.2\"\n", "rdb-region", "/r")
                .unwrap();
        assert_eq!(with, "[package]\nname = \"a\"\n\n[dependencies]\nlibc = \"0.2\"\nrdb-region = { path = \"/r\" }\n");
        let without = add_path_dependency("[package]\nname = \"a\"\n", "rdb-region", "/r").unwrap();
        assert!(without.contains("[dependencies]\nrdb-region = { path = \"/r\" }\n"), "{without}");
    }

    #[test]
    fn profile_tables_are_kept() {
        let root = "[package]\nname = \"a\"\n\n[profile.release]\ndebug = \"full\"\n\n[profile.dev.package.\"*\"]\nopt-level = 1\n\n[dependencies]\nx = \"1\"\n[profile.fast]\ninherits = \"release\"\n";
        let p = profile_tables(root).unwrap();
        let doc: DocumentMut = p.parse().unwrap();
        assert_eq!(doc["profile"]["release"]["debug"].as_str(), Some("full"));
        assert_eq!(doc["profile"]["dev"]["package"]["*"]["opt-level"].as_integer(), Some(1));
        assert_eq!(doc["profile"]["fast"]["inherits"].as_str(), Some("release"));
        assert!(!p.contains("dependencies"));
        assert_eq!(profile_tables("[package]\nname = \"a\"\n").unwrap(), "");
    }
}
