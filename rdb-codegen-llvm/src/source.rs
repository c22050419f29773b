//! The source-level half of rdb-clang: find debug regions, debug-only
//! declarations and the `rdb.h` include in a C file, check the markers, and
//! produce the stripped source the main binary is compiled from.
//!
//! The scanner is a C tokenizer (comments, string and character literals,
//! preprocessor lines); it does not preprocess. That is enough for the
//! markers, which must be written literally in the `.c` file. Control flow
//! leaving a region through `break`/`continue` is checked later on the IR
//! (see [`crate::pass`]), where clang has resolved what each jump targets.
//!
//! # Stripping rule (byte-exact)
//!
//! The stripped source is the instrumented source with whole lines removed:
//! - every line from an `rdb_begin` marker to its `rdb_end` marker
//!   (inclusive; an optional `;` after each marker belongs to it);
//! - every line of a top-level debug-only declaration: one whose declared
//!   name starts with `__rdb_`, or that carries `RDB_DEBUG_ONLY`;
//! - the `#include "rdb.h"` (or `<rdb.h>`) line.
//!
//! Nothing else changes. Removed text must stand on lines of its own: a
//! marker or debug-only declaration sharing a line with program code is an
//! error, since removing the line would remove program code too.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// A 1-based position in a source file (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// A compile-style diagnostic: `file:line:col: error: message` plus a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub pos: Pos,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: error: {}", self.file.display(), self.pos.line, self.pos.column, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  = help: {hint}")?;
        }
        Ok(())
    }
}

/// One debug region as written in the instrumented source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Position of the `rdb_begin` marker.
    pub begin: Pos,
    /// Position of the `rdb_end` marker.
    pub end: Pos,
    /// The first token after the region that stays in the stripped source
    /// (a statement, or the closing brace of the block), in stripped-source
    /// coordinates.
    pub anchor: Pos,
    /// Identifiers written inside the region (to name the variables the
    /// region uses as the source does).
    pub identifiers: BTreeSet<String>,
    /// The first and last lines (stripped source) of the statement before the region in its
    /// block, when there is one: a region ending a loop body runs where that statement's code
    /// ends when the loop's step has no code of its own (an unrolled loop).
    pub before: Option<(u32, u32)>,
    /// Whether the region is inside the braced body of a `for`, `while` or `do` loop of its
    /// function: the locator then refuses a copy whose only location is in no loop of the
    /// machine code (a loop the optimizer unrolled, or merged into one statement after it).
    pub in_loop: bool,
    /// The line (stripped source) of the `}` closing the region's block: code of a later line
    /// runs after the block, or also when it is not entered, and never stands in for the
    /// anchor.
    pub block_close: Option<u32>,
}

/// Everything rdb-clang needs to know about one instrumented C file.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub file: PathBuf,
    pub regions: Vec<Region>,
    /// Names declared by debug-only top-level declarations.
    pub debug_only: BTreeSet<String>,
    /// The source with regions, debug-only declarations and the rdb.h
    /// include removed (see the module docs).
    pub stripped: String,
    /// Whether anything was removed (if not, the file is compiled as is).
    pub instrumented: bool,
    /// The removed lines (1-based, ascending).
    pub removed_lines: Vec<u32>,
}

/// The instrumented-source line of a stripped-source line.
pub fn instrumented_line(removed_lines: &[u32], stripped: u32) -> u32 {
    let mut line = stripped;
    for &r in removed_lines {
        if r <= line {
            line += 1;
        }
    }
    line
}

/// The stripped-source line of a kept instrumented-source line.
pub fn stripped_line(removed_lines: &[u32], line: u32) -> u32 {
    line - removed_lines.partition_point(|&l| l < line) as u32
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Number,
    Literal,
    Punct(u8),
    Directive,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
    pos: Pos,
}

