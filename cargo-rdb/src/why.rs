//! Why the main binary would differ from the recorded one, as far as the source tells.
//!
//! The main binary is built from the stripped source: the instrumented source without its
//! regions and `#[debug_only]` items, which must equal the source the trace was recorded
//! from. Something written for debug code but left outside them (a `use`, a helper, a `let`)
//! stays in it, usually unused there, and changes the binary (it shifts the lines below it at
//! least). rustc says so in the stripped build's warnings: [`suspects`] turns those warnings,
//! in files that have regions or debug-only items, into findings at the user's own lines,
//! with the fix. A finding is *certain* when a line that only debug code has (it is not in the
//! stripped file) names the unused thing.

use std::fmt;
use std::path::PathBuf;

use cargo_metadata::diagnostic::{Diagnostic, DiagnosticLevel};

/// One source file of the build: the user's text and the stripped text built from it.
pub struct SourceFile<'a> {
    /// Path relative to the workspace root, as rustc names it in the stripped build.
    pub path: &'a std::path::Path,
    pub user: &'a str,
    pub stripped: &'a str,
}

/// Something in the stripped build that debug code seems to need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspect {
    /// The user's file (relative to the workspace root), line and column.
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    /// The source line, trimmed.
    pub source: String,
    /// rustc's warning.
    pub warning: String,
    /// What the unused thing is.
    pub kind: Kind,
    /// A line only debug code has names it.
    pub certain: bool,
}

/// What kind of thing rustc found unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Import,
    Item,
    Variable,
}

impl fmt::Display for Suspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{}:{}:{}", self.file.display(), self.line, self.column);
        let fix = match self.kind {
            Kind::Import => format!("mark it `#[debug_only]`: `#[debug_only] {}`", self.source),
            Kind::Item => "mark the item `#[debug_only]`".to_string(),
            Kind::Variable => "move the `let` into the region that uses it".to_string(),
        };
        if self.certain {
            write!(
                f,
                "{at}: only debug code uses `{}`, but it is not debug-only: it stays in the build without regions \
                 (rustc: {}), which then differs from the recorded program; {fix}",
                self.source, self.warning
            )
        } else {
            write!(
                f,
                "{at}: `{}` is unused in the build without regions (rustc: {}); if it was added for debug code, \
                 it makes that build differ from the recorded program: {fix}",
                self.source, self.warning
            )
        }
    }
}

/// The names a warning's message quotes: `unused imports: `A` and `B``, `function `f` is
/// never used`; the last path segment of each.
fn quoted_names(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|q| q.rsplit("::").next().unwrap_or(q).trim_start_matches("r#").to_string())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect()
}

/// Whether `line` has `name` as a whole identifier.
fn names(line: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The user's line number of stripped line `line` (1-based) whose text is `text`: the first
/// user line at or after it with the same text (stripping only removes lines and pieces of
/// lines, so the user's copy is never earlier); `line` itself when none matches.
fn user_line(user: &[&str], line: usize, text: &str) -> usize {
    user.iter()
        .enumerate()
        .skip(line.saturating_sub(1))
        .find(|(_, l)| l.trim_end() == text.trim_end())
        .map_or(line, |(i, _)| i + 1)
}

/// Whether an unused thing that debug code names is most likely the program's own, unused in
/// the recorded build too: a parameter or a pattern binding (`for (i, x) in ..`, `async fn
/// f(id: u32)`) rather than a `let` of its own line, a struct field rather than an item. Only a
/// `let` or an item written for debug code makes the build differ; these are never named as
/// the certain cause (the fix for them, a `let` moved into a region, a field made debug-only,
/// would be wrong).
fn programs_own(kind: Kind, source: &str, warning: &str) -> bool {
    let source = source.trim_start();
    match kind {
        Kind::Import => false,
        Kind::Variable => !source.starts_with("let "),
        Kind::Item => warning.starts_with("field") || warning.starts_with("fields") || warning.contains("variant"),
    }
}

/// The findings of the stripped build's `diagnostics` in `files` (the files with regions or
/// debug-only items).
pub fn suspects(diagnostics: &[Diagnostic], files: &[SourceFile<'_>]) -> Vec<Suspect> {
    let mut out = Vec::new();
    for d in diagnostics.iter().filter(|d| d.level == DiagnosticLevel::Warning) {
        let kind = match d.code.as_ref().map(|c| c.code.as_str()) {
            Some("unused_imports") => Kind::Import,
            Some("dead_code") => Kind::Item,
            Some("unused_variables") => Kind::Variable,
            _ => continue,
        };
        let Some(span) = d.spans.iter().find(|s| s.is_primary) else { continue };
        let Some(file) = files.iter().find(|f| f.path == std::path::Path::new(&span.file_name)) else { continue };
        let Some(text) = span.text.first().map(|t| t.text.as_str()) else { continue };
        let user: Vec<&str> = file.user.lines().collect();
        let line = user_line(&user, span.line_start, text);
        let wanted = quoted_names(&d.message);
        // Lines naming the thing, in the user's file and in the stripped one: more in the
        // user's file means debug code names it.
        let count = |text: &str| text.lines().filter(|l| wanted.iter().any(|n| names(l, n))).count();
        let certain =
            !wanted.is_empty() && count(file.user) > count(file.stripped) && !programs_own(kind, text, &d.message);
        let suspect = Suspect {
            file: file.path.to_path_buf(),
            line,
            column: span.column_start,
            source: text.trim().to_string(),
            warning: d.message.clone(),
            kind,
            certain,
        };
        if !out.contains(&suspect) {
            out.push(suspect);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_quoted_paths_of_the_message() {
        assert_eq!(quoted_names("unused import: `std::sync::atomic::AtomicUsize`"), ["AtomicUsize"]);
        assert_eq!(quoted_names("unused imports: `AtomicUsize` and `Ordering`"), ["AtomicUsize", "Ordering"]);
        assert_eq!(quoted_names("function `render` is never used"), ["render"]);
        assert_eq!(quoted_names("unused variable: `n`"), ["n"]);
    }

    #[test]
    fn parameters_pattern_bindings_and_fields_are_the_programs_own() {
        let var = |source| programs_own(Kind::Variable, source, "unused variable: `i`");
        assert!(var("async fn drain(id: u32, costs: Vec<u64>) -> u64 {"));
        assert!(var("for (i, c) in costs.iter().enumerate() {"));
        assert!(!var("let n = items.len();"));
        assert!(programs_own(Kind::Item, "label: &'static str,", "field `label` is never read"));
        assert!(!programs_own(Kind::Item, "fn render(v: &[u8]) -> String {", "function `render` is never used"));
        assert!(!programs_own(Kind::Import, "use std::fmt::Write;", "unused import: `std::fmt::Write`"));
    }

    #[test]
    fn identifiers_match_whole() {
        assert!(names("let n = COUNT.fetch_add(1, Ordering::Relaxed);", "Ordering"));
        assert!(!names("let x = MyOrdering;", "Ordering"));
        assert!(!names("OrderingX", "Ordering"));
    }

    #[test]
    fn stripped_lines_map_to_the_users_lines() {
        let user = ["use a;", "fn main() {", "    rdb_begin!();", "    x();", "    rdb_end!();", "    y();", "}"];
        assert_eq!(user_line(&user, 1, "use a;"), 1);
        assert_eq!(user_line(&user, 3, "    y();"), 6);
        assert_eq!(user_line(&user, 3, "    z();"), 3);
    }
}
