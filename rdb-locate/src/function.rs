//! Finding a region's code: the instances of the enclosing function (the
//! out-of-line copies, monomorphised copies and inlined copies) and, in each,
//! the address of the anchor statement.

use crate::index::{same_file, DieRef, Index, Row};
use rdb_descriptors::SourceLocation;

/// One copy of the enclosing function's code.
#[derive(Debug, Clone)]
pub struct Instance {
    /// The unit whose line table covers this copy.
    pub unit: usize,
    /// The `DW_TAG_subprogram` or `DW_TAG_inlined_subroutine`; `None` when
    /// the copy was found through the ELF symbol table only (line-tables-only
    /// DWARF omits functions that have nothing inlined into them).
    pub die: Option<DieRef>,
    /// The concrete subprogram whose frame holds this copy (itself, or the
    /// function it is inlined into): its `DW_AT_frame_base` applies.
    pub frame_owner: Option<DieRef>,
    pub ranges: Vec<gimli::Range>,
    /// Qualified name (`app::Vm::run`) and linkage name.
    pub name: String,
    pub linkage_name: Option<String>,
}

/// Why a code address was chosen, for notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeAddress {
    pub address: u64,
    /// The line the address belongs to when it is not the anchor's line.
    pub fallback_line: Option<u32>,
    /// The anchor's line has code here, but none at the anchor's column or after it: the
    /// address is that of an earlier part of the line (a `for` loop's condition standing in
    /// for its step).
    pub earlier_column: bool,
}

/// `foo<T>` → `foo`: generic arguments are not part of what the user writes.
fn strip_generics(segment: &str) -> &str {
    segment.find('<').map_or(segment, |i| &segment[..i])
}

/// Whether a function written as `wanted` (`run`, `Vm::run`, `app::Vm::run`)
/// is the DWARF function `name` declared in scopes `path`. An `{impl#N}`
/// scope (Rust trait impls) stands for whatever type the user names.
pub fn matches_function(wanted: &str, path: &[String], name: &str) -> bool {
    let wanted: Vec<&str> = wanted.split("::").map(|s| strip_generics(s.trim())).collect();
    let Some((last, scopes)) = wanted.split_last() else { return false };
    if *last != strip_generics(name) {
        return false;
    }
    if scopes.len() > path.len() {
        return false;
    }
    scopes
        .iter()
        .rev()
        .zip(path.iter().rev())
        .all(|(w, p)| *w == strip_generics(p) || p.starts_with("{impl#") || p.starts_with('<'))
}

/// Units whose line table mentions `file`.
pub fn units_with_file(index: &Index<'_>, file: &std::path::Path) -> Result<Vec<usize>, gimli::Error> {
    let mut out = Vec::new();
    for unit in 0..index.units.len() {
        if index.files(unit)?.iter().any(|f| same_file(f, file)) {
            out.push(unit);
        }
    }
    Ok(out)
}

/// All copies of the function `wanted` in `units`.
pub fn instances(index: &Index<'_>, units: &[usize], wanted: &str) -> Result<Vec<Instance>, gimli::Error> {
    let found = instances_matching(index, units, wanted, false)?;
    if !found.is_empty() {
        return Ok(found);
    }
    // Line-tables-only DWARF names functions without their scopes...
    let found = instances_matching(index, units, wanted, true)?;
    if !found.is_empty() {
        return Ok(found);
    }
    // ...and leaves out the functions nothing was inlined into.
    symbol_instances(index, units, wanted)
}

/// Copies of `wanted` found by ELF symbol (C names, or Rust legacy-mangled
/// names demangled), placed in the unit whose line table covers them.
fn symbol_instances(index: &Index<'_>, units: &[usize], wanted: &str) -> Result<Vec<Instance>, gimli::Error> {
    let mut out = Vec::new();
    for (symbol, address, size) in index.binary.symbols.functions() {
        let path = demangle_legacy(symbol).unwrap_or_else(|| vec![symbol.to_string()]);
        let Some((name, scopes)) = path.split_last() else { continue };
        if !matches_function(wanted, scopes, name) {
            continue;
        }
        let range = gimli::Range { begin: address, end: address.saturating_add(size) };
        for &unit in units {
            let lines = index.lines(unit)?;
            if lines.rows.iter().any(|r| range.begin <= r.address && r.address < range.end) {
                out.push(Instance {
                    unit,
                    die: None,
                    frame_owner: None,
                    ranges: vec![range],
                    name: path.join("::"),
                    linkage_name: Some(symbol.to_string()).filter(|s| s != name),
                });
                break;
            }
        }
    }
    Ok(out)
}

