//! Finds rdb debug regions in Rust source, strips them byte-exactly and
//! writes the debug-module source.
//!
//! Start with [`extract`]: it takes every source file of one crate (or
//! package) and returns, per file, the *stripped* text the main binary is
//! built from (regions, `#[debug_only]` items and `use rdb_macros…` items
//! removed, so the text equals the file the user had before adding them) and
//! the *debug* text the debug module is built from (each region rewritten as
//! a call of `rdb_region::region`), plus one [`Region`] per region with the
//! program variables it reads. Malformed regions come back as rustc-style
//! [`Diagnostics`]. [`strip_manifest`] removes the `rdb-macros` dependency
//! from a `Cargo.toml` (edited with `toml_edit`).
//!
//! Stripping rule: a removed piece of code that sits alone on its lines takes
//! those whole lines with it (indentation and line break); one that shares a
//! line with other code takes the blanks separating it from that code.
//! Plain `//` comments are not part of any item or region and stay; doc
//! comments of a `#[debug_only]` item are part of it and go with it.
//!
//! The debug text keeps every line where it was, so compiler messages about
//! debug code point at the user's lines.
//!
//! Event callbacks (`#[debug_only] #[rdb_macros::on_syscall(write)] fn f(..)`) are
//! [`Callback`]s: removed from the main text with their item, registered in the
//! debug text (see `callbacks.rs`). Their ids follow the regions of their file.

mod callbacks;
mod diag;
mod manifest;
mod parse;
mod rewrite;
mod syntax;
mod text;
mod valid;

pub use diag::{Diagnostic, Diagnostics};
pub use manifest::{add_path_dependency, profile_tables, strip_manifest, ManifestError};
pub use rdb_descriptors::ArgumentKind;

use std::path::{Path, PathBuf};

/// One source file of a crate.
#[derive(Debug, Clone)]
pub struct SourceInput {
    /// The path shown in diagnostics and written to the descriptors (the
    /// user's path, e.g. `src/main.rs` or `/abs/app/src/main.rs`).
    pub path: PathBuf,
    /// The file's text.
    pub text: String,
    /// Module path of the file inside its crate (`[]` for the crate root,
    /// `["vm"]` for `src/vm.rs`), see [`module_path_of`].
    pub module_path: Vec<String>,
    /// Name of the crate the file belongs to (`minibc`), for the paths of
    /// statics in the descriptors.
    pub crate_name: String,
}

/// Result of [`extract`].
#[derive(Debug, Clone)]
pub struct Extraction {
    /// One entry per input file, in input order.
    pub files: Vec<ExtractedFile>,
    /// Every region, ordered by id.
    pub regions: Vec<Region>,
    /// Every event callback, ordered by id.
    pub callbacks: Vec<Callback>,
}

/// A `#[debug_only]` function the replay calls when an event happens in the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// Unique among the ids of regions and callbacks of the extraction.
    pub id: u32,
    /// The file, as in [`SourceInput::path`].
    pub file: PathBuf,
    /// The callback attribute.
    pub at: LineCol,
    /// The function's name.
    pub function: String,
    /// How many parameters it takes.
    pub params: usize,
    /// The module it is declared in, inside its crate.
    pub module_path: Vec<String>,
    pub crate_name: String,
    pub kind: CallbackKind,
}

/// What a callback is called for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackKind {
    /// `on_syscall(names..., before | after)`: the names with their x86-64 numbers.
    Syscall { names: Vec<(String, u64)>, when: When },
    /// `on_call(function)` (`returns` false) or `on_return(function)`.
    Call { target: CallTarget, returns: bool },
    /// `on_write(static)` (`reads` false) or `on_read(static)`: the static's path as written and
    /// resolved like a call target's.
    Access { written: String, resolved: String, reads: bool },
    /// `watched(static)`: a value `rdb find --watch` evaluates, given the static (resolved like
    /// an access's).
    Watched { written: String, resolved: String },
}

/// The function a call callback watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
    /// A function of the program, by Rust path: as written, and with `crate`/`self`/`super`
    /// resolved to the crate's name and the module path (`events::vm::Vm::push`; a relative
    /// path stays as written and matches any function whose path ends with it).
    Path { written: String, resolved: String },
    /// A symbol of the executable or a shared library, found at run time (`"malloc"`).
    Symbol(String),
}

pub use rdb_descriptors::When;

/// The two rewritten texts of one file.
#[derive(Debug, Clone)]
pub struct ExtractedFile {
    pub path: PathBuf,
    /// Text for the main build.
    pub stripped: String,
    /// Text for the debug module.
    pub debug: String,
    /// Whether the file contained any region, `#[debug_only]` item or `use rdb_macros`.
    pub instrumented: bool,
    /// When instrumented: for each line of `stripped` (index 0 is line 1), the line of the
    /// user's file it comes from (the binary's DWARF has stripped lines; reports of where the
    /// program is translate them back).
    pub line_map: Vec<u32>,
}

