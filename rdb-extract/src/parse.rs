//! The walk: reads each parsed file's functions, finds its regions and rdb
//! items, resolves the names each region uses (program locals and statics
//! become arguments) and records what is wrong as [`Finding`]s. It builds
//! the [`FileModel`]; `valid` turns findings into diagnostics and `rewrite`
//! turns the model into the two texts.

use crate::rewrite;
use crate::syntax::{
    format_captures, is_check, is_debug_only, is_rdb_macros_import, item_attrs, let_names, marker_of, pat_names,
    stmt_marker, Marker, StaticDef, Statics,
};
use crate::text::{self, Edit, LineIndex};
use crate::valid::{Finding, MUTATING_METHODS};
use crate::{ArgumentKind, LineCol, NestKind, Nested, Region, RegionArgument, SourceInput};
use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Attribute, Block, Expr, Item, Macro, Pat, Stmt};

/// What the walk found in one file.
#[derive(Default)]
pub(crate) struct FileModel {
    /// Code removed from the main text (before widening).
    pub(crate) removals: Vec<Range<usize>>,
    /// Edits turning the user's text into the debug text.
    pub(crate) debug_edits: Vec<Edit>,
    /// Regions, with the offset of their anchor in the user's text, the
    /// start offsets of the closures or `async` bodies around them, and per
    /// argument the offsets where later statements of the region's block
    /// may change it.
    pub(crate) regions: Vec<FoundRegion>,
    pub(crate) findings: Vec<(Range<usize>, Finding)>,
    /// Start offsets of markers that are statements of a well-formed or
    /// diagnosed region (any other marker is misplaced).
    pub(crate) placed_markers: Vec<usize>,
    /// Where the `rdb_check!`s inside regions start (others are reported).
    pub(crate) placed_checks: Vec<usize>,
    /// Event callbacks, numbered after the file's regions.
    pub(crate) callbacks: Vec<crate::callbacks::Draft>,
}

/// A region and offsets in the user's text that the rewrite turns into
/// positions in the stripped text.
pub(crate) struct FoundRegion {
    pub(crate) region: Region,
    /// The anchor.
    pub(crate) anchor: usize,
    /// When the region ends its block: the span (start, last byte) of the statement before it.
    pub(crate) last_statement: Option<(usize, usize)>,
    /// The `}` closing the region's block.
    pub(crate) close: usize,
    /// When the statement after the region is a loop: its span (start, last byte).
    pub(crate) before_loop: Option<(usize, usize)>,
    /// The starts of the closures or `async` bodies around the region.
    pub(crate) bodies: Vec<usize>,
    /// Per argument: where later statements of the block may change it.
    pub(crate) written: Vec<Vec<usize>>,
}

/// Walks `file` (the parse of `input`), numbering regions from `next_id`;
/// returns the model and the next free id.
pub(crate) fn walk(input: &SourceInput, file: &syn::File, statics: &Statics, next_id: u32) -> (FileModel, u32) {
    let mut w = FileWalk {
        input,
        source: Arc::from(input.text.as_str()),
        idx: LineIndex::new(&input.text),
        statics,
        module: input.module_path.clone(),
        impl_ctx: Vec::new(),
        fns: Vec::new(),
        scopes: Vec::new(),
        bodies: Vec::new(),
        bindings: Vec::new(),
        awaits: Vec::new(),
        loops: Vec::new(),
        body_blocks: HashSet::new(),
        shared: Vec::new(),
        calls: Vec::new(),
        region: None,
        model: FileModel::default(),
        next_id,
    };
    w.visit_file(file);
    w.finish_sharing();
    (w.model, w.next_id)
}

struct FnCtx {
    name: String,
    /// Names written after `mut` anywhere in the function (its bindings
    /// that may change, conservatively: `&mut x`, macros' tokens too).
    mut_names: HashSet<String>,
    /// Where its statements may change a variable (assignments, `&mut`
    /// borrows, method calls on it: [`Writes`]), by name.
    writes: Vec<(String, usize)>,
}

/// A closure or `async` body the walk is in, outside regions.
struct Body {
    kind: NestKind,
    /// Start offset of the closure (or `async` block, or `async fn`).
    start: usize,
    /// Index in `FileWalk::scopes` of the body's first scope (its parameters):
    /// names declared below it live outside the body.
    scope_base: usize,
    /// Names the program's own code in the body uses (region code left
    /// out): what a closure or `async` block captures. `None` for an
    /// `async fn` body, which holds every parameter.
    used: Option<HashSet<String>>,
}

/// A `let` at a region's top level that later regions may use.
struct SharedLet {
    name: String,
    region: u32,
    /// The region's end: a program binding of the name after it shadows it.
    at: usize,
    /// Depth of the program scope the region is in.
    depth: usize,
    /// The function body (closure or `async` start, `None` for the
    /// function's own) the region is in.
    body: Option<usize>,
}

/// A region's call in the debug text, finished after the walk.
struct RegionCall {
    id: u32,
    /// Index in `FileModel::regions`.
    region: usize,
    /// Indexes in `FileModel::debug_edits` of the texts replacing its markers.
    open: usize,
    close: usize,
    args: Vec<Arg>,
    /// Its top-level `let` names, in order.
    lets: Vec<String>,
    /// The regions whose debug-only locals it uses.
    from: Vec<u32>,
}

/// How a region reaches one program variable.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    pub(crate) name: String,
    pub(crate) kind: ArgumentKind,
    pub(crate) static_path: Option<String>,
    /// Expression building the reference in the debug module's call.
    pub(crate) reference: String,
    /// The closure parameter holding that reference.
    pub(crate) param: String,
    /// For a local of an `async` body bound before an `.await` that can
    /// run between its binding and the region: that `.await`'s offset.
    pub(crate) after_await: Option<usize>,
}

struct RegionCtx {
    /// Program scopes visible at `rdb_begin!()`, outermost first.
    outer: Vec<Vec<String>>,
    /// Names bound inside the region (innermost scope last).
    scopes: Vec<Vec<String>>,
    loop_depth: usize,
    closure_depth: usize,
    labels: Vec<String>,
    args: Vec<Arg>,
    edits: Vec<Edit>,
    /// Debug-only locals of earlier regions it uses: (name, region).
    imports: Vec<(String, u32)>,
}

impl RegionCtx {
    fn outer_has(&self, name: &str) -> bool {
        self.outer.iter().any(|s| s.iter().any(|n| n == name))
    }
}

enum Resolved {
    RegionLocal,
    Arg(usize),
    /// A variable of the enclosing function the program's closure does not
    /// capture (the range is the closure's start).
    Uncaptured(String, Range<usize>),
    /// A debug-only local of an earlier region in another function body
    /// (the enclosing function's, or another closure's or `async` body's).
    OtherBody(String, u32),
    Unknown,
}