/// The path of a Rust legacy-mangled symbol (`_ZN2vm2Vm3run17h…E` →
/// `vm`, `Vm`, `run`), without the hash; `None` for other symbols.
pub fn demangle_legacy(symbol: &str) -> Option<Vec<String>> {
    let mut rest = symbol.strip_prefix("_ZN").or_else(|| symbol.strip_prefix("__ZN"))?;
    let mut path = Vec::new();
    while !rest.starts_with('E') {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let len: usize = rest[..digits].parse().ok()?;
        let ident = rest.get(digits..digits.checked_add(len)?)?;
        rest = &rest[digits + len..];
        path.push(unescape(ident));
    }
    if path.last().is_some_and(|h| h.len() == 17 && h.starts_with('h') && h[1..].chars().all(|c| c.is_ascii_hexdigit()))
    {
        path.pop();
    }
    (!path.is_empty()).then_some(path)
}

fn unescape(ident: &str) -> String {
    let ident = ident.strip_prefix("_$").map(|r| format!("${r}")).unwrap_or_else(|| ident.to_string());
    let mut out = ident.replace("..", "::");
    for (from, to) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$u20$", " "),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$C$", ","),
        ("$LP$", "("),
        ("$RP$", ")"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u27$", "'"),
        ("$SP$", "@"),
    ] {
        out = out.replace(from, to);
    }
    out
}

fn instances_matching(
    index: &Index<'_>,
    units: &[usize],
    wanted: &str,
    unscoped: bool,
) -> Result<Vec<Instance>, gimli::Error> {
    let mut out = Vec::new();
    for &unit in units {
        let dies = index.dies(unit)?;
        for (i, die) in dies.iter().enumerate() {
            if !matches!(die.tag, gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine) {
                continue;
            }
            let r = DieRef { unit, die: i };
            let declaration = index.declaration(r)?;
            let Some(name) = index.string(declaration, gimli::DW_AT_name)? else { continue };
            if strip_generics(&name) != strip_generics(wanted.rsplit("::").next().unwrap_or(wanted).trim())
                && !is_body(&name)
            {
                continue;
            }
            let path = index.scope_path(declaration)?;
            let matched = if unscoped {
                path.is_empty() && matches_function(wanted.rsplit("::").next().unwrap_or(wanted), &path, &name)
            } else if is_body(&name) {
                // A closure's (or `async` body's) code is its own function,
                // nested in the one the user wrote the region in.
                let mut path = path.clone();
                while path.last().is_some_and(|p| is_body(p)) {
                    path.pop();
                }
                path.split_last().is_some_and(|(outer, scopes)| matches_function(wanted, scopes, outer))
            } else {
                matches_function(wanted, &path, &name)
            };
            if !matched {
                continue;
            }
            let ranges = index.ranges(r)?;
            if ranges.is_empty() {
                continue;
            }
            let frame_owner = Some(frame_owner(index, r)?);
            let linkage_name = match index.inherited(r, gimli::DW_AT_linkage_name)? {
                Some((owner, _)) => index.string(owner, gimli::DW_AT_linkage_name)?,
                None => match index.inherited(r, gimli::DW_AT_MIPS_linkage_name)? {
                    Some((owner, _)) => index.string(owner, gimli::DW_AT_MIPS_linkage_name)?,
                    None => None,
                },
            };
            let mut qualified = path.clone();
            qualified.push(name);
            out.push(Instance { unit, die: Some(r), frame_owner, ranges, name: qualified.join("::"), linkage_name });
        }
    }
    Ok(out)
}

/// The last segment of a qualified DWARF name, generic arguments included:
/// `{closure#1}<alloc::string::String>` of
/// `app::{impl#0}::top::{closure#1}<alloc::string::String>` (a `::` inside
/// angle brackets belongs to the arguments).
pub fn last_segment(name: &str) -> &str {
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = name.as_bytes();
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => start = i + 2,
            _ => {}
        }
    }
    &name[start.min(name.len())..]
}

/// Whether a DWARF function name is an `async` body's (a coroutine's `poll`).
pub(crate) fn is_coroutine(name: &str) -> bool {
    ["{async_block#", "{async_fn#", "{coroutine#"].iter().any(|p| name.starts_with(p))
}

/// Whether a DWARF function name is a closure's or an `async` body's.
fn is_body(name: &str) -> bool {
    ["{closure#", "{async_block#", "{async_fn#", "{coroutine#"].iter().any(|p| name.starts_with(p))
}