/// A position in a file: 1-based line and 1-based character column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub column: u32,
}

/// One debug region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Region id, unique within the extraction (from `first_id` on).
    pub id: u32,
    /// The file, as in [`SourceInput::path`].
    pub file: PathBuf,
    /// The `rdb_begin!` and `rdb_end!` markers in the user's file.
    pub begin: LineCol,
    pub end: LineCol,
    /// In the stripped text: the first statement after the region, or the
    /// closing brace of the block when the region ends it.
    pub anchor: LineCol,
    /// The enclosing function as written: `run`, or `Vm::run` in an impl.
    pub function: String,
    /// The region is the last statement of its block (`anchor` is the
    /// block's closing brace).
    pub ends_block: bool,
    /// When the region ends its block: the first and last lines, in the stripped text, of the
    /// statement before it in that block (none when the region is the block's only statement).
    /// Where the closing brace has no code of its own (a loop body's end), the region runs where
    /// control leaves that statement's code.
    pub last_statement: Option<(u32, u32)>,
    /// The program variables the region reads, in `argv` order.
    pub arguments: Vec<RegionArgument>,
    /// The earlier regions of the same function whose debug-only locals
    /// (top-level `let`s) this region uses; it then runs only after they ran
    /// to their end in the same call.
    pub shares_from: Vec<u32>,
    /// The closures and `async` bodies the region is in, outermost first
    /// (empty for a region in a function's own body): their code is a
    /// function of its own in the binary.
    pub nesting: Vec<Nested>,
    /// The region is the first statement of the body of its function or of
    /// the innermost closure or `async` body around it: nothing of that
    /// body runs before it, so each call runs it once, first.
    pub first_in_body: bool,
    /// The region is inside a loop of that body (it runs once per iteration).
    pub in_loop: bool,
    /// The line, in the stripped text, of the `}` closing the region's block: code of a later
    /// line runs after the block (or also when it is not entered) and never stands in for the
    /// anchor.
    pub block_close: u32,
    /// The statement after the region is a loop (`for`, `while`, `loop`): its first and last
    /// lines in the stripped text. Its header line may have no code of its own in an optimized
    /// build (a `for` whose iterator is all inlined): the region then runs before the loop's
    /// code is first entered, never inside it.
    pub before_loop: Option<(u32, u32)>,
}

/// A closure or `async` body around a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nested {
    pub kind: NestKind,
    /// Where it starts in the stripped text (the closure's first token, the
    /// `async` keyword, the `fn` keyword of an `async fn`).
    pub at: LineCol,
}

/// What kind of body a region is nested in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NestKind {
    Closure,
    /// An `async` block.
    AsyncBlock,
    /// The body of an `async fn`.
    AsyncFn,
}

/// A program variable passed to a region's debug function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionArgument {
    /// The variable's name (`self` for the receiver, `COUNTER` for a static).
    pub name: String,
    pub kind: ArgumentKind,
    /// For statics: the full path, crate name first (`minibc::vm::COUNTER`).
    pub static_path: Option<String>,
    /// For a local of an `async` body: the `.await` (in the user's file)
    /// that can suspend the future between the variable's binding and the
    /// region. A variable the program does not keep across it lives in a
    /// frame of `poll` that is gone when the region runs.
    pub after_await: Option<LineCol>,
    /// Where statements after the region in its block may change the
    /// variable (assignments, `&mut` borrows, method calls on it), in the
    /// stripped text like `anchor`. Where the anchor's line has no code in a
    /// build and a later line stands in, a variable changed in between may
    /// already hold its later value there.
    pub written_after: Vec<LineCol>,
    /// A local whose value never changes in the function: no binding of
    /// that name in it is `mut` (nor borrowed `&mut`), checked on its
    /// tokens, macros' included. The locator may then take a parameter's
    /// value from the function's entry where the optimizer dropped it.
    pub unchanged: bool,
    /// A local that no statement of the function before the region (in the
    /// text, from the function's start) may change: no assignment, compound
    /// assignment, `&mut` borrow or method call on it. The value the region
    /// sees was then set by its binding, or by a statement after the region
    /// that a loop around both ran before.
    pub unwritten_before: bool,
}