/// The tokens of C source as text with their positions (preprocessor lines left out).
pub(crate) fn tokens_of(file: &Path, text: &str) -> Result<Vec<(String, Pos)>, Diagnostic> {
    Ok(tokenize(file, text)?
        .into_iter()
        .filter(|t| t.kind != Kind::Directive)
        .map(|t| (text[t.start..t.end].to_string(), t.pos))
        .collect())
}

/// Splits C source into tokens. Unterminated comments and literals are
/// reported; everything else is accepted (clang reports real syntax errors).
fn tokenize(file: &Path, text: &str) -> Result<Vec<Token>, Diagnostic> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut line_start_tok = true; // only whitespace/comments so far on this line
                                   // Advances over one character (UTF-8 aware for column counting).
    let step = |i: &mut usize, line: &mut u32, col: &mut u32| {
        let b = bytes[*i];
        if b == b'\n' {
            *line += 1;
            *col = 1;
        } else if b & 0xC0 != 0x80 {
            *col += 1;
        }
        *i += 1;
        // continuation bytes are counted with their lead byte
        while *i < bytes.len() && bytes[*i] & 0xC0 == 0x80 {
            *i += 1;
        }
    };
    while i < bytes.len() {
        let b = bytes[i];
        let pos = Pos { line, column: col };
        let start = i;
        if b == b'\n' {
            line_start_tok = true;
            step(&mut i, &mut line, &mut col);
            continue;
        }
        if b.is_ascii_whitespace() {
            step(&mut i, &mut line, &mut col);
            continue;
        }
        if b == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
            step(&mut i, &mut line, &mut col);
            step(&mut i, &mut line, &mut col);
            continue;
        }
        if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                    step(&mut i, &mut line, &mut col);
                }
                step(&mut i, &mut line, &mut col);
            }
            continue;
        }
        if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            step(&mut i, &mut line, &mut col);
            step(&mut i, &mut line, &mut col);
            loop {
                if i >= bytes.len() {
                    return Err(diag(file, pos, "unterminated comment", None));
                }
                if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                    step(&mut i, &mut line, &mut col);
                    step(&mut i, &mut line, &mut col);
                    break;
                }
                step(&mut i, &mut line, &mut col);
            }
            continue;
        }
        if b == b'#' && line_start_tok {
            // A preprocessor line, with its continuations; comments inside
            // may span lines, which the loop below handles.
            while i < bytes.len() && bytes[i] != b'\n' {
                if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                    step(&mut i, &mut line, &mut col);
                } else if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                    while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                        step(&mut i, &mut line, &mut col);
                    }
                    if i < bytes.len() {
                        step(&mut i, &mut line, &mut col);
                    }
                } else if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'/') {
                    break;
                }
                if i < bytes.len() {
                    step(&mut i, &mut line, &mut col);
                }
            }
            tokens.push(Token { kind: Kind::Directive, start, end: i, pos });
            continue;
        }
        line_start_tok = false;
        if b == b'"' || b == b'\'' {
            step(&mut i, &mut line, &mut col);
            loop {
                if i >= bytes.len() || bytes[i] == b'\n' {
                    let what = if b == b'"' { "string literal" } else { "character literal" };
                    return Err(diag(file, pos, &format!("unterminated {what}"), None));
                }
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    step(&mut i, &mut line, &mut col);
                    step(&mut i, &mut line, &mut col);
                    continue;
                }
                let c = bytes[i];
                step(&mut i, &mut line, &mut col);
                if c == b {
                    break;
                }
            }
            tokens.push(Token { kind: Kind::Literal, start, end: i, pos });
            continue;
        }
        if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80) {
                step(&mut i, &mut line, &mut col);
            }
            // String prefixes (L"", u8"") stay one literal token.
            if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') && i - start <= 2 {
                continue_literal(bytes, &mut i, &mut line, &mut col, step);
                tokens.push(Token { kind: Kind::Literal, start, end: i, pos });
                continue;
            }
            tokens.push(Token { kind: Kind::Ident, start, end: i, pos });
            continue;
        }
        if b.is_ascii_digit() || (b == b'.' && bytes.get(i + 1).is_some_and(|c| c.is_ascii_digit())) {
            while i < bytes.len() {
                let c = bytes[i];
                let exp = (c == b'+' || c == b'-') && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P');
                if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exp {
                    step(&mut i, &mut line, &mut col);
                } else {
                    break;
                }
            }
            tokens.push(Token { kind: Kind::Number, start, end: i, pos });
            continue;
        }
        step(&mut i, &mut line, &mut col);
        tokens.push(Token { kind: Kind::Punct(b), start, end: i, pos });
    }
    Ok(tokens)
}

