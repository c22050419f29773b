//! rustc-style diagnostics for malformed debug regions.

use annotate_snippets::{Level, Renderer, Snippet};
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// One error found in a source file, with the place it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The message (`error: <message>`).
    pub message: String,
    /// File as the user wrote it, relative to the directory cargo runs in.
    pub file: PathBuf,
    /// Byte range of the offending code in the file.
    pub range: Range<usize>,
    /// 1-based line and column of `range.start`.
    pub line: u32,
    pub column: u32,
    /// Short text under the snippet's carets.
    pub label: String,
    /// A second place worth showing (e.g. the region an inner marker is nested in).
    pub note: Option<(Range<usize>, String)>,
    /// How to fix it.
    pub help: Option<String>,
    /// The whole file's text, for rendering.
    pub(crate) source: std::sync::Arc<str>,
}

impl Diagnostic {
    /// Renders the diagnostic as rustc does (`error: ...`, `--> file:line:col`,
    /// snippet, `= help: ...`), without colours.
    pub fn render(&self) -> String {
        let origin = self.file.display().to_string();
        let mut snippet = Snippet::source(&self.source)
            .line_start(1)
            .origin(&origin)
            .fold(true)
            .annotation(Level::Error.span(self.range.clone()).label(&self.label));
        if let Some((range, label)) = &self.note {
            snippet = snippet.annotation(Level::Info.span(range.clone()).label(label));
        }
        let mut message = Level::Error.title(&self.message).snippet(snippet);
        if let Some(help) = &self.help {
            message = message.footer(Level::Help.title(help));
        }
        let rendered = Renderer::plain().render(message).to_string();
        rendered
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Every error found in a package; nothing was written.
#[derive(Debug, Clone)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{}\n", d.render())?;
        }
        let n = self.0.len();
        write!(f, "error: could not extract debug regions due to {n} previous error{}", if n == 1 { "" } else { "s" })
    }
}

impl std::error::Error for Diagnostics {}