/// Extracts the regions of one crate's files. Region ids start at
/// `first_id` and follow file order, then source order.
///
/// All files are checked before anything is returned: either every file
/// extracted cleanly, or the error lists every problem found.
pub fn extract(files: &[SourceInput], first_id: u32) -> Result<Extraction, Diagnostics> {
    let mut findings = Vec::new();
    let mut parsed = Vec::new();
    let mut statics = syntax::Statics::new();
    for input in files {
        // Files without markers need no parse: nothing to strip or rewrite.
        let relevant = input.text.contains("rdb_") || input.text.contains("debug_only") || input.text.contains("rdb::");
        if !relevant {
            parsed.push(None);
            continue;
        }
        match syntax::parse(&input.text) {
            Ok(f) => {
                syntax::collect_statics(&f, input, &mut statics);
                parsed.push(Some(f));
            }
            Err(e) => {
                let idx = text::LineIndex::new(&input.text);
                let start = idx.offset(e.span().start());
                let end = idx.offset(e.span().end()).max(start);
                findings.push((input, start..end, valid::Finding::Parse { message: e.to_string() }));
                parsed.push(None);
            }
        }
    }
    // Files without markers may still declare statics regions use.
    for (input, p) in files.iter().zip(&parsed) {
        if p.is_none() && syntax::declares_static(&input.text) {
            if let Ok(f) = syntax::parse(&input.text) {
                syntax::collect_statics(&f, input, &mut statics);
            }
        }
    }
    let mut next_id = first_id;
    let mut out_files = Vec::new();
    let mut regions = Vec::new();
    let mut callbacks = Vec::new();
    for (input, p) in files.iter().zip(&parsed) {
        let Some(file) = p else {
            out_files.push(ExtractedFile {
                path: input.path.clone(),
                stripped: input.text.clone(),
                debug: input.text.clone(),
                instrumented: false,
                line_map: Vec::new(),
            });
            continue;
        };
        let (mut model, next) = parse::walk(input, file, &statics, next_id);
        next_id = next;
        let idx = text::LineIndex::new(&input.text);
        let range = |s: proc_macro2::Span| idx.offset(s.start())..idx.offset(s.end());
        let (markers, hidden) = syntax::all_markers(file);
        let name = |kind| if kind == syntax::Marker::Begin { "rdb_begin" } else { "rdb_end" };
        for (kind, span) in hidden {
            model.findings.push((range(span), valid::Finding::MarkerInMacro { marker: name(kind) }));
        }
        for (kind, span) in markers {
            let r = range(span);
            if !model.placed_markers.contains(&r.start) {
                model.findings.push((r, valid::Finding::MisplacedMarker { marker: name(kind) }));
            }
        }
        for span in syntax::all_checks(file) {
            let r = range(span);
            if !model.placed_checks.contains(&r.start) {
                model.findings.push((r, valid::Finding::CheckOutsideRegion));
            }
        }
        findings.extend(std::mem::take(&mut model.findings).into_iter().map(|(r, f)| (input, r, f)));
        let (edits, mut found_callbacks) = callbacks::finish(input, std::mem::take(&mut model.callbacks), &mut next_id);
        model.debug_edits.extend(edits);
        callbacks.append(&mut found_callbacks);
        let (extracted, mut found) = rewrite::rewrite(input, model);
        out_files.push(extracted);
        regions.append(&mut found);
    }
    if !findings.is_empty() {
        let mut diags = Vec::new();
        let mut sources: Vec<(&std::path::Path, std::sync::Arc<str>)> = Vec::new();
        for (input, range, finding) in findings {
            let source = match sources.iter().find(|(p, _)| *p == input.path) {
                Some((_, s)) => s.clone(),
                None => {
                    let s: std::sync::Arc<str> = std::sync::Arc::from(input.text.as_str());
                    sources.push((&input.path, s.clone()));
                    s
                }
            };
            diags.push(valid::diagnostic(input, &source, range, &finding));
        }
        return Err(Diagnostics(diags));
    }
    regions.sort_by_key(|r| r.id);
    Ok(Extraction { files: out_files, regions, callbacks })
}

/// The module path of a file from its path relative to the crate's source
/// root directory (`src/`): `main.rs`, `lib.rs` and `bin/x.rs` are crate
/// roots; `a/b.rs` and `a/b/mod.rs` are `a::b`.
pub fn module_path_of(relative_to_src: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative_to_src.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let Some(last) = parts.pop() else { return Vec::new() };
    if parts.is_empty() && (last == "main.rs" || last == "lib.rs") {
        return Vec::new();
    }
    if parts.first().map(String::as_str) == Some("bin") {
        // src/bin/x.rs is a crate root; src/bin/x/main.rs too.
        if parts.len() == 1 || last == "main.rs" {
            return Vec::new();
        }
        parts.remove(0);
        parts.remove(0);
    }
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" {
        parts.push(stem);
    }
    parts
}