/// The copies among `instances` that are the region's own code: those of the
/// innermost closure or `async` body around it (`body`, declared at that
/// line), or, for a region in a function's own body, those of the function
/// itself (a closure written on the anchor's line is other code).
pub fn in_body(
    index: &Index<'_>,
    instances: Vec<Instance>,
    body: Option<&crate::Body>,
) -> Result<Vec<Instance>, gimli::Error> {
    let mut out = Vec::new();
    for instance in instances {
        // `{closure#1}<alloc::string::String>`: the generic arguments of a
        // closure in a generic function hold `::` of their own.
        let short = last_segment(&instance.name);
        let keep = match body {
            None => !is_body(short),
            Some(body) => {
                let prefix = match body.kind {
                    crate::BodyKind::Closure => "{closure#",
                    crate::BodyKind::AsyncBlock => "{async_block#",
                    crate::BodyKind::AsyncFn => "{async_fn#",
                };
                let line = match instance.die {
                    Some(die) => index
                        .inherited(index.declaration(die)?, gimli::DW_AT_decl_line)?
                        .and_then(|(_, v)| v.udata_value()),
                    None => None,
                };
                short.starts_with(prefix) && line.is_none_or(|l| l == u64::from(body.line))
            }
        };
        if keep {
            out.push(instance);
        }
    }
    Ok(out)
}

/// The nearest enclosing concrete subprogram (itself for a subprogram).
fn frame_owner(index: &Index<'_>, r: DieRef) -> Result<DieRef, gimli::Error> {
    let dies = index.dies(r.unit)?;
    let mut current = Some(r.die);
    while let Some(i) = current {
        if dies[i].tag == gimli::DW_TAG_subprogram {
            return Ok(DieRef { unit: r.unit, die: i });
        }
        current = dies[i].parent;
    }
    Ok(r)
}

pub(crate) fn in_ranges(ranges: &[gimli::Range], address: u64) -> bool {
    ranges.iter().any(|r| r.begin <= address && address < r.end)
}