struct FileWalk<'a> {
    input: &'a SourceInput,
    source: Arc<str>,
    idx: LineIndex<'a>,
    statics: &'a Statics,
    module: Vec<String>,
    impl_ctx: Vec<String>,
    fns: Vec<FnCtx>,
    scopes: Vec<Vec<String>>,
    bodies: Vec<Body>,
    /// `let` bindings of the program (outside regions) in open scopes:
    /// name, offset where the binding takes effect (the end of its `let`
    /// statement) and the depth of `scopes` it belongs to.
    bindings: Vec<(String, usize, usize)>,
    /// Every `.await` of the program seen so far (outside regions): its
    /// offset and the start of the `async` body it suspends.
    awaits: Vec<(usize, Option<usize>)>,
    /// The loops around the walk's position (outside regions): start offset
    /// and the first `.await` of their body that suspends the same body.
    loops: Vec<(usize, Option<usize>)>,
    /// The blocks that are the whole body of a function, a closure or an
    /// `async` block (by address: the syntax tree outlives the walk).
    body_blocks: HashSet<usize>,
    /// Debug-only locals regions declared (their top-level `let`s), visible
    /// to later regions of the same function body while the region's
    /// program scope is open.
    shared: Vec<SharedLet>,
    /// Per region of the file: what its call in the debug text needs once
    /// the whole file is walked (which of its `let`s later regions use).
    calls: Vec<RegionCall>,
    region: Option<RegionCtx>,
    model: FileModel,
    next_id: u32,
}

impl<'a> FileWalk<'a> {
    fn range(&self, span: Span) -> Range<usize> {
        self.idx.offset(span.start())..self.idx.offset(span.end())
    }

    fn finding(&mut self, span: Span, finding: Finding) {
        let range = self.range(span);
        self.model.findings.push((range, finding));
    }

    /// Handles an rdb item (`#[debug_only]` or an rdb_macros import);
    /// returns true when the item was one.
    fn rdb_item(&mut self, attrs: &[Attribute], item_span: Span, is_import: Result<bool, ()>) -> bool {
        match is_import {
            Ok(true) => {
                let r = self.range(item_span);
                if self.region.is_none() {
                    self.model.removals.push(r.clone());
                }
                let blank = text::newlines_of(&self.source[r.clone()]);
                self.model.debug_edits.push(Edit { range: r, with: blank });
                return true;
            }
            Err(()) => {
                self.finding(item_span, Finding::MixedUse);
                return true;
            }
            Ok(false) => {}
        }
        let Some(attr) = is_debug_only(attrs) else { return false };
        let r = self.range(item_span);
        if self.region.is_none() {
            self.model.removals.push(r.clone());
        }
        let ar = self.range(attr.span());
        self.model.debug_edits.push(Edit { range: ar, with: "#[allow(dead_code, unused)]".into() });
        true
    }

