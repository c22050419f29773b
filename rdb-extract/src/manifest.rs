//! Removing the `rdb-macros` dependency from a manifest.

/// Removes the `rdb-macros` dependency from a `Cargo.toml` text, byte-exactly:
/// `rdb-macros = ...` lines (possibly spanning several lines when the value
/// is a multi-line inline table) in any dependency table, and whole
/// `[dependencies.rdb-macros]`-style tables. Everything else is kept as is.
pub fn strip_manifest(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skipping_table = false;
    let mut open_braces = 0i32;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if open_braces > 0 {
            open_braces += brace_balance(line);
            continue;
        }
        if trimmed.starts_with('[') {
            let header = trimmed.trim_end().trim_start_matches('[').trim_end_matches(']').trim();
            skipping_table = header
                .rsplit_once('.')
                .is_some_and(|(table, key)| table.ends_with("dependencies") && is_rdb_macros(key));
            if skipping_table {
                continue;
            }
        } else if skipping_table {
            continue;
        }
        if let Some((key, _)) = trimmed.split_once('=') {
            if is_rdb_macros(key) && !trimmed.starts_with('#') {
                open_braces = brace_balance(line);
                continue;
            }
        }
        out.push_str(line);
    }
    out
}

fn is_rdb_macros(key: &str) -> bool {
    let k = key.trim().trim_matches('"').trim_matches('\'');
    k == "rdb-macros" || k == "rdb_macros"
}

fn brace_balance(line: &str) -> i32 {
    let code = line.split('#').next().unwrap_or("");
    code.matches(['{', '[']).count() as i32 - code.matches(['}', ']']).count() as i32
}

#[cfg(test)]
mod tests {
    use super::strip_manifest;

    #[test]
    fn removes_dependency_lines_and_tables() {
        let m = "[package]\nname = \"a\"\n\n[dependencies]\nrdb-macros = { path = \"../rdb-macros\" }\nlibc = \"0.2\"\n\n[dependencies.rdb_macros]\npath = \"x\"\n\n[dev-dependencies]\nrdb-macros = {\n  path = \"y\",\n}\nz = \"1\"\n";
        assert_eq!(
            strip_manifest(m),
            "[package]\nname = \"a\"\n\n[dependencies]\nlibc = \"0.2\"\n\n[dev-dependencies]\nz = \"1\"\n"
        );
    }
}