fn continue_literal(
    bytes: &[u8],
    i: &mut usize,
    line: &mut u32,
    col: &mut u32,
    step: impl Fn(&mut usize, &mut u32, &mut u32),
) {
    let quote = bytes[*i];
    step(i, line, col);
    while *i < bytes.len() && bytes[*i] != b'\n' {
        if bytes[*i] == b'\\' && *i + 1 < bytes.len() {
            step(i, line, col);
            step(i, line, col);
            continue;
        }
        let c = bytes[*i];
        step(i, line, col);
        if c == quote {
            break;
        }
    }
}

fn diag(file: &Path, pos: Pos, message: &str, hint: Option<&str>) -> Diagnostic {
    Diagnostic { file: file.to_path_buf(), pos, message: message.to_string(), hint: hint.map(str::to_string) }
}

const BEGIN: &str = "rdb_begin";
const END: &str = "rdb_end";
const DEBUG_ONLY_ATTR: &str = "RDB_DEBUG_ONLY";
/// Prefix of debug-only names.
pub const DEBUG_PREFIX: &str = "__rdb_";

/// Analyses one instrumented C source file. All problems found are returned
/// (each a compile-style diagnostic), not just the first.
pub fn analyse(file: &Path, text: &str) -> Result<Analysis, Vec<Diagnostic>> {
    let tokens = tokenize(file, text).map_err(|d| vec![d])?;
    let tok = |t: &Token| &text[t.start..t.end];
    let mut diags = Vec::new();
    // Lines to remove, as ranges of token indices that own them.
    let mut removed: Vec<(usize, usize)> = Vec::new(); // inclusive token ranges
    let mut regions_tok: Vec<(usize, usize)> = Vec::new(); // (begin marker, last token of end marker)
    let mut debug_only = BTreeSet::new();

    // `rdb_begin();` written as if it were a call (as Rust's `rdb_begin!();` is): in C the
    // markers stand alone, so say that rather than what the `();` would lead to.
    let markers_as_calls: Vec<Diagnostic> = tokens
        .windows(3)
        .filter(|w| {
            w[0].kind == Kind::Ident && [BEGIN, END].contains(&tok(&w[0])) && tok(&w[1]) == "(" && tok(&w[2]) == ")"
        })
        .map(|w| {
            let marker = tok(&w[0]);
            diag(
                file,
                w[1].pos,
                &format!("`{marker}` is a marker, not a call: write `{marker}` alone on its line, without `();`"),
                Some("in C the markers are `rdb_begin` and `rdb_end`, each alone on its own line (see rdb.h)"),
            )
        })
        .collect();
    if !markers_as_calls.is_empty() {
        return Err(markers_as_calls);
    }

    // Pass 1: brace depth per token, markers, include line.
    let mut depth = 0i32;
    let mut depths = Vec::with_capacity(tokens.len());
    for t in &tokens {
        if t.kind == Kind::Punct(b'}') {
            depth -= 1;
        }
        depths.push(depth);
        if t.kind == Kind::Punct(b'{') {
            depth += 1;
        }
    }
    let mut open: Option<usize> = None;
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            Kind::Directive => {
                let d: String = tok(t).chars().filter(|c| !c.is_whitespace()).collect();
                if d == "#include\"rdb.h\"" || d == "#include<rdb.h>" {
                    removed.push((i, i));
                }
            }
            Kind::Ident if tok(t).starts_with("RDB_ON_") => {
                diags.push(diag(
                    file,
                    t.pos,
                    &format!("`{}` in a program source: event callbacks go in debug sources", tok(t)),
                    Some("move the callback into a `*.rdb.c` file compiled with rdb-clang beside the program"),
                ));
            }
            Kind::Ident if tok(t) == BEGIN => {
                if let Some(b) = open {
                    diags.push(diag(
                        file,
                        t.pos,
                        "`rdb_begin` inside a debug region (regions cannot nest)",
                        Some(&format!(
                            "the open region starts at {}:{}; close it with `rdb_end` first",
                            tokens[b].pos.line, tokens[b].pos.column
                        )),
                    ));
                } else {
                    if depths[i] == 0 {
                        diags.push(diag(
                            file,
                            t.pos,
                            "`rdb_begin` outside a function body",
                            Some("debug regions are statements inside a function"),
                        ));
                    }
                    open = Some(i);
                }
            }
            Kind::Ident if tok(t) == END => match open.take() {
                None => diags.push(diag(
                    file,
                    t.pos,
                    "`rdb_end` without a matching `rdb_begin`",
                    Some("add `rdb_begin` where the debug region starts"),
                )),
                Some(b) => {
                    let mut last = i;
                    if tokens.get(i + 1).is_some_and(|n| n.kind == Kind::Punct(b';')) {
                        last = i + 1;
                    }
                    if depths[i] != depths[b] || depths[b..=i].iter().any(|&d| d < depths[b]) {
                        diags.push(diag(
                            file,
                            t.pos,
                            "`rdb_end` is not in the same block as its `rdb_begin`",
                            Some(&format!(
                                "a region must be a sequence of statements of one block (begin at {}:{})",
                                tokens[b].pos.line, tokens[b].pos.column
                            )),
                        ));
                    }
                    regions_tok.push((b, last));
                    removed.push((b, last));
                }
            },
            _ => {}
        }
    }
    if let Some(b) = open {
        diags.push(diag(
            file,
            tokens[b].pos,
            "`rdb_begin` without a matching `rdb_end`",
            Some("close the debug region with `rdb_end` in the same block"),
        ));
    }
    // Gotos and returns inside regions, labels targeted across the boundary.
    for &(b, e) in &regions_tok {
        let inside = |j: usize| j > b && j < e;
        let label_at = |j: usize| {
            tokens[j].kind == Kind::Ident
                && tokens.get(j + 1).is_some_and(|n| n.kind == Kind::Punct(b':'))
                && j > 0
                && matches!(
                    tokens[j - 1].kind,
                    Kind::Punct(b';') | Kind::Punct(b'{') | Kind::Punct(b'}') | Kind::Punct(b':')
                )
                && !tokens.get(j + 2).is_some_and(|n| n.kind == Kind::Punct(b':'))
        };
        let labels_inside: BTreeSet<&str> = (b + 1..e).filter(|&j| label_at(j)).map(|j| tok(&tokens[j])).collect();
        for j in b + 1..e {
            let t = &tokens[j];
            if t.kind != Kind::Ident {
                continue;
            }
            match tok(t) {
                "return" => diags.push(diag(
                    file,
                    t.pos,
                    "`return` inside a debug region",
                    Some("debug regions are single-entry/single-exit: control must leave through `rdb_end`"),
                )),
                "goto" => {
                    let target = tokens.get(j + 1).map(tok).unwrap_or("");
                    if !labels_inside.contains(target) {
                        diags.push(diag(
                            file,
                            t.pos,
                            &format!("`goto {target}` leaves the debug region"),
                            Some("debug regions are single-entry/single-exit: jump only to labels inside the region"),
                        ));
                    }
                }
                _ => {}
            }
        }
        for (j, t) in tokens.iter().enumerate() {
            if !inside(j) && t.kind == Kind::Ident && tok(t) == "goto" {
                if let Some(n) = tokens.get(j + 1) {
                    if labels_inside.contains(tok(n)) {
                        diags.push(diag(
                            file,
                            t.pos,
                            &format!("`goto {}` jumps into a debug region", tok(n)),
                            Some("debug regions are single-entry/single-exit: enter only through `rdb_begin`"),
                        ));
                    }
                }
            }
        }
    }
    // Top-level declarations: find debug-only ones.
    let mut i = 0;
    while i < tokens.len() {
        if depths[i] != 0 || tokens[i].kind == Kind::Directive {
            i += 1;
            continue;
        }
        let start = i;
        let mut paren = 0i32;
        let mut end = None;
        let mut j = i;
        while j < tokens.len() {
            let t = &tokens[j];
            match t.kind {
                Kind::Directive if depths[j] == 0 => break,
                Kind::Punct(b'(') => paren += 1,
                Kind::Punct(b')') => paren -= 1,
                Kind::Punct(b';') if paren == 0 && depths[j] == 0 => {
                    end = Some(j);
                    break;
                }
                Kind::Punct(b'{') if depths[j] == 0 && j > 0 && tokens[j - 1].kind == Kind::Punct(b')') => {
                    // A function body: the declaration ends at its closing brace.
                    let mut k = j + 1;
                    while k < tokens.len() && !(depths[k] == 0 && tokens[k].kind == Kind::Punct(b'}')) {
                        k += 1;
                    }
                    end = Some(k.min(tokens.len() - 1));
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let Some(end) = end else {
            i = j.max(i + 1);
            continue;
        };
        let decl = &tokens[start..=end];
        if let Some(name) = declared_name(decl, &tok) {
            let attr = decl.iter().any(|t| t.kind == Kind::Ident && tok(t) == DEBUG_ONLY_ATTR);
            if attr || name.starts_with(DEBUG_PREFIX) {
                debug_only.insert(name.to_string());
                removed.push((start, end));
            }
        }
        i = end + 1;
    }

    // Turn token ranges into whole lines, checking nothing else shares them.
    let mut line_owner: HashMap<u32, usize> = HashMap::new(); // line -> range index
    let mut removed_lines = BTreeSet::new();
    for (r, &(a, b)) in removed.iter().enumerate() {
        let first = tokens[a].pos.line;
        let last = line_of_end(text, &tokens[b]);
        for l in first..=last {
            removed_lines.insert(l);
            line_owner.insert(l, r);
        }
    }
    for (j, t) in tokens.iter().enumerate() {
        let inside_some = removed.iter().any(|&(a, b)| j >= a && j <= b);
        if inside_some {
            continue;
        }
        let (l0, l1) = (t.pos.line, line_of_end(text, t));
        for l in l0..=l1 {
            if removed_lines.contains(&l) {
                let (a, _) = removed[line_owner[&l]];
                diags.push(diag(
                    file,
                    t.pos,
                    &format!("program code shares line {l} with debug-only text (`{}`)", tok(&tokens[a])),
                    Some("put debug regions, their markers and debug-only declarations on lines of their own; rdb removes those lines to rebuild the original source"),
                ));
                break;
            }
        }
    }
    if !diags.is_empty() {
        diags.sort_by_key(|d| d.pos);
        diags.dedup();
        return Err(diags);
    }

    // Build the stripped text and the line map.
    let mut stripped = String::with_capacity(text.len());
    let mut new_line_of = Vec::new(); // index: old line - 1
    let mut next = 1u32;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        let old = n as u32 + 1;
        if removed_lines.contains(&old) {
            new_line_of.push(None);
        } else {
            stripped.push_str(l);
            new_line_of.push(Some(next));
            next += 1;
        }
    }
    let mut regions = Vec::new();
    for &(b, e) in &regions_tok {
        let end_marker = if tokens[e].kind == Kind::Punct(b';') { e - 1 } else { e };
        let anchor_tok =
            tokens[e + 1..].iter().find(|t| new_line_of.get(t.pos.line as usize - 1).copied().flatten().is_some());
        let anchor = match anchor_tok {
            Some(t) => Pos { line: new_line_of[t.pos.line as usize - 1].unwrap(), column: t.pos.column },
            None => Pos { line: next.saturating_sub(1).max(1), column: 1 },
        };
        let identifiers =
            tokens[b + 1..end_marker].iter().filter(|t| t.kind == Kind::Ident).map(|t| tok(t).to_string()).collect();
        // The statement before the region: back from the marker (earlier regions and other
        // removed text passed over) to the `;` or `}` that ends it, then to the `;`, `{` or `}`
        // before it.
        let kept = |j: usize| !removed.iter().any(|&(a, z)| j >= a && j <= z);
        let stripped_of = |t: &Token| new_line_of.get(t.pos.line as usize - 1).copied().flatten();
        let last = (0..b).rev().find(|&j| kept(j));
        let before = last.filter(|&j| matches!(tokens[j].kind, Kind::Punct(b';') | Kind::Punct(b'}'))).and_then(|j| {
            // Inside the block a statement ending with `}` ends with, brackets and blocks skipped.
            let mut depth = i32::from(tokens[j].kind == Kind::Punct(b'}'));
            let mut k = j;
            while k > 0 {
                k -= 1;
                if !kept(k) {
                    continue;
                }
                match tokens[k].kind {
                    Kind::Punct(b')') | Kind::Punct(b']') => depth += 1,
                    Kind::Punct(b'(') | Kind::Punct(b'[') => depth -= 1,
                    Kind::Punct(b'}') | Kind::Punct(b';') if depth == 0 => break,
                    Kind::Punct(b'}') => depth += 1,
                    Kind::Punct(b'{') if depth == 0 => break,
                    Kind::Punct(b'{') => depth -= 1,
                    _ => {}
                }
            }
            let start = ((k + 1)..=j).find(|&m| kept(m))?;
            Some((stripped_of(&tokens[start])?, stripped_of(&tokens[j])?))
        });
        let in_loop = in_loop_body(&tokens, b, tok);
        // Forward from the end marker to the `}` that closes the region's block.
        let mut depth = 0usize;
        let close = tokens[e + 1..].iter().find(|t| match t.kind {
            Kind::Punct(b'{') => {
                depth += 1;
                false
            }
            Kind::Punct(b'}') if depth > 0 => {
                depth -= 1;
                false
            }
            Kind::Punct(b'}') => true,
            _ => false,
        });
        let block_close = close.and_then(stripped_of);
        regions.push(Region {
            begin: tokens[b].pos,
            end: tokens[end_marker].pos,
            anchor,
            identifiers,
            before,
            in_loop,
            block_close,
        });
    }
    Ok(Analysis {
        file: file.to_path_buf(),
        instrumented: !removed_lines.is_empty(),
        removed_lines: removed_lines.iter().copied().collect(),
        regions,
        debug_only,
        stripped,
    })
}

/// Whether token `at` is inside the braced body of a `for (..) {`, `while (..) {` or `do {`:
/// each block around it (back from `at`, balanced blocks passed over) is looked at up to the
/// function's body.
fn in_loop_body<'t>(tokens: &[Token], at: usize, tok: impl Fn(&Token) -> &'t str) -> bool {
    let mut depth = 0usize;
    for j in (0..at).rev() {
        match tokens[j].kind {
            Kind::Punct(b'}') => depth += 1,
            Kind::Punct(b'{') if depth > 0 => depth -= 1,
            Kind::Punct(b'{') => {
                let Some(p) = j.checked_sub(1) else { return false };
                if tokens[p].kind == Kind::Ident && tok(&tokens[p]) == "do" {
                    return true;
                }
                if tokens[p].kind == Kind::Punct(b')') {
                    // Back to the `(` that opens this `)`, then the keyword before it.
                    let mut parens = 0usize;
                    let open = (0..=p).rev().find(|&k| {
                        match tokens[k].kind {
                            Kind::Punct(b')') => parens += 1,
                            Kind::Punct(b'(') => parens -= 1,
                            _ => {}
                        }
                        parens == 0
                    });
                    if let Some(kw) = open.and_then(|o| o.checked_sub(1)) {
                        if tokens[kw].kind == Kind::Ident && matches!(tok(&tokens[kw]), "for" | "while") {
                            return true;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// The line a token's last character is on.
fn line_of_end(text: &str, t: &Token) -> u32 {
    let s = &text[t.start..t.end];
    let inner = s.trim_end_matches('\n');
    t.pos.line + inner.matches('\n').count() as u32
}

/// The name a top-level declaration declares: the identifier before the
/// first `(` at paren depth 0 (functions), or else the last identifier before
/// `=`, `[`, `;` or `:` (variables).
fn declared_name<'t>(decl: &[Token], tok: &impl Fn(&Token) -> &'t str) -> Option<&'t str> {
    let mut last_ident = None;
    let mut paren = 0;
    for t in decl {
        match t.kind {
            Kind::Ident => {
                let s = tok(t);
                if paren == 0 && !matches!(s, "__attribute__" | "__declspec" | "__asm__" | "asm") {
                    last_ident = Some(s);
                }
            }
            Kind::Punct(b'(') => {
                if paren == 0 {
                    if let Some(n) = last_ident {
                        if !matches!(n, "__attribute__" | "RDB_DEBUG_ONLY") {
                            return Some(n);
                        }
                    }
                }
                paren += 1;
            }
            Kind::Punct(b')') => paren -= 1,
            Kind::Punct(b'=' | b'[' | b';' | b'{') if paren == 0 => return last_ident,
            _ => {}
        }
    }
    last_ident
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Analysis {
        analyse(Path::new("t.c"), text)
            .unwrap_or_else(|d| panic!("{}", d.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n")))
    }
    fn errs(text: &str) -> Vec<String> {
        analyse(Path::new("t.c"), text).unwrap_err().iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn strips_regions_decls_and_include() {
        let src = "#include <stdio.h>\n#include \"rdb.h\"\nstatic long __rdb_last;\nvoid __rdb_dump(const char *s);\nRDB_DEBUG_ONLY static int\nseen(void) {\n  return 1; }\nint main(void) {\n  int x = 1;\n  rdb_begin\n  printf(\"%d\\n\", x); /* } */\n  rdb_end;\n  return x;\n}\n";
        let a = ok(src);
        assert_eq!(a.stripped, "#include <stdio.h>\nint main(void) {\n  int x = 1;\n  return x;\n}\n");
        assert_eq!(a.regions.len(), 1);
        assert_eq!(a.regions[0].begin, Pos { line: 10, column: 3 });
        assert_eq!(a.regions[0].end, Pos { line: 12, column: 3 });
        assert_eq!(a.regions[0].anchor, Pos { line: 4, column: 3 });
        assert_eq!(a.debug_only.iter().cloned().collect::<Vec<_>>(), ["__rdb_dump", "__rdb_last", "seen"]);
    }

    #[test]
    fn line_maps_round_trip() {
        let removed = [2, 3, 7];
        for stripped in 1..10 {
            let l = instrumented_line(&removed, stripped);
            assert!(!removed.contains(&l));
            assert_eq!(stripped_line(&removed, l), stripped);
        }
        assert_eq!(instrumented_line(&removed, 2), 4);
    }

    #[test]
    fn anchor_is_closing_brace_when_region_ends_block() {
        let a = ok("void f(void) {\n  int y;\n  rdb_begin\n  y = 2;\n  rdb_end\n}\n");
        assert_eq!(a.regions[0].anchor, Pos { line: 3, column: 1 });
        assert_eq!(a.stripped, "void f(void) {\n  int y;\n}\n");
    }

    #[test]
    fn a_region_in_a_loop_body_is_known_to_be_in_a_loop() {
        let text = "void f(int n) {\n  rdb_begin\n  rdb_end\n  for (int i = g(n); i < n; i++) {\n    if (i) {\n      rdb_begin\n      rdb_end\n    }\n  }\n  while (n--) {\n    rdb_begin\n    rdb_end\n  }\n  do {\n    rdb_begin\n    rdb_end\n  } while (n);\n  if (h(n)) {\n    rdb_begin\n    rdb_end\n  }\n}\n";
        let a = ok(text);
        let in_loop: Vec<bool> = a.regions.iter().map(|r| r.in_loop).collect();
        assert_eq!(in_loop, [false, true, true, true, false]);
    }

    #[test]
    fn the_statement_before_a_region_is_known_by_its_lines() {
        let text = "void f(int *a, int n) {\n  int s = 0;\n  for (int i = 0; i < n; i++) {\n    s +=\n      a[i];\n    rdb_begin\n    s++;\n    rdb_end\n  }\n  if (s) {\n    n = f2(s, (n));\n  }\n  rdb_begin\n  rdb_end\n  {\n    rdb_begin\n    rdb_end\n  }\n}\n";
        let a = ok(text);
        // `s += a[i];` over two lines; the `if` statement with its block; none first in a block.
        assert_eq!(a.regions[0].before, Some((4, 5)));
        assert_eq!(a.regions[1].before, Some((7, 9)));
        assert_eq!(a.regions[2].before, None);
    }

    #[test]
    fn markers_in_strings_and_comments_are_ignored() {
        let a = ok("const char *s = \"rdb_begin\"; // rdb_end\n/* rdb_begin */ int __rdbx;\n");
        assert!(a.regions.is_empty());
        assert!(!a.instrumented);
    }

    #[test]
    fn unbalanced_and_nested_markers() {
        assert_eq!(errs("void f(void) {\n  rdb_end\n}\n"), ["t.c:2:3: error: `rdb_end` without a matching `rdb_begin`\n  = help: add `rdb_begin` where the debug region starts"]);
        let e = errs("void f(void) {\n  rdb_begin\n  rdb_begin\n  rdb_end\n}\n");
        assert!(e[0].starts_with("t.c:3:3: error: `rdb_begin` inside a debug region"), "{e:?}");
        let e = errs("void f(void) {\n  rdb_begin\n}\n");
        assert!(e[0].starts_with("t.c:2:3: error: `rdb_begin` without a matching `rdb_end`"), "{e:?}");
        let e = errs("void f(int a) {\n  if (a) {\n  rdb_begin\n  }\n  rdb_end\n}\n");
        assert!(e[0].starts_with("t.c:5:3: error: `rdb_end` is not in the same block"), "{e:?}");
    }

    #[test]
    fn markers_written_as_calls_are_explained() {
        let e = errs("void f(void) {\n  rdb_begin();\n  rdb_end();\n}\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("t.c:2:12: error: `rdb_begin` is a marker, not a call"), "{e:?}");
        assert!(e[1].starts_with("t.c:3:10: error: `rdb_end` is a marker, not a call"), "{e:?}");
    }

    #[test]
    fn return_and_goto_out_of_region() {
        let e = errs("int f(int a) {\n  rdb_begin\n  if (a) return 1;\n  rdb_end\n  return 0;\n}\n");
        assert!(e[0].starts_with("t.c:3:10: error: `return` inside a debug region"), "{e:?}");
        let e = errs("int f(int a) {\n  rdb_begin\n  goto out;\n  rdb_end\nout:\n  return 0;\n}\n");
        assert!(e[0].starts_with("t.c:3:3: error: `goto out` leaves the debug region"), "{e:?}");
        ok("int f(int a) {\n  rdb_begin\n  goto in;\nin:\n  a++;\n  rdb_end\n  return 0;\n}\n");
    }

    #[test]
    fn shared_lines_are_refused() {
        let e = errs("int f(int a) {\n  a++; rdb_begin\n  rdb_end\n  return a;\n}\n");
        assert!(e[0].starts_with("t.c:2:3: error: program code shares line 2"), "{e:?}");
    }
}