    fn enter_fn(&mut self, name: String, sig: &syn::Signature, block: &'a Block) {
        if self.region.is_some() {
            return;
        }
        let mut params = Vec::new();
        for input in &sig.inputs {
            match input {
                syn::FnArg::Receiver(_) => params.push("self".to_string()),
                syn::FnArg::Typed(t) => pat_names(&t.pat, &mut params),
            }
        }
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![params]);
        let saved_bindings = std::mem::take(&mut self.bindings);
        let saved_loops = std::mem::take(&mut self.loops);
        let mut saved_bodies = std::mem::take(&mut self.bodies);
        if sig.asyncness.is_some() {
            // The body runs in the future the function returns, which holds
            // every parameter.
            let start = self.range(sig.fn_token.span).start;
            self.bodies.push(Body { kind: NestKind::AsyncFn, start, scope_base: 0, used: None });
        }
        let mut mut_names = HashSet::new();
        crate::syntax::mut_names(quote::ToTokens::to_token_stream(sig), &mut mut_names);
        crate::syntax::mut_names(quote::ToTokens::to_token_stream(block), &mut mut_names);
        let mut writes = Writes(Vec::new());
        writes.visit_block(block);
        let writes = writes.0.into_iter().map(|(n, span)| (n, self.range(span).start)).collect();
        self.fns.push(FnCtx { name, mut_names, writes });
        self.body_blocks.insert(block as *const Block as usize);
        self.visit_block(block);
        self.fns.pop();
        self.scopes = saved_scopes;
        self.bindings = saved_bindings;
        self.loops = saved_loops;
        std::mem::swap(&mut self.bodies, &mut saved_bodies);
    }

    /// Walks a closure's or `async` block's body outside regions.
    fn enter_body(
        &mut self,
        kind: NestKind,
        start: usize,
        params: Vec<String>,
        used: HashSet<String>,
        f: impl FnOnce(&mut Self),
    ) {
        self.bodies.push(Body { kind, start, scope_base: self.scopes.len(), used: Some(used) });
        self.scopes.push(params);
        f(self);
        self.pop_scope();
        self.bodies.pop();
    }

    fn block_with_regions(&mut self, block: &'a Block) {
        self.scopes.push(Vec::new());
        let mut open: Option<(usize, &'a Macro)> = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt_marker(stmt) {
                Some((Marker::Begin, mac)) => {
                    self.model.placed_markers.push(self.range(mac.span()).start);
                    if let Some((_, outer)) = open {
                        let outer = self.range(outer.span());
                        self.finding(stmt.span(), Finding::NestedBegin { outer });
                    } else {
                        open = Some((i, mac));
                    }
                }
                Some((Marker::End, mac)) => {
                    self.model.placed_markers.push(self.range(mac.span()).start);
                    match open.take() {
                        Some((b, _)) => self.region(block, b, i),
                        None => self.finding(stmt.span(), Finding::UnmatchedEnd),
                    }
                }
                None => {
                    if open.is_none() {
                        self.visit_stmt(stmt);
                    }
                }
            }
        }
        if let Some((_, mac)) = open {
            self.finding(mac.span(), Finding::Unclosed);
        }
        self.pop_scope();
    }

    /// The region made of `block.stmts[b..=e]` (markers at both ends).
    fn region(&mut self, block: &'a Block, b: usize, e: usize) {
        let begin_span = block.stmts[b].span();
        let end_span = block.stmts[e].span();
        let Some(fctx) = self.fns.last() else {
            self.finding(begin_span, Finding::OutsideFunction);
            return;
        };
        let fname = fctx.name.clone();
        let mut_names = fctx.mut_names.clone();
        let region_start = self.range(begin_span).start;
        // Variables a statement before the region (in the text) may change.
        let written_before: HashSet<String> =
            fctx.writes.iter().filter(|(_, at)| *at < region_start).map(|(n, _)| n.clone()).collect();
        let outer = self.scopes.clone();
        self.region = Some(RegionCtx {
            outer,
            scopes: vec![Vec::new()],
            loop_depth: 0,
            closure_depth: 0,
            labels: Vec::new(),
            args: Vec::new(),
            edits: Vec::new(),
            imports: Vec::new(),
        });
        for stmt in &block.stmts[b + 1..e] {
            self.visit_stmt(stmt);
        }
        let mut ctx = self.region.take().expect("region context set above");
        let begin_at = self.range(begin_span).start;
        for arg in ctx.args.iter_mut().filter(|a| a.kind == ArgumentKind::Local) {
            arg.after_await = self.await_since_binding(&arg.name, begin_at);
        }
        let id = self.next_id;
        self.next_id += 1;

        let begin_range = self.range(begin_span);
        let end_range = self.range(end_span);
        self.model.removals.push(begin_range.start..end_range.end);
        // Anchor: the next statement that stays in the main build.
        let mut anchor = None;
        let mut before_loop = None;
        let mut k = e + 1;
        while k < block.stmts.len() {
            let stmt = &block.stmts[k];
            match stmt_marker(stmt) {
                Some(_) => {
                    // Skip a following region as a whole.
                    let mut j = k + 1;
                    while j < block.stmts.len() && stmt_marker(&block.stmts[j]).map(|m| m.0) != Some(Marker::End) {
                        j += 1;
                    }
                    k = j + 1;
                    continue;
                }
                None => {
                    if let Stmt::Item(item) = stmt {
                        if is_debug_only(item_attrs(item)).is_some() || is_rdb_macros_import(item) != Ok(false) {
                            k += 1;
                            continue;
                        }
                    }
                    anchor = Some(self.range(stmt.span()).start);
                    if let Stmt::Expr(Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_), _) = stmt {
                        let range = self.range(stmt.span());
                        before_loop = Some((range.start, range.end.saturating_sub(1).max(range.start)));
                    }
                    break;
                }
            }
        }
        let ends_block = anchor.is_none();
        let block_close = self.idx.offset(block.brace_token.span.close().start());
        let anchor = anchor.unwrap_or(block_close);
        // The statement before the region (another region, debug-only items passed over).
        let mut last_statement = None;
        let mut k = b;
        while ends_block && k > 0 {
            k -= 1;
            let stmt = &block.stmts[k];
            if stmt_marker(stmt).map(|m| m.0) == Some(Marker::End) {
                while k > 0 && stmt_marker(&block.stmts[k]).map(|m| m.0) != Some(Marker::Begin) {
                    k -= 1;
                }
                continue;
            }
            if let Stmt::Item(item) = stmt {
                if is_debug_only(item_attrs(item)).is_some() || is_rdb_macros_import(item) != Ok(false) {
                    continue;
                }
            }
            let range = self.range(stmt.span());
            last_statement = Some((range.start, range.end.saturating_sub(1).max(range.start)));
            break;
        }

        let (open, close) = rewrite::region_call(id, &ctx.args);
        let open_edit = self.model.debug_edits.len();
        self.model.debug_edits.push(Edit { range: begin_range.clone(), with: open });
        self.model.debug_edits.extend(ctx.edits);
        let close_edit = self.model.debug_edits.len();
        self.model.debug_edits.push(Edit { range: end_range.clone(), with: close });
        // Debug-only locals: those it uses come from one earlier region;
        // its own top-level `let`s are visible to later regions.
        let mut from: Vec<u32> = ctx.imports.iter().map(|(_, region)| *region).collect();
        from.sort_unstable();
        from.dedup();
        let mut lets: Vec<String> = Vec::new();
        for name in ctx.scopes.first().into_iter().flatten() {
            lets.retain(|n| n != name);
            lets.push(name.clone());
        }
        let body = self.bodies.last().map(|b| b.start);
        let depth = self.scopes.len();
        self.shared.extend(lets.iter().map(|name| SharedLet {
            name: name.clone(),
            region: id,
            at: end_range.end,
            depth,
            body,
        }));
        self.calls.push(RegionCall {
            id,
            region: self.model.regions.len(),
            open: open_edit,
            close: close_edit,
            args: ctx.args.clone(),
            lets,
            from,
        });
        let region = Region {
            id,
            file: self.input.path.clone(),
            begin: self.line_col(begin_range.start),
            end: self.line_col(end_range.start),
            anchor: LineCol { line: 0, column: 0 },
            function: fname,
            ends_block,
            last_statement: None,
            shares_from: Vec::new(),
            nesting: self.bodies.iter().map(|b| Nested { kind: b.kind, at: LineCol { line: 0, column: 0 } }).collect(),
            first_in_body: b == 0 && self.body_blocks.contains(&(block as *const Block as usize)),
            in_loop: {
                let body = self.bodies.last().map_or(0, |b| b.start);
                self.loops.iter().any(|(start, _)| *start > body)
            },
            block_close: 0,
            before_loop: None,
            arguments: ctx
                .args
                .into_iter()
                .map(|a| RegionArgument {
                    unchanged: a.kind == ArgumentKind::Local && !mut_names.contains(&a.name),
                    unwritten_before: a.kind == ArgumentKind::Local && !written_before.contains(&a.name),
                    name: a.name,
                    kind: a.kind,
                    static_path: a.static_path,
                    after_await: a.after_await.map(|at| self.line_col(at)),
                    written_after: Vec::new(),
                })
                .collect(),
        };
        let bodies = self.bodies.iter().map(|b| b.start).collect();
        // What the statements after the region (in its block) may change:
        // where the anchor's line has no code in a build and a later line
        // stands in, those variables may already hold their later values.
        let mut writes = Writes(Vec::new());
        for stmt in &block.stmts[e + 1..] {
            if stmt_marker(stmt).is_none() {
                writes.visit_stmt(stmt);
            }
        }
        let written = region
            .arguments
            .iter()
            .map(|a| writes.0.iter().filter(|(n, _)| *n == a.name).map(|(_, span)| self.range(*span).start).collect())
            .collect();
        self.model.regions.push(FoundRegion {
            region,
            anchor,
            last_statement,
            close: block_close,
            before_loop,
            bodies,
            written,
        });
    }

    /// For a local `name` read by a region starting at `begin` in an
    /// `async` body: an `.await` of that body that can run after the
    /// binding the region sees and before the region (one between them, or
    /// one in a loop around the region that the binding is outside of).
    /// The future is suspended there and resumed in a new call of its
    /// `poll`, so a variable the program does not keep across it is gone.
    fn await_since_binding(&self, name: &str, begin: usize) -> Option<usize> {
        let body = self.bodies.last().filter(|b| matches!(b.kind, NestKind::AsyncFn | NestKind::AsyncBlock))?;
        // The binding the region sees; parameters, captures and pattern
        // bindings count from the body's start (earlier never misses one).
        let bound = self
            .bindings
            .iter()
            .rev()
            .find(|(n, at, _)| n == name && *at > body.start && *at <= begin)
            .map_or(body.start, |(_, at, _)| *at);
        let between = self
            .awaits
            .iter()
            .filter(|(at, b)| *b == Some(body.start) && *at > bound && *at < begin)
            .map(|(at, _)| *at)
            .max();
        between.or_else(|| {
            self.loops.iter().find_map(|(start, first)| first.filter(|_| *start > body.start && *start > bound))
        })
    }

    fn line_col(&self, offset: usize) -> LineCol {
        let (line, column) = self.idx.line_col(offset);
        LineCol { line, column }
    }

    // ---- inside a region ----

    fn resolve_static(&self, segs: &[String]) -> Option<(String, StaticDef)> {
        let (name, prefix) = segs.split_last()?;
        let defs = self.statics.get(name)?;
        let module: Vec<String> = match prefix.first().map(String::as_str) {
            None => {
                // Same module first, then a name unique in the crate.
                if let Some(d) = defs.iter().find(|d| d.module == self.module) {
                    return Some((name.clone(), d.clone()));
                }
                let same_crate: Vec<&StaticDef> =
                    defs.iter().filter(|d| d.crate_name == self.input.crate_name).collect();
                if same_crate.len() == 1 {
                    return Some((name.clone(), same_crate[0].clone()));
                }
                return None;
            }
            Some("crate") => prefix[1..].to_vec(),
            Some(first) if first != self.input.crate_name && defs.iter().any(|d| d.crate_name == first) => {
                // `other_crate::path::NAME`: a static of another crate of the workspace.
                let module = &prefix[1..];
                return defs
                    .iter()
                    .find(|d| d.crate_name == first && d.module == module)
                    .map(|d| (name.clone(), d.clone()));
            }
            Some("self") => self.module.iter().cloned().chain(prefix[1..].iter().cloned()).collect(),
            Some("super") => {
                let mut m = self.module.clone();
                let mut rest = prefix;
                while rest.first().map(String::as_str) == Some("super") {
                    m.pop();
                    rest = &rest[1..];
                }
                m.extend(rest.iter().cloned());
                m
            }
            Some(_) => self.module.iter().cloned().chain(prefix.iter().cloned()).collect(),
        };
        defs.iter().find(|d| d.module == module).map(|d| (name.clone(), d.clone()))
    }

    /// Resolves a name or path used inside the region at `at`; reports a
    /// variable the program's closure does not capture.
    fn resolve(&mut self, segs: &[String], at: Span) -> Resolved {
        let resolved = self.resolve_name(segs);
        if let Resolved::OtherBody(name, region) = &resolved {
            let range = self.range(at);
            let finding = Finding::SharedInOtherBody { name: name.clone(), region: *region };
            if !self.model.findings.iter().any(|(r, f)| *r == range && matches!(f, Finding::SharedInOtherBody { .. })) {
                self.model.findings.push((range, finding));
            }
        }
        if let Resolved::Uncaptured(name, closure) = &resolved {
            let range = self.range(at);
            let finding = Finding::Uncaptured { name: name.clone(), closure: closure.clone() };
            if !self.model.findings.iter().any(|(r, f)| *r == range && matches!(f, Finding::Uncaptured { .. })) {
                self.model.findings.push((range, finding));
            }
        }
        resolved
    }

    fn resolve_name(&mut self, segs: &[String]) -> Resolved {
        let ctx = self.region.as_ref().expect("only called inside a region");
        if segs.len() == 1 {
            let name = &segs[0];
            if ctx.scopes.iter().any(|s| s.contains(name)) {
                return Resolved::RegionLocal;
            }
            // A debug-only local of an earlier region of this call, unless a
            // program binding after that region shadows it.
            let body = self.bodies.last().map(|b| b.start);
            let shared = self.shared.iter().rev().find(|s| s.name == *name);
            if let Some(shared) = shared {
                let shadowed = self.bindings.iter().any(|(n, at, _)| n == name && *at > shared.at)
                    || ctx.outer.iter().flatten().any(|n| n == name) && shared.body != body;
                if !shadowed && shared.body != body {
                    return Resolved::OtherBody(name.clone(), shared.region);
                }
                if !shadowed {
                    let import = (name.clone(), shared.region);
                    let ctx = self.region.as_mut().expect("only called inside a region");
                    if !ctx.imports.contains(&import) {
                        ctx.imports.push(import);
                    }
                    return Resolved::RegionLocal;
                }
            }
            if let Some(scope) = ctx.outer.iter().rposition(|s| s.contains(name)) {
                // Declared outside a closure (or `async` block) the region is
                // in: the program's closure must capture it.
                let missing = self
                    .bodies
                    .iter()
                    .rev()
                    .find(|b| b.scope_base > scope && b.used.as_ref().is_some_and(|used| !used.contains(name)));
                if let Some(body) = missing {
                    let closure = body.start..body.start + 1;
                    return Resolved::Uncaptured(name.clone(), closure);
                }
                let param = if name == "self" { "__rdb_self".to_string() } else { name.clone() };
                let reference = format!("&{name}");
                return self.arg(name.clone(), ArgumentKind::Local, None, reference, param);
            }
        }
        let Some((name, def)) = self.resolve_static(segs) else { return Resolved::Unknown };
        let root =
            if def.crate_name == self.input.crate_name { "crate".to_string() } else { format!("::{}", def.crate_name) };
        let mut path = vec![root];
        path.extend(def.module.iter().cloned());
        path.push(name.clone());
        let rust_path = path.join("::");
        let mut full = vec![def.crate_name.clone()];
        full.extend(def.module.iter().cloned());
        full.push(name.clone());
        let reference = if def.mutable {
            format!("unsafe {{ &*::core::ptr::addr_of!({rust_path}) }}")
        } else {
            format!("&{rust_path}")
        };
        let param = format!("__rdb_static_{}", full[1..].join("_"));
        self.arg(name, ArgumentKind::Static, Some(full.join("::")), reference, param)
    }

    fn arg(
        &mut self,
        name: String,
        kind: ArgumentKind,
        static_path: Option<String>,
        reference: String,
        param: String,
    ) -> Resolved {
        let ctx = self.region.as_mut().expect("only called inside a region");
        if let Some(i) = ctx.args.iter().position(|a| a.reference == reference) {
            return Resolved::Arg(i);
        }
        ctx.args.push(Arg { name, kind, static_path, reference, param, after_await: None });
        Resolved::Arg(ctx.args.len() - 1)
    }

    fn expr_path_segs(e: &Expr) -> Option<Vec<String>> {
        match e {
            Expr::Path(p) if p.qself.is_none() && p.path.segments.iter().all(|s| s.arguments.is_none()) => {
                Some(p.path.segments.iter().map(|s| s.ident.to_string()).collect())
            }
            _ => None,
        }
    }

    /// The program variable a place expression writes to, if any.
    fn written_variable(&mut self, place: &Expr) -> Option<String> {
        let mut e = place;
        loop {
            e = match e {
                Expr::Field(f) => &f.base,
                Expr::Index(i) => &i.expr,
                Expr::Paren(p) => &p.expr,
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &u.expr,
                Expr::MethodCall(m) => &m.receiver,
                _ => break,
            }
        }
        let segs = Self::expr_path_segs(e)?;
        match self.resolve(&segs, e.span()) {
            Resolved::Arg(i) => Some(self.region.as_ref()?.args[i].name.clone()),
            _ => None,
        }
    }

    fn write_error(&mut self, span: Span, var: &str, what: &str) {
        let local = self.region.as_ref().is_some_and(|c| c.outer_has(var)) && var != "self";
        self.finding(span, Finding::Write { var: var.to_string(), what: what.to_string(), local });
    }

    fn exit_error(&mut self, span: Span, what: &'static str) {
        self.finding(span, Finding::Exit { what });
    }

    fn push_edit(&mut self, range: Range<usize>, with: String) {
        if let Some(ctx) = self.region.as_mut() {
            ctx.edits.push(Edit { range, with });
        }
    }

    /// Identifiers used inside a macro invocation's tokens (macros are not
    /// parsed): every identifier that could be a variable use, plus the
    /// `{name}` captures of format strings.
    fn region_macro_tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in trees.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => self.region_macro_tokens(g.stream()),
                TokenTree::Ident(id) => {
                    let name = id.to_string();
                    let prev_punct = i.checked_sub(1).and_then(|j| match &trees[j] {
                        TokenTree::Punct(p) => Some(p.as_char()),
                        _ => None,
                    });
                    let next_punct = |k: usize| match trees.get(k) {
                        Some(TokenTree::Punct(p)) => Some(p.as_char()),
                        _ => None,
                    };
                    if matches!(prev_punct, Some('.') | Some(':') | Some('\'')) {
                        continue;
                    }
                    // A path `a::b::NAME` (a static of the program, perhaps).
                    if next_punct(i + 1) == Some(':') && next_punct(i + 2) == Some(':') {
                        let mut segs = vec![name.clone()];
                        let mut last = id.span();
                        let mut k = i + 3;
                        while let Some(TokenTree::Ident(next)) = trees.get(k) {
                            segs.push(next.to_string());
                            last = next.span();
                            if next_punct(k + 1) == Some(':') && next_punct(k + 2) == Some(':') {
                                k += 3;
                            } else {
                                break;
                            }
                        }
                        let called = matches!(trees.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                        if !called && segs.len() > 1 {
                            if let Resolved::Arg(a) = self.resolve(&segs, id.span()) {
                                let param = self.region.as_ref().expect("in region").args[a].param.clone();
                                let r = self.idx.offset(id.span().start())..self.idx.offset(last.end());
                                self.push_edit(r, format!("(*{param})"));
                            }
                        }
                        continue;
                    }
                    if matches!(next_punct(i + 1), Some(':') | Some('!'))
                        || (next_punct(i + 1) == Some('=') && next_punct(i + 2) != Some('='))
                    {
                        continue;
                    }
                    if let Resolved::Arg(a) = self.resolve(std::slice::from_ref(&name), id.span()) {
                        let param = self.region.as_ref().expect("in region").args[a].param.clone();
                        let r = self.range(id.span());
                        self.push_edit(r, format!("(*{param})"));
                    }
                }
                TokenTree::Literal(lit) => {
                    let s = lit.to_string();
                    if !s.starts_with('"') && !s.starts_with("r\"") && !s.starts_with("r#") {
                        continue;
                    }
                    for name in format_captures(&s) {
                        if let Resolved::Arg(a) = self.resolve(std::slice::from_ref(&name), lit.span()) {
                            let arg = self.region.as_ref().expect("in region").args[a].clone();
                            if arg.param != arg.name {
                                self.finding(lit.span(), Finding::FormatCapture { name });
                            }
                        }
                    }
                }
                TokenTree::Punct(_) => {}
            }
        }
    }
}