/// The addresses where the anchor statement begins in `instance`: in each
/// copy of the statement's code, the lowest `is_stmt` row of the anchor line
/// whose column is at or after the anchor's column (rustc and clang put a
/// statement's sub-expressions, which run first, at later columns than the
/// statement's own start, so the exact column is often *not* the first
/// instruction). Without rows on that line, the nearest following line with
/// code (one address).
///
/// Copies: an optimizer that unrolls a loop or duplicates a tail leaves
/// several copies of the statement's code in one function, with no DWARF
/// entity of their own (unlike inlined copies). Walking the function's own
/// rows in address order (rows of callees inlined into it are neutral),
/// a new copy starts at a row of the anchor line when
/// - its (line, column) is the one the current copy started with, other
///   columns came in between, and no row of
///   a later line came in between (the statement's code starts over: an
///   unrolled iteration; a later line in between is the same statement
///   going on, e.g. a loop's body before its back edge), or
/// - an `is_stmt` row of an earlier line came in between (code before the
///   statement ran again: the next iteration, or a duplicated tail).
///
/// Rows of one statement's code split by scheduling into several ranges
/// (other columns, or rows that are not statements) stay one copy.
pub fn code_addresses(
    index: &Index<'_>,
    instance: &Instance,
    anchor: &SourceLocation,
) -> Result<Vec<CodeAddress>, gimli::Error> {
    let lines = index.lines(instance.unit)?;
    let files: Vec<usize> =
        lines.files.iter().enumerate().filter(|(_, f)| same_file(f, &anchor.file)).map(|(i, _)| i).collect();
    let rows: Vec<_> = lines
        .rows
        .iter()
        .filter(|r| files.contains(&r.file) && r.line >= anchor.line)
        // Rows of the anchor's file and line inside a callee inlined here
        // are call-site rows of this function (gcc emits one at the start
        // of each inlined copy): they count.
        .filter(|r| in_ranges(&instance.ranges, r.address))
        .collect();
    let line = rows.iter().map(|r| r.line).min();
    if line != Some(anchor.line) {
        // No row of the anchor's line: its code may all be inlined callees
        // (`STEPS.fetch_add(1, ..)`, `Vec::new()`), whose rows name their own
        // files. Their call sites say where the statement starts.
        let calls = inlined_calls_at(index, instance, anchor)?;
        if !calls.is_empty() {
            return Ok(calls
                .into_iter()
                .map(|address| CodeAddress { address, fallback_line: None, earlier_column: false })
                .collect());
        }
    }
    let Some(line) = line else { return Ok(Vec::new()) };
    let on_line: Vec<_> = rows.iter().filter(|r| r.line == line).collect();
    let after_column: Vec<_> = if line == anchor.line {
        on_line.iter().filter(|r| r.column == 0 || r.column >= anchor.column).copied().collect()
    } else {
        on_line.clone()
    };
    let pool: Vec<&Row> = if after_column.is_empty() { &on_line } else { &after_column }.iter().map(|r| **r).collect();
    let earlier_column = line == anchor.line && after_column.is_empty();
    let first = |copy: &[&Row]| -> Option<u64> {
        let statements: Vec<_> = copy.iter().filter(|r| r.is_stmt).collect();
        if statements.is_empty() {
            copy.iter().map(|r| r.address).min()
        } else {
            statements.iter().map(|r| r.address).min()
        }
    };
    // When the anchor's line has no code here, the next line with code
    // stands in for it (each of its copies).
    let fallback_line = (line != anchor.line).then_some(line);
    // The function's own rows, in address order (callees inlined into it excluded).
    let inlined = nested_inlined_ranges(index, instance)?;
    let mut own: Vec<&Row> = lines
        .rows
        .iter()
        .filter(|r| in_ranges(&instance.ranges, r.address) && !in_ranges(&inlined, r.address))
        .collect();
    own.sort_by_key(|r| r.address);
    // Where statements of other lines start.
    let row_starts: Vec<u64> =
        own.iter().filter(|r| r.is_stmt && r.line != 0 && r.line != line).map(|r| r.address).collect();
    let in_pool = |r: &Row| pool.iter().any(|p| std::ptr::eq(*p, r));
    struct Copy<'r> {
        rows: Vec<&'r Row>,
        /// (line, column) of its rows, in order.
        keys: Vec<(u32, u32)>,
        /// Started because its first key came again (not after earlier lines).
        by_repeat: bool,
        /// Its pieces of code: from a row of it to the next code of another line (`None`
        /// while it goes on).
        pieces: Vec<(u64, Option<u64>)>,
    }
    // A coroutine's (an `async` body's `poll`) rows of its own first line
    // are its state machine: the dispatch that resumes a suspended future
    // and the return to the executor at each suspension. Code reached from
    // them is the body going on after an `.await`, not code before the
    // statement running again (measured: `for t in set { out.push(t.await..) }`
    // in release, the loop's `next()` after the resumed `.await` looked like
    // a second copy of the `for` statement, and a region before the loop ran
    // once per task instead of once).
    let dispatch_line = match instance.die {
        Some(die) if is_coroutine(last_segment(&instance.name)) => index
            .inherited(index.declaration(die)?, gimli::DW_AT_decl_line)?
            .and_then(|(_, v)| v.udata_value())
            .and_then(|l| u32::try_from(l).ok()),
        _ => None,
    };
    let mut copies: Vec<Copy<'_>> = Vec::new();
    let mut later_line_seen = false;
    let mut restart = true;
    // The first of the line-0 rows just before the current row, if any:
    // code jumped to there runs into this row.
    let mut zeros_from: Option<u64> = None;
    for row in own {
        if row.line == 0 {
            zeros_from.get_or_insert(row.address);
            continue;
        }
        let block_start = zeros_from.take().unwrap_or(row.address);
        if in_pool(row) {
            let key = (row.line, row.column);
            let keys = copies.last().map(|c| c.keys.as_slice()).unwrap_or_default();
            // The same key again right after itself is one piece of code
            // (rows differing only in scope, e.g. a macro's expansion).
            let repeat = keys.first() == Some(&key) && keys.last() != Some(&key) && !later_line_seen;
            // Code the current copy branches to is that copy going on (an
            // overflow check's continuation or panic path at opt-level 0),
            // not a new copy: a copy is entered by falling into it, or from
            // elsewhere. Only the copy's own code counts: the code of the
            // lines between may jump to the statement's start (an `async`
            // body's `.await` before it, done, goes on to the statement whose
            // first code in the function was the resume point of its own
            // `.await`).
            let continues = |copy: &Copy<'_>| {
                copy.pieces.iter().any(|&(from, to)| {
                    branches_into(index.binary, from, to.unwrap_or(block_start), block_start, row.address)
                })
            };
            if (restart || repeat) && !copies.last().is_some_and(continues) {
                copies.push(Copy { rows: Vec::new(), keys: Vec::new(), by_repeat: !restart, pieces: Vec::new() });
                later_line_seen = false;
            }
            // Either way the rows that follow are this copy's (a copy the
            // code jumped back into goes on past the jump's target).
            restart = false;
            let copy = copies.last_mut().expect("a copy");
            copy.keys.push(key);
            copy.rows.push(row);
            if copy.pieces.last().is_none_or(|(_, end)| end.is_some()) {
                copy.pieces.push((block_start, None));
            }
        } else if row.line != 0 && files.contains(&row.file) {
            if let Some(piece) = copies.last_mut().and_then(|c| c.pieces.last_mut()).filter(|p| p.1.is_none()) {
                piece.1 = Some(block_start);
            }
            if row.line > line {
                later_line_seen = true;
            } else if row.line < line && row.is_stmt && Some(row.line) != dispatch_line {
                restart = true;
            }
        }
    }
    // A copy started by a repeated key is one only if the statement's code
    // really starts over: its keys are those of the copy before (an unrolled
    // iteration). Otherwise the statement's code only came back to a column
    // (`if (k % 2)` at opt-level 0: the condition's column, the division's,
    // the condition's again at the jump).
    let mut merged: Vec<Copy<'_>> = Vec::new();
    for copy in copies {
        match merged.last_mut() {
            Some(previous) if copy.by_repeat && copy.keys != previous.keys => {
                previous.rows.extend(copy.rows);
                previous.keys.extend(copy.keys);
            }
            _ => merged.push(copy),
        }
    }
    let mut copies: Vec<Vec<&Row>> = merged.into_iter().map(|c| c.rows).collect();
    if is_coroutine(last_segment(&instance.name)) {
        drop_resume_points(&mut copies);
    }
    // Rows of the line only inside inlined callees (call-site rows).
    if copies.is_empty() {
        return Ok(first(&pool)
            .map(|address| vec![CodeAddress { address, fallback_line, earlier_column }])
            .unwrap_or_default());
    }
    let frame = frame_ranges(index, instance)?;
    let mut out: Vec<CodeAddress> = copies
        .iter()
        .filter_map(|c| {
            // The copy's code runs to the next statement of another line.
            let last = c.iter().map(|r| r.address).max()?;
            let end = row_starts.iter().copied().find(|&a| a > last).unwrap_or(last + 1);
            first(c).map(|a| join_after_side_block(index.binary, &frame, a, end))
        })
        .map(|address| CodeAddress { address, fallback_line, earlier_column })
        .collect();
    out.sort_by_key(|c| c.address);
    out.dedup();
    if out.len() > 1 {
        // Copies run once per execution of the statement, so they sit in
        // as many loops as each other: code of the line placed after the
        // loop holding the others (a store the optimizer sank out of the
        // loop, to its exit) is not a copy. Code before such a loop is (a
        // fully unrolled loop's earlier iterations, when something inlined
        // into the last one loops).
        let loops = back_edges(index.binary, &frame);
        let inside = |a: u64, (t, s): &(u64, u64)| *t <= a && a <= *s;
        let depth = |a: u64| loops.iter().filter(|l| inside(a, l)).count();
        let deepest = out.iter().map(|c| depth(c.address)).max().unwrap_or(0);
        let deep: Vec<u64> = out.iter().map(|c| c.address).filter(|&a| depth(a) == deepest).collect();
        out.retain(|c| {
            depth(c.address) == deepest
                || !loops.iter().any(|l| !inside(c.address, l) && l.1 < c.address && deep.iter().any(|&d| inside(d, l)))
        });
    }
    Ok(out)
}