impl<'a> Visit<'a> for FileWalk<'a> {
    fn visit_item(&mut self, item: &'a Item) {
        if crate::callbacks::is_api_import(item) {
            // `use rdb::...`: the debug-side API exists in the debug build only.
            if self.region.is_none() {
                let r = self.range(item.span());
                self.model.removals.push(r);
            }
            return;
        }
        let place = crate::callbacks::Place {
            crate_name: &self.input.crate_name,
            idx: &self.idx,
            module: &self.module,
            in_region: self.region.is_some(),
        };
        match crate::callbacks::item(&place, item) {
            Some(Ok(draft)) => self.model.callbacks.push(draft),
            Some(Err(findings)) => self.model.findings.extend(findings),
            None => {}
        }
        if self.rdb_item(item_attrs(item), item.span(), is_rdb_macros_import(item)) {
            return;
        }
        if self.region.is_some() {
            // Items declared inside a region belong to the debug code; they
            // cannot see the enclosing function's locals.
            return;
        }
        match item {
            Item::Fn(f) => {
                let name = f.sig.ident.to_string();
                self.enter_fn(name, &f.sig, &f.block);
            }
            Item::Impl(i) => {
                let ty = match &*i.self_ty {
                    syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
                    other => quote::ToTokens::to_token_stream(other).to_string(),
                };
                self.impl_ctx.push(ty);
                visit::visit_item_impl(self, i);
                self.impl_ctx.pop();
            }
            Item::Trait(t) => {
                self.impl_ctx.push(t.ident.to_string());
                visit::visit_item_trait(self, t);
                self.impl_ctx.pop();
            }
            Item::Mod(m) => {
                self.module.push(m.ident.to_string());
                visit::visit_item_mod(self, m);
                self.module.pop();
            }
            other => visit::visit_item(self, other),
        }
    }

    fn visit_impl_item(&mut self, item: &'a syn::ImplItem) {
        let attrs: &[Attribute] = match item {
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            syn::ImplItem::Macro(m) => &m.attrs,
            _ => &[],
        };
        if let Some((span, attribute)) = crate::callbacks::misplaced(attrs) {
            self.finding(span, Finding::CallbackNotFunction { attribute });
        }
        if self.rdb_item(attrs, item.span(), Ok(false)) {
            return;
        }
        if let syn::ImplItem::Fn(f) = item {
            let ty = self.impl_ctx.last().cloned().unwrap_or_default();
            self.enter_fn(format!("{ty}::{}", f.sig.ident), &f.sig, &f.block);
        } else {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'a syn::TraitItem) {
        let attrs: &[Attribute] = match item {
            syn::TraitItem::Const(c) => &c.attrs,
            syn::TraitItem::Fn(f) => &f.attrs,
            syn::TraitItem::Type(t) => &t.attrs,
            syn::TraitItem::Macro(m) => &m.attrs,
            _ => &[],
        };
        if self.rdb_item(attrs, item.span(), Ok(false)) {
            return;
        }
        match item {
            syn::TraitItem::Fn(f) if f.default.is_some() => {
                let tr = self.impl_ctx.last().cloned().unwrap_or_default();
                let body = f.default.as_ref().expect("checked above");
                self.enter_fn(format!("{tr}::{}", f.sig.ident), &f.sig, body);
            }
            other => visit::visit_trait_item(self, other),
        }
    }

    fn visit_block(&mut self, block: &'a Block) {
        if self.region.is_some() {
            self.region.as_mut().expect("checked").scopes.push(Vec::new());
            visit::visit_block(self, block);
            self.region.as_mut().expect("checked").scopes.pop();
        } else {
            self.block_with_regions(block);
        }
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.region.is_some() {
            if let Some((kind, mac)) = stmt_marker(stmt) {
                let start = self.range(mac.span()).start;
                if self.model.placed_markers.contains(&start) {
                    return; // already reported by the enclosing block
                }
                self.model.placed_markers.push(start);
                let what = if kind == Marker::Begin { "rdb_begin" } else { "rdb_end" };
                self.finding(stmt.span(), Finding::NestedMarker { marker: what });
                return;
            }
        }
        visit::visit_stmt(self, stmt);
    }

    fn visit_local(&mut self, local: &'a syn::Local) {
        for a in &local.attrs {
            self.visit_attribute(a);
        }
        if let Some(init) = &local.init {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
        }
        let mut names = Vec::new();
        pat_names(&local.pat, &mut names);
        match self.region.as_mut() {
            Some(ctx) => ctx.scopes.last_mut().expect("region scope").extend(names),
            None => {
                let end = self.range(local.span()).end;
                let depth = self.scopes.len();
                self.bindings.extend(names.iter().map(|n| (n.clone(), end, depth)));
                if let Some(s) = self.scopes.last_mut() {
                    s.extend(names)
                }
            }
        }
    }

    fn visit_expr_closure(&mut self, c: &'a syn::ExprClosure) {
        let mut names = Vec::new();
        for p in &c.inputs {
            pat_names(p, &mut names);
        }
        if let Some(ctx) = self.region.as_mut() {
            ctx.scopes.push(names);
            ctx.closure_depth += 1;
            let saved = std::mem::replace(&mut ctx.loop_depth, 0);
            self.visit_expr(&c.body);
            let ctx = self.region.as_mut().expect("still in region");
            ctx.loop_depth = saved;
            ctx.closure_depth -= 1;
            ctx.scopes.pop();
        } else {
            let start = self.range(c.span()).start;
            let used = used_names(|v| v.visit_expr(&c.body));
            if let syn::Expr::Block(b) = &*c.body {
                self.body_blocks.insert(&b.block as *const Block as usize);
            }
            self.enter_body(NestKind::Closure, start, names, used, |w| w.visit_expr(&c.body));
        }
    }

    fn visit_expr_async(&mut self, a: &'a syn::ExprAsync) {
        if let Some(ctx) = self.region.as_mut() {
            ctx.closure_depth += 1;
            visit::visit_expr_async(self, a);
            self.region.as_mut().expect("still in region").closure_depth -= 1;
        } else {
            let start = self.range(a.async_token.span).start;
            let used = used_names(|v| v.visit_block(&a.block));
            self.body_blocks.insert(&a.block as *const Block as usize);
            self.enter_body(NestKind::AsyncBlock, start, Vec::new(), used, |w| w.visit_block(&a.block));
        }
    }

    fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        let mut names = Vec::new();
        pat_names(&f.pat, &mut names);
        let (start, awaits) = (self.range(f.for_token.span).start, self.first_await(|v| v.visit_block(&f.body)));
        let bound = self.range(f.body.brace_token.span.open()).start;
        self.scoped_loop((start, bound), awaits, names, f.label.as_ref(), |w| w.visit_block(&f.body));
    }

    fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
        let mut names = Vec::new();
        let_names(&w.cond, &mut names);
        self.visit_expr(&w.cond);
        let start = self.range(w.while_token.span).start;
        let awaits = self.first_await(|v| {
            v.visit_expr(&w.cond);
            v.visit_block(&w.body)
        });
        let bound = self.range(w.body.brace_token.span.open()).start;
        self.scoped_loop((start, bound), awaits, names, w.label.as_ref(), |s| s.visit_block(&w.body));
    }

    fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
        let (start, awaits) = (self.range(l.loop_token.span).start, self.first_await(|v| v.visit_block(&l.body)));
        self.scoped_loop((start, start), awaits, Vec::new(), l.label.as_ref(), |s| s.visit_block(&l.body));
    }

    fn visit_expr_block(&mut self, b: &'a syn::ExprBlock) {
        match (&b.label, self.region.as_mut()) {
            (Some(label), Some(ctx)) => {
                ctx.labels.push(label.name.ident.to_string());
                self.visit_block(&b.block);
                self.region.as_mut().expect("still in region").labels.pop();
            }
            _ => self.visit_block(&b.block),
        }
    }

    fn visit_expr_if(&mut self, e: &'a syn::ExprIf) {
        let mut names = Vec::new();
        let_names(&e.cond, &mut names);
        self.visit_expr(&e.cond);
        let bound = self.range(e.then_branch.brace_token.span.open()).start;
        self.with_scope(names, bound, |w| w.visit_block(&e.then_branch));
        if let Some((_, els)) = &e.else_branch {
            self.visit_expr(els);
        }
    }

    fn visit_arm(&mut self, arm: &'a syn::Arm) {
        let mut names = Vec::new();
        pat_names(&arm.pat, &mut names);
        let bound = self.range(arm.fat_arrow_token.span()).start;
        self.with_scope(names, bound, |w| {
            // syn 3 keeps a match guard inside the pattern (`Pat::Guard`).
            if let Pat::Guard(g) = &arm.pat {
                w.visit_expr(&g.guard);
            }
            w.visit_expr(&arm.body);
        });
    }

    fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
        if self.region.as_ref().is_some_and(|c| c.closure_depth == 0) {
            self.exit_error(r.span(), "return");
        }
        visit::visit_expr_return(self, r);
    }

    fn visit_expr_try(&mut self, t: &'a syn::ExprTry) {
        if self.region.as_ref().is_some_and(|c| c.closure_depth == 0) {
            self.exit_error(t.question_token.span, "?");
        }
        visit::visit_expr_try(self, t);
    }

    fn visit_expr_await(&mut self, a: &'a syn::ExprAwait) {
        if self.region.as_ref().is_some_and(|c| c.closure_depth == 0) {
            self.exit_error(a.await_token.span, ".await");
        }
        visit::visit_expr_await(self, a);
        if self.region.is_none() {
            let at = self.range(a.await_token.span).start;
            self.awaits.push((at, self.bodies.last().map(|b| b.start)));
        }
    }

    fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
        if let Some(ctx) = &self.region {
            let leaves = match &b.label {
                Some(l) => !ctx.labels.contains(&l.ident.to_string()),
                None => ctx.loop_depth == 0,
            };
            if leaves && ctx.closure_depth == 0 {
                self.exit_error(b.span(), "break");
            }
        }
        visit::visit_expr_break(self, b);
    }

    fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
        if let Some(ctx) = &self.region {
            let leaves = match &c.label {
                Some(l) => !ctx.labels.contains(&l.ident.to_string()),
                None => ctx.loop_depth == 0,
            };
            if leaves && ctx.closure_depth == 0 {
                self.exit_error(c.span(), "continue");
            }
        }
        visit::visit_expr_continue(self, c);
    }

    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        if self.region.is_some() {
            if let Some(var) = self.written_variable(&a.left) {
                self.write_error(a.span(), &var, "assignment to a program variable");
            }
        }
        visit::visit_expr_assign(self, a);
    }

    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        use syn::BinOp::*;
        let compound = matches!(
            b.op,
            AddAssign(_)
                | SubAssign(_)
                | MulAssign(_)
                | DivAssign(_)
                | RemAssign(_)
                | BitXorAssign(_)
                | BitAndAssign(_)
                | BitOrAssign(_)
                | ShlAssign(_)
                | ShrAssign(_)
        );
        if compound && self.region.is_some() {
            if let Some(var) = self.written_variable(&b.left) {
                self.write_error(b.span(), &var, "compound assignment to a program variable");
            }
        }
        visit::visit_expr_binary(self, b);
    }

    fn visit_expr_reference(&mut self, r: &'a syn::ExprReference) {
        if r.mutability.is_some() && self.region.is_some() {
            if let Some(var) = self.written_variable(&r.expr) {
                self.write_error(r.span(), &var, "mutable borrow of a program variable");
            }
        }
        visit::visit_expr_reference(self, r);
    }

    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        if self.region.is_some() && MUTATING_METHODS.contains(&m.method.to_string().as_str()) {
            if let Some(var) = self.written_variable(&m.receiver) {
                let what = format!("`{}` modifies its receiver", m.method);
                self.write_error(m.span(), &var, &what);
            }
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        if self.region.is_some() {
            if let Some(segs) = Self::expr_path_segs(&Expr::Path(p.clone())) {
                if let Resolved::Arg(a) = self.resolve(&segs, p.span()) {
                    let param = self.region.as_ref().expect("in region").args[a].param.clone();
                    let r = self.range(p.span());
                    self.push_edit(r, format!("(*{param})"));
                }
                return;
            }
        }
        visit::visit_expr_path(self, p);
    }

    fn visit_field_value(&mut self, fv: &'a syn::FieldValue) {
        if self.region.is_some() && fv.colon_token.is_none() {
            if let (syn::Member::Named(name), Some(segs)) = (&fv.member, Self::expr_path_segs(&fv.expr)) {
                if let Resolved::Arg(a) = self.resolve(&segs, fv.expr.span()) {
                    let param = self.region.as_ref().expect("in region").args[a].param.clone();
                    let r = self.range(fv.expr.span());
                    self.push_edit(r, format!("{name}: (*{param})"));
                }
                return;
            }
        }
        visit::visit_field_value(self, fv);
    }

    fn visit_macro(&mut self, mac: &'a Macro) {
        if self.region.is_some() && marker_of(mac).is_none() {
            if is_check(mac) {
                // The debug module has no rdb_macros: its check is rdb_region's.
                let start = self.range(mac.span()).start;
                self.model.placed_checks.push(start);
                let r = self.range(mac.path.span());
                self.push_edit(r, "::rdb_region::rdb_check".into());
            }
            self.region_macro_tokens(mac.tokens.clone());
        }
        if self.region.is_none() && tokens_await(mac.tokens.clone()) {
            let at = self.range(mac.span()).start;
            self.awaits.push((at, self.bodies.last().map(|b| b.start)));
        }
        visit::visit_macro(self, mac);
    }
}

impl<'a> FileWalk<'a> {
    /// Walks `f` in a scope binding `names` (pattern bindings, in effect
    /// from offset `bound`).
    fn with_scope(&mut self, names: Vec<String>, bound: usize, f: impl FnOnce(&mut Self)) {
        match self.region.as_mut() {
            Some(ctx) => ctx.scopes.push(names),
            None => {
                let depth = self.scopes.len() + 1;
                self.bindings.extend(names.iter().map(|n| (n.clone(), bound, depth)));
                self.scopes.push(names);
            }
        }
        f(self);
        match self.region.as_mut() {
            Some(ctx) => {
                ctx.scopes.pop();
            }
            None => self.pop_scope(),
        }
    }

    /// The first `.await` (or macro whose input holds one, as in
    /// `tokio::select!`) that `walk` visits and that suspends the body the
    /// walk is in: nested closures, `async` blocks and items are left out.
    fn first_await(&self, walk: impl FnOnce(&mut Awaits)) -> Option<usize> {
        let mut v = Awaits(Vec::new());
        walk(&mut v);
        v.0.into_iter().map(|span| self.range(span).start).min()
    }

    /// Closes the innermost program scope and the bindings made in it.
    fn pop_scope(&mut self) {
        self.scopes.pop();
        let depth = self.scopes.len();
        self.bindings.retain(|(_, _, d)| *d <= depth);
        self.shared.retain(|s| s.depth <= depth);
    }