/// In a coroutine (the `poll` of an `async` body), drops the code of the
/// anchor's line that a resumed future jumps to: the state machine's
/// dispatch at the function's entry continues a suspended future at its
/// `.await`, in the middle of the statement holding it, after code of an
/// earlier line (the dispatch) and without the statement's first
/// sub-expressions. That code looks like a copy of the statement to
/// [`code_addresses`], but running the region there would run it again at
/// every resumption, with the statement's temporaries and the frame's
/// unsaved locals not set up (measured on `tokio::task::yield_now().await;`
/// at opt-level 0: the resume block starts at the `await` keyword's column
/// and reads stale frame slots). A copy is such a resume point when none of
/// its rows is at the earliest column the other copies start with: a
/// statement's copies (unrolled iterations) all have its first column.
fn drop_resume_points(copies: &mut Vec<Vec<&Row>>) {
    let earliest = |copy: &Vec<&Row>| copy.iter().map(|r| r.column).min().unwrap_or(0);
    let Some(first) = copies.iter().map(earliest).min() else { return };
    if copies.iter().any(|c| earliest(c) > first) {
        copies.retain(|c| earliest(c) == first);
    }
}

/// Where the callees inlined at the anchor's line start, in `instance`'s own
/// code (not inside another callee inlined into it): the first instruction
/// of each call of the lowest column at or after the anchor's (each copy of
/// the statement, when the optimizer duplicated it, has its own).
fn inlined_calls_at(index: &Index<'_>, instance: &Instance, anchor: &SourceLocation) -> Result<Vec<u64>, gimli::Error> {
    let Some(die) = instance.die else { return Ok(Vec::new()) };
    let files = index.files(die.unit)?;
    let mut found: Vec<(u64, u64)> = Vec::new();
    // The frame's control-flow graph, built once when a copy needs it.
    let mut frame: Option<Option<crate::cfg::Cfg>> = None;
    for r in directly_inlined(index, die)? {
        let line = index.udata(r, gimli::DW_AT_call_line)?;
        let column = index.udata(r, gimli::DW_AT_call_column)?.unwrap_or(0);
        let file = match index.attr(r, gimli::DW_AT_call_file)? {
            Some(gimli::AttributeValue::FileIndex(f)) => Some(f),
            other => other.and_then(|v| v.udata_value()),
        };
        // Line tables of DWARF 5 number files from 0, earlier ones from 1 (0 = none).
        let version = index.units[die.unit].unit.line_program.as_ref().map_or(5, |p| p.header().version());
        let path = file.and_then(|f| {
            let f = if version >= 5 { f } else { f.checked_sub(1)? };
            files.get(usize::try_from(f).ok()?)
        });
        if line != Some(u64::from(anchor.line))
            || !path.is_some_and(|p| same_file(p, &anchor.file))
            || (column != 0 && column < u64::from(anchor.column))
        {
            continue;
        }
        let entry = match index.attr(r, gimli::DW_AT_entry_pc)? {
            Some(gimli::AttributeValue::Addr(a)) => Some(a),
            _ => None,
        };
        let start = match entry {
            Some(a) => Some(a),
            None => {
                let ranges = index.ranges(r)?;
                if frame.is_none() {
                    frame = Some(frame_cfg(index, instance, &anchor.file)?);
                }
                frame
                    .as_ref()
                    .and_then(|f| f.as_ref())
                    .and_then(|cfg| entered_at(cfg, &ranges))
                    .or_else(|| ranges.iter().map(|r| r.begin).min())
            }
        };
        if let Some(start) = start.filter(|&a| in_ranges(&instance.ranges, a)) {
            found.push((column, start));
        }
    }
    let Some(first) = found.iter().map(|(c, _)| *c).min() else { return Ok(Vec::new()) };
    let mut out: Vec<u64> = found.into_iter().filter(|(c, _)| *c == first).map(|(_, a)| a).collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Where the code of `ranges` (an inlined copy without `DW_AT_entry_pc`) is entered from the
/// rest of its frame, whose graph is `cfg` ([`crate::cfg::Cfg::entry_of`]): the lowest address
/// of the copy may be alignment padding, or a later block of the copy laid out first (clang
/// -O2 put a loop's `malloc` path of an inlined `put` before the hash that starts it; the
/// padding before it never ran).
fn entered_at(cfg: &crate::cfg::Cfg, ranges: &[gimli::Range]) -> Option<u64> {
    let inside: Vec<bool> = cfg.insns().iter().map(|i| in_ranges(ranges, i.address)).collect();
    cfg.entry_of(&inside, None).map(|e| cfg.insns()[e].address)
}

/// The address where a copy's executions all pass, from its lowest
/// statement row `first`: optimized code may put a side block of the
/// statement first (`Vec::push`'s call to grow, skipped by a conditional
/// jump just before it when there is room). When the instruction before
/// `first` jumps conditionally over it to an address inside the copy's
/// code that the side block falls into, every
/// execution passes that address once, and the region goes there;
/// otherwise `first` stays. `end` is where the copy's code ends.
fn join_after_side_block(binary: &crate::loader::Binary, frame: &[gimli::Range], first: u64, end: u64) -> u64 {
    use iced_x86::{Decoder, DecoderOptions, FlowControl};
    let Some(range) = frame.iter().find(|r| r.begin <= first && first < r.end) else { return first };
    let Some(bytes) = binary.code(range.begin, range.end) else { return first };
    let mut decoder = Decoder::with_ip(64, bytes, range.begin, DecoderOptions::NONE);
    let mut before = None;
    let mut side = Vec::new();
    for instruction in &mut decoder {
        if instruction.ip() < first {
            before = Some(instruction);
        } else if instruction.ip() < end {
            side.push(instruction);
        } else {
            break;
        }
    }
    let Some(jump) = before.filter(|i| i.flow_control() == FlowControl::ConditionalBranch && i.next_ip() == first)
    else {
        return first;
    };
    let target = jump.near_branch_target();
    if target <= first || target >= end {
        return first;
    }
    // The side block runs into the target: no jump, return or stop on the way
    // (calls return), and the target is an instruction boundary.
    for i in side.iter().take_while(|i| i.ip() < target) {
        if !matches!(i.flow_control(), FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall) {
            return first;
        }
    }
    if side.iter().any(|i| i.ip() == target) {
        target
    } else {
        first
    }
}

/// The loops of the code in `ranges`, as (target, branch) address pairs of
/// its backward jumps.
pub(crate) fn back_edges(binary: &crate::loader::Binary, ranges: &[gimli::Range]) -> Vec<(u64, u64)> {
    use iced_x86::{Decoder, DecoderOptions, FlowControl};
    let mut out = Vec::new();
    for range in ranges {
        let Some(bytes) = binary.code(range.begin, range.end) else { continue };
        let mut decoder = Decoder::with_ip(64, bytes, range.begin, DecoderOptions::NONE);
        for instruction in &mut decoder {
            if matches!(instruction.flow_control(), FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch) {
                let target = instruction.near_branch_target();
                if target <= instruction.ip() && ranges.iter().any(|r| r.begin <= target && target < r.end) {
                    out.push((target, instruction.ip()));
                }
            }
        }
    }
    out
}

/// Whether a jump in the code from `from` to `to` (calls excluded)
/// targets an address in `[begin, end]`.
fn branches_into(binary: &crate::loader::Binary, from: u64, to: u64, begin: u64, end: u64) -> bool {
    use iced_x86::{Decoder, DecoderOptions, FlowControl};
    let Some(bytes) = binary.code(from, to) else { return false };
    let mut decoder = Decoder::with_ip(64, bytes, from, DecoderOptions::NONE);
    for instruction in &mut decoder {
        if matches!(instruction.flow_control(), FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch) {
            let target = instruction.near_branch_target();
            if begin <= target && target <= end {
                return true;
            }
        }
    }
    false
}

/// The code of the function whose frame holds `instance` (itself, or the function it is
/// inlined into).
pub fn frame_ranges(index: &Index<'_>, instance: &Instance) -> Result<Vec<gimli::Range>, gimli::Error> {
    match instance.frame_owner {
        Some(owner) => index.ranges(owner),
        None => Ok(instance.ranges.clone()),
    }
}

/// The source line of an address of `instance`'s code, in `file`: a callee inlined directly into
/// the copy counts as the line of its call; code of other files is line 0.
pub struct LineLookup {
    ranges: Vec<gimli::Range>,
    calls: Vec<(gimli::Range, u32)>,
    own: Vec<(u64, u32)>,
}

impl LineLookup {
    pub fn new(index: &Index<'_>, instance: &Instance, file: &std::path::Path) -> Result<LineLookup, gimli::Error> {
        let lines = index.lines(instance.unit)?;
        let files: Vec<usize> =
            lines.files.iter().enumerate().filter(|(_, f)| same_file(f, file)).map(|(i, _)| i).collect();
        let calls = inlined_call_lines(index, instance)?;
        let inlined: Vec<gimli::Range> = calls.iter().map(|(r, _)| *r).collect();
        let mut own: Vec<(u64, u32)> = lines
            .rows
            .iter()
            .filter(|r| in_ranges(&instance.ranges, r.address) && !in_ranges(&inlined, r.address))
            .map(|r| (r.address, if files.contains(&r.file) { r.line } else { 0 }))
            .collect();
        own.sort_unstable();
        Ok(LineLookup { ranges: instance.ranges.clone(), calls, own })
    }

    /// Whether a line-table row (or a callee inlined into the copy) starts at `address`.
    pub fn starts_row(&self, address: u64) -> bool {
        self.own.binary_search_by_key(&address, |(a, _)| *a).is_ok()
            || self.calls.iter().any(|(r, _)| r.begin == address)
    }

    /// `None` outside the copy's code.
    pub fn line(&self, address: u64) -> Option<u32> {
        if !in_ranges(&self.ranges, address) {
            return None;
        }
        if let Some((_, call)) = self.calls.iter().find(|(r, _)| r.begin <= address && address < r.end) {
            return Some(*call);
        }
        let at = self.own.partition_point(|(a, _)| *a <= address);
        Some(if at == 0 { 0 } else { self.own[at - 1].1 })
    }
}

/// The paths of `instance`'s code that skip the region placed at
/// `locations` (its addresses in this copy): from code of lines before the
/// anchor to the code after the anchor statement's (code of `line`, the
/// anchor's or the later line standing in for it), passing no location (see
/// `cfg`). Code of callees inlined into the copy counts as its call's line.
pub fn bypasses(
    index: &Index<'_>,
    instance: &Instance,
    locations: &[u64],
    anchor: &SourceLocation,
    line: u32,
) -> Result<Vec<crate::cfg::Bypass>, gimli::Error> {
    let Some(cfg) = frame_cfg(index, instance, &anchor.file)? else { return Ok(Vec::new()) };
    Ok(cfg.bypasses(locations, anchor.line, line))
}

/// The control-flow graph of the function whose frame holds `instance`, with each
/// instruction's line in `file` as [`LineLookup`] gives it; `None` when its code is not in
/// the binary's file.
pub fn frame_cfg(
    index: &Index<'_>,
    instance: &Instance,
    file: &std::path::Path,
) -> Result<Option<crate::cfg::Cfg>, gimli::Error> {
    let frame = frame_ranges(index, instance)?;
    let lookup = LineLookup::new(index, instance, file)?;
    let line_of = |address: u64| lookup.line(address);
    let mut code = Vec::new();
    for range in &frame {
        let Some(bytes) = index.binary.code(range.begin, range.end) else { return Ok(None) };
        code.extend(crate::cfg::decode(bytes, range.begin, |a| in_ranges(&frame, a), line_of));
    }
    code.sort_by_key(|i| i.address);
    Ok(Some(crate::cfg::Cfg::new(code)))
}

/// Where control leaves the code of the statement of lines `first..=last` in `instance` (see
/// `cfg::Cfg::statement_exits`). Code of callees inlined into the copy counts as its call's line.
pub fn statement_exits(
    index: &Index<'_>,
    instance: &Instance,
    file: &std::path::Path,
    (first, last): (u32, u32),
) -> Result<Result<Vec<u64>, String>, gimli::Error> {
    let frame = frame_ranges(index, instance)?;
    let lookup = LineLookup::new(index, instance, file)?;
    let line_of = |address: u64| lookup.line(address);
    let mut code = Vec::new();
    for range in &frame {
        let Some(bytes) = index.binary.code(range.begin, range.end) else {
            return Ok(Err("its code is not in the binary".into()));
        };
        code.extend(crate::cfg::decode(bytes, range.begin, |a| in_ranges(&frame, a), line_of));
    }
    code.sort_by_key(|i| i.address);
    Ok(crate::cfg::Cfg::new(code).statement_exits(first, last, |a| lookup.starts_row(a)))
}

/// The ranges of the callees inlined directly into `instance` (not inside
/// another one), each with the line of its call.
fn inlined_call_lines(index: &Index<'_>, instance: &Instance) -> Result<Vec<(gimli::Range, u32)>, gimli::Error> {
    let Some(die) = instance.die else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for r in directly_inlined(index, die)? {
        let line = index.udata(r, gimli::DW_AT_call_line)?.and_then(|l| u32::try_from(l).ok()).unwrap_or(0);
        for range in index.ranges(r)? {
            out.push((range, line));
        }
    }
    Ok(out)
}

/// The `DW_TAG_inlined_subroutine`s directly inside `die` (not inside another one).
fn directly_inlined(index: &Index<'_>, die: DieRef) -> Result<Vec<DieRef>, gimli::Error> {
    let dies = index.dies(die.unit)?;
    let depth = dies[die.die].depth;
    let mut out = Vec::new();
    // Inlined subroutines nested in another inlined subroutine are skipped
    // with it (the depth of the DIE whose subtree is skipped).
    let mut skip_below: Option<u32> = None;
    for (i, d) in dies.iter().enumerate().skip(die.die + 1) {
        if d.depth <= depth {
            break;
        }
        if let Some(below) = skip_below {
            if d.depth > below {
                continue;
            }
            skip_below = None;
        }
        if d.tag == gimli::DW_TAG_inlined_subroutine {
            skip_below = Some(d.depth);
            out.push(DieRef { unit: die.unit, die: i });
        }
    }
    Ok(out)
}

/// Address ranges of the callees inlined into `instance` (at any depth).
pub(crate) fn nested_inlined_ranges(index: &Index<'_>, instance: &Instance) -> Result<Vec<gimli::Range>, gimli::Error> {
    let Some(die) = instance.die else { return Ok(Vec::new()) };
    let dies = index.dies(die.unit)?;
    let depth = dies[die.die].depth;
    let mut out = Vec::new();
    for (i, d) in dies.iter().enumerate().skip(die.die + 1) {
        if d.depth <= depth {
            break;
        }
        if d.tag == gimli::DW_TAG_inlined_subroutine {
            out.extend(index.ranges(DieRef { unit: die.unit, die: i })?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::matches_function;

    fn p(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn function_names() {
        assert!(matches_function("run", &p(&["app", "Vm"]), "run"));
        assert!(matches_function("Vm::run", &p(&["app", "Vm"]), "run"));
        assert!(matches_function("app::Vm::run", &p(&["app", "Vm"]), "run"));
        assert!(!matches_function("Other::run", &p(&["app", "Vm"]), "run"));
        assert!(matches_function("Vm::fmt", &p(&["app", "{impl#1}"]), "fmt"));
        assert!(matches_function("Stack::push", &p(&["app", "Stack<i32>"]), "push"));
        assert!(matches_function("largest", &p(&["app"]), "largest<u8>"));
        assert!(matches_function("main", &p(&[]), "main"));
        assert!(!matches_function("a::b::main", &p(&["b"]), "main"));
        assert!(matches_function("Vm::fmt", &p(&["app", "<impl core::fmt::Display for app::Vm>"]), "fmt"));
    }

    #[test]
    fn last_segments_keep_their_generic_arguments() {
        use super::last_segment;
        assert_eq!(
            last_segment("app::{impl#0}::top::{closure#1}<alloc::string::String>"),
            "{closure#1}<alloc::string::String>"
        );
        assert_eq!(last_segment("app::Scorer::score::{closure#0}<app::LenScorer>"), "{closure#0}<app::LenScorer>");
        assert_eq!(last_segment("show<app::Sq>"), "show<app::Sq>");
        assert_eq!(last_segment("main"), "main");
    }

    #[test]
    fn legacy_symbols() {
        assert_eq!(super::demangle_legacy("_ZN2vm2Vm3run17h834a807d36d7f155E").unwrap(), ["vm", "Vm", "run"]);
        assert_eq!(
            super::demangle_legacy("_ZN46_$LT$app..Vm$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE")
                .unwrap(),
            ["<app::Vm as core::fmt::Display>", "fmt"]
        );
        assert_eq!(super::demangle_legacy("main"), None);
        assert_eq!(super::demangle_legacy("_ZN99short"), None);
    }
}