    /// Rewrites the calls of regions that share debug-only locals: a region
    /// whose `let`s later regions use returns them and keeps them per call
    /// (its function's frame address as argument 0); a region using them
    /// receives the earlier region's.
    fn finish_sharing(&mut self) {
        let mut used: HashMap<u32, Vec<String>> = HashMap::new();
        for &from in self.calls.iter().flat_map(|c| &c.from) {
            let lets = self.calls.iter().find(|c| c.id == from).map(|c| c.lets.clone()).unwrap_or_default();
            used.entry(from).or_default().extend(lets);
        }
        for call in &self.calls {
            let exports: Vec<String> = match used.get(&call.id) {
                Some(_) => call.lets.clone(),
                None => Vec::new(),
            };
            if exports.is_empty() && call.from.is_empty() {
                continue;
            }
            let imports: Vec<(u32, Vec<String>)> = call
                .from
                .iter()
                .map(|&f| (f, self.calls.iter().find(|c| c.id == f).map(|c| c.lets.clone()).unwrap_or_default()))
                .collect();
            let (open, close) = rewrite::sharing_call(call.id, &call.args, &exports, &imports);
            self.model.debug_edits[call.open].with = open;
            self.model.debug_edits[call.close].with = close;
            let found = &mut self.model.regions[call.region];
            let frame = RegionArgument {
                name: "(frame)".into(),
                kind: ArgumentKind::Frame,
                static_path: None,
                after_await: None,
                written_after: Vec::new(),
                unchanged: false,
                unwritten_before: false,
            };
            found.region.arguments.insert(0, frame);
            found.region.shares_from = call.from.clone();
            found.written.insert(0, Vec::new());
        }
    }

    /// A loop starting at `start.0` whose pattern binds `names` from
    /// `start.1` on (each iteration) and whose body's first `.await` is at
    /// `awaits`.
    fn scoped_loop(
        &mut self,
        start: (usize, usize),
        awaits: Option<usize>,
        names: Vec<String>,
        label: Option<&syn::Label>,
        f: impl FnOnce(&mut Self),
    ) {
        if self.region.is_none() {
            self.loops.push((start.0, awaits));
        }
        if let Some(ctx) = self.region.as_mut() {
            ctx.loop_depth += 1;
            if let Some(l) = label {
                ctx.labels.push(l.name.ident.to_string());
            }
        }
        self.with_scope(names, start.1, f);
        if self.region.is_none() {
            self.loops.pop();
        }
        if let Some(ctx) = self.region.as_mut() {
            ctx.loop_depth -= 1;
            if label.is_some() {
                ctx.labels.pop();
            }
        }
    }
}
/// Variables a walk may change, with where: assigned (or a field or
/// element of them), borrowed mutably, or the receiver of a method call
/// (which may take `&mut self`). Region statements count too: they are
/// skipped by the caller.
struct Writes(Vec<(String, Span)>);

impl Writes {
    /// The places a destructuring assignment (`(a, b) = ..`, `[a, b] = ..`,
    /// `S { x, .. } = ..`, `T(a, b) = ..`) writes.
    fn assigned(&mut self, left: &Expr) {
        match left {
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.assigned(e)),
            Expr::Array(a) => a.elems.iter().for_each(|e| self.assigned(e)),
            Expr::Struct(s) => s.fields.iter().for_each(|f| self.assigned(&f.expr)),
            Expr::Call(c) => c.args.iter().for_each(|e| self.assigned(e)),
            Expr::Paren(p) => self.assigned(&p.expr),
            _ => self.place(left),
        }
    }

    fn place(&mut self, place: &Expr) {
        let mut e = place;
        loop {
            e = match e {
                Expr::Field(f) => &f.base,
                Expr::Index(i) => &i.expr,
                Expr::Paren(p) => &p.expr,
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &u.expr,
                Expr::MethodCall(m) => &m.receiver,
                _ => break,
            }
        }
        if let Expr::Path(p) = e {
            if p.qself.is_none() && p.path.segments.len() == 1 {
                self.0.push((p.path.segments[0].ident.to_string(), p.span()));
            }
        }
    }
}

impl<'ast> Visit<'ast> for Writes {
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.assigned(&a.left);
        visit::visit_expr_assign(self, a);
    }
    fn visit_expr_raw_addr(&mut self, r: &'ast syn::ExprRawAddr) {
        if matches!(r.mutability, syn::PointerMutability::Mut(_)) {
            self.place(&r.expr);
        }
        visit::visit_expr_raw_addr(self, r);
    }
    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        use syn::BinOp::*;
        if matches!(
            b.op,
            AddAssign(_)
                | SubAssign(_)
                | MulAssign(_)
                | DivAssign(_)
                | RemAssign(_)
                | BitXorAssign(_)
                | BitAndAssign(_)
                | BitOrAssign(_)
                | ShlAssign(_)
                | ShrAssign(_)
        ) {
            self.place(&b.left);
        }
        visit::visit_expr_binary(self, b);
    }
    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.place(&r.expr);
        }
        visit::visit_expr_reference(self, r);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        self.place(&m.receiver);
        visit::visit_expr_method_call(self, m);
    }
    fn visit_macro(&mut self, m: &'ast Macro) {
        // Macro input is not parsed: `name` followed by an assignment or a
        // method call, or after `&mut`, is taken as a write.
        let tokens: Vec<TokenTree> = m.tokens.clone().into_iter().collect();
        self.tokens(&tokens);
    }
}

impl Writes {
    fn tokens(&mut self, tokens: &[TokenTree]) {
        for (i, tt) in tokens.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => self.tokens(&g.stream().into_iter().collect::<Vec<_>>()),
                TokenTree::Ident(id) => {
                    // `&mut name`.
                    let borrowed = i >= 2
                        && matches!(&tokens[i - 1], TokenTree::Ident(m) if m == "mut")
                        && matches!(&tokens[i - 2], TokenTree::Punct(p) if p.as_char() == '&');
                    let next = tokens.get(i + 1);
                    let written = match next {
                        Some(TokenTree::Punct(p)) => {
                            let joint_eq = matches!(tokens.get(i + 2), Some(TokenTree::Punct(q)) if q.as_char() == '=');
                            p.as_char() == '.'
                                || (p.as_char() == '=' && !joint_eq)
                                || ("+-*/%^&|".contains(p.as_char()) && joint_eq)
                        }
                        _ => false,
                    };
                    if written || borrowed {
                        self.0.push((id.to_string(), id.span()));
                    }
                }
                _ => {}
            }
        }
    }
}

/// Where a walk meets `.await`s of the body it starts in.
struct Awaits(Vec<Span>);

impl<'ast> Visit<'ast> for Awaits {
    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        visit::visit_expr_await(self, a);
        self.0.push(a.await_token.span);
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast Item) {}
    fn visit_macro(&mut self, m: &'ast Macro) {
        if tokens_await(m.tokens.clone()) {
            self.0.push(m.span());
        }
    }
}

/// Whether a macro's input holds `.await` (`tokio::select!`, `join!`).
fn tokens_await(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Group(g) => tokens_await(g.stream()),
        TokenTree::Ident(id) => id == "await",
        _ => false,
    })
}

/// The names the program's own code uses in a closure or `async` body
/// (region statements left out): paths of one segment, identifiers in macro
/// input and `{name}` captures of format strings. A superset of what the
/// body captures is fine (rustc then has captured it or it is not a local).
fn used_names(walk: impl FnOnce(&mut UsedNames)) -> HashSet<String> {
    let mut v = UsedNames(HashSet::new());
    walk(&mut v);
    v.0
}

struct UsedNames(HashSet<String>);

impl UsedNames {
    fn tokens(&mut self, tokens: TokenStream) {
        for tt in tokens {
            match tt {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) => {
                    self.0.insert(id.to_string());
                }
                TokenTree::Literal(lit) => self.0.extend(format_captures(&lit.to_string())),
                TokenTree::Punct(_) => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for UsedNames {
    fn visit_block(&mut self, block: &'ast Block) {
        let mut in_region = false;
        for stmt in &block.stmts {
            match stmt_marker(stmt) {
                Some((Marker::Begin, _)) => in_region = true,
                Some((Marker::End, _)) => in_region = false,
                None if !in_region => self.visit_stmt(stmt),
                None => {}
            }
        }
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if p.qself.is_none() && p.path.segments.len() == 1 {
            self.0.insert(p.path.segments[0].ident.to_string());
        }
        visit::visit_expr_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast Macro) {
        if marker_of(m).is_none() {
            self.tokens(m.tokens.clone());
        }
    }
}
