//! The syntax walk: finds regions and rdb items, checks them, computes each
//! region's arguments and produces both rewritten texts.

use crate::diag::{Diagnostic, Diagnostics};
use crate::text::{self, Edit, LineIndex};
use crate::{ArgumentKind, ExtractedFile, Extraction, LineCol, Region, RegionArgument, SourceInput};
use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Attribute, Block, Expr, Item, Macro, Pat, Stmt};

/// Methods of std types that write through `&mut self`; calling one on a
/// program variable inside a region is reported before rustc does.
const MUTATING_METHODS: &[&str] = &[
    "push",
    "push_str",
    "push_back",
    "push_front",
    "pop",
    "pop_back",
    "pop_front",
    "insert",
    "remove",
    "clear",
    "truncate",
    "extend",
    "sort",
    "sort_by",
    "sort_by_key",
    "sort_unstable",
    "reverse",
    "swap",
    "drain",
    "retain",
    "dedup",
    "append",
    "split_off",
    "resize",
    "fill",
    "get_mut",
    "iter_mut",
    "as_mut",
    "entry",
    "set",
    "replace",
    "take",
    "store",
    "fetch_add",
    "fetch_sub",
    "swap_remove",
    "borrow_mut",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Marker {
    Begin,
    End,
}

fn marker_of(mac: &Macro) -> Option<Marker> {
    let segs: Vec<String> = mac.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let name = match segs.as_slice() {
        [n] => n,
        [k, n] if k == "rdb_macros" => n,
        _ => return None,
    };
    match name.as_str() {
        "rdb_begin" => Some(Marker::Begin),
        "rdb_end" => Some(Marker::End),
        _ => None,
    }
}

fn stmt_marker(stmt: &Stmt) -> Option<(Marker, &Macro)> {
    match stmt {
        Stmt::Macro(m) => marker_of(&m.mac).map(|k| (k, &m.mac)),
        Stmt::Expr(Expr::Macro(m), Some(_)) => marker_of(&m.mac).map(|k| (k, &m.mac)),
        _ => None,
    }
}

fn is_debug_only(attrs: &[Attribute]) -> Option<&Attribute> {
    attrs.iter().find(|a| {
        let segs: Vec<String> = a.path().segments.iter().map(|s| s.ident.to_string()).collect();
        matches!(segs.as_slice(), [n] if n == "debug_only")
            || matches!(segs.as_slice(), [k, n] if k == "rdb_macros" && n == "debug_only")
    })
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `use rdb_macros::...;` or `extern crate rdb_macros;`. `Err` when the use
/// tree mixes rdb_macros with other imports.
fn is_rdb_macros_import(item: &Item) -> Result<bool, ()> {
    fn root_is(tree: &syn::UseTree) -> Option<bool> {
        match tree {
            syn::UseTree::Path(p) => Some(p.ident == "rdb_macros"),
            syn::UseTree::Name(n) => Some(n.ident == "rdb_macros"),
            syn::UseTree::Rename(r) => Some(r.ident == "rdb_macros"),
            syn::UseTree::Glob(_) => Some(false),
            syn::UseTree::Group(g) => {
                let roots: Vec<Option<bool>> = g.items.iter().map(root_is).collect();
                if roots.iter().all(|r| *r == Some(true)) {
                    Some(true)
                } else if roots.iter().all(|r| *r == Some(false)) {
                    Some(false)
                } else {
                    None
                }
            }
        }
    }
    match item {
        Item::Use(u) => root_is(&u.tree).ok_or(()),
        Item::ExternCrate(e) => Ok(e.ident == "rdb_macros"),
        _ => Ok(false),
    }
}

/// Every identifier a pattern binds.
fn pat_names(pat: &Pat, out: &mut Vec<String>) {
    struct V<'o>(&'o mut Vec<String>);
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.to_string());
            visit::visit_pat_ident(self, p);
        }
        fn visit_expr(&mut self, _: &'ast Expr) {}
    }
    V(out).visit_pat(pat);
}

/// Names bound by the `let` conditions of an `if`/`while` condition.
fn let_names(cond: &Expr, out: &mut Vec<String>) {
    match cond {
        Expr::Let(l) => pat_names(&l.pat, out),
        Expr::Binary(b) => {
            let_names(&b.left, out);
            let_names(&b.right, out);
        }
        Expr::Paren(p) => let_names(&p.expr, out),
        _ => {}
    }
}

fn has_type_generics(g: &syn::Generics) -> bool {
    g.params.iter().any(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
}

fn sig_is_generic(sig: &syn::Signature) -> bool {
    has_type_generics(&sig.generics)
        || sig.inputs.iter().any(|a| match a {
            syn::FnArg::Typed(t) => {
                let mut found = false;
                struct V<'f>(&'f mut bool);
                impl<'ast> Visit<'ast> for V<'_> {
                    fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
                        *self.0 = true;
                    }
                }
                V(&mut found).visit_type(&t.ty);
                found
            }
            _ => false,
        })
}

/// A program static: its module path inside the crate, and whether it is `static mut`.
#[derive(Clone, Debug)]
struct StaticDef {
    module: Vec<String>,
    mutable: bool,
    crate_name: String,
}

/// Statics of the crate by name (several when different modules declare one).
type Statics = HashMap<String, Vec<StaticDef>>;

fn collect_statics(file: &syn::File, input: &SourceInput, statics: &mut Statics) {
    fn walk_items(items: &[Item], module: &mut Vec<String>, crate_name: &str, statics: &mut Statics) {
        for item in items {
            if is_debug_only(item_attrs(item)).is_some() {
                continue;
            }
            match item {
                Item::Static(s) => statics.entry(s.ident.to_string()).or_default().push(StaticDef {
                    module: module.clone(),
                    mutable: matches!(s.mutability, syn::StaticMutability::Mut(_)),
                    crate_name: crate_name.to_string(),
                }),
                Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        module.push(m.ident.to_string());
                        walk_items(inner, module, crate_name, statics);
                        module.pop();
                    }
                }
                _ => {}
            }
        }
    }
    let mut module = input.module_path.clone();
    walk_items(&file.items, &mut module, &input.crate_name, statics);
}

struct FnCtx {
    name: String,
    generic: bool,
    is_async: bool,
}

/// How a region reaches one program variable.
#[derive(Clone, Debug)]
struct Arg {
    name: String,
    kind: ArgumentKind,
    static_path: Option<String>,
    /// Expression building the reference in the debug module's call.
    reference: String,
    /// The closure parameter holding that reference.
    param: String,
}

struct RegionCtx {
    /// Locals of the enclosing function visible at `rdb_begin!()`.
    outer: Vec<String>,
    /// Names bound inside the region (innermost scope last).
    scopes: Vec<Vec<String>>,
    loop_depth: usize,
    closure_depth: usize,
    labels: Vec<String>,
    args: Vec<Arg>,
    edits: Vec<Edit>,
}

enum Resolved {
    RegionLocal,
    Arg(usize),
    Unknown,
}

struct FileWalk<'a> {
    input: &'a SourceInput,
    source: Arc<str>,
    idx: LineIndex<'a>,
    statics: &'a Statics,
    module: Vec<String>,
    impl_ctx: Vec<(String, bool)>,
    fns: Vec<FnCtx>,
    scopes: Vec<Vec<String>>,
    closure_depth: usize,
    async_depth: usize,
    region: Option<RegionCtx>,
    /// Start offsets of markers that are statements of a well-formed or
    /// diagnosed region (any other marker is misplaced).
    placed_markers: Vec<usize>,
    /// Removed from the main text (before widening).
    removals: Vec<Range<usize>>,
    debug_edits: Vec<Edit>,
    regions: Vec<(Region, usize)>,
    diags: Vec<Diagnostic>,
    next_id: u32,
}

impl<'a> FileWalk<'a> {
    fn range(&self, span: Span) -> Range<usize> {
        self.idx.offset(span.start())..self.idx.offset(span.end())
    }

    fn error(&mut self, span: Span, message: impl Into<String>, label: impl Into<String>, help: Option<&str>) {
        self.error_with_note(span, message, label, None, help)
    }

    fn error_with_note(
        &mut self,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
        note: Option<(Span, &str)>,
        help: Option<&str>,
    ) {
        let range = self.range(span);
        let (line, column) = self.idx.line_col(range.start);
        let note = note.map(|(s, l)| (self.range(s), l.to_string()));
        self.diags.push(Diagnostic {
            message: message.into(),
            file: self.input.path.clone(),
            range,
            line,
            column,
            label: label.into(),
            note,
            help: help.map(str::to_string),
            source: self.source.clone(),
        });
    }

    fn line_col(&self, offset: usize) -> LineCol {
        let (line, column) = self.idx.line_col(offset);
        LineCol { line, column }
    }

    /// Handles an rdb item (`#[debug_only]` or an rdb_macros import);
    /// returns true when the item was one.
    fn rdb_item(&mut self, attrs: &[Attribute], item_span: Span, is_import: Result<bool, ()>) -> bool {
        match is_import {
            Ok(true) => {
                let r = self.range(item_span);
                if self.region.is_none() {
                    self.removals.push(r.clone());
                }
                let blank = text::newlines_of(&self.source[r.clone()]);
                self.debug_edits.push(Edit { range: r, with: blank });
                return true;
            }
            Err(()) => {
                self.error(
                    item_span,
                    "this `use` mixes `rdb_macros` with other imports",
                    "cannot be removed from the main build without rewriting it",
                    Some("import from `rdb_macros` in a `use` item of its own"),
                );
                return true;
            }
            Ok(false) => {}
        }
        let Some(attr) = is_debug_only(attrs) else { return false };
        let r = self.range(item_span);
        if self.region.is_none() {
            self.removals.push(r.clone());
        }
        let ar = self.range(attr.span());
        self.debug_edits.push(Edit { range: ar, with: "#[allow(dead_code, unused)]".into() });
        true
    }

    fn enter_fn(&mut self, name: String, sig: &syn::Signature, block: &'a Block, generic_outer: bool) {
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
        let saved_closure = std::mem::replace(&mut self.closure_depth, 0);
        let saved_async = std::mem::replace(&mut self.async_depth, 0);
        self.fns.push(FnCtx { name, generic: generic_outer || sig_is_generic(sig), is_async: sig.asyncness.is_some() });
        self.visit_block(block);
        self.fns.pop();
        self.scopes = saved_scopes;
        self.closure_depth = saved_closure;
        self.async_depth = saved_async;
    }

    fn block_with_regions(&mut self, block: &'a Block) {
        self.scopes.push(Vec::new());
        let mut open: Option<(usize, &'a Macro)> = None;
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt_marker(stmt) {
                Some((Marker::Begin, mac)) => {
                    self.placed_markers.push(self.range(mac.span()).start);
                    if let Some((_, outer)) = open {
                        self.error_with_note(
                            stmt.span(),
                            "debug regions cannot be nested",
                            "this `rdb_begin!()` opens a region inside another one",
                            Some((outer.span(), "the enclosing region starts here")),
                            Some("close the first region with `rdb_end!();` before opening the next"),
                        );
                    } else {
                        open = Some((i, mac));
                    }
                }
                Some((Marker::End, mac)) => {
                    self.placed_markers.push(self.range(mac.span()).start);
                    match open.take() {
                        Some((b, _)) => self.region(block, b, i),
                        None => self.error(
                            stmt.span(),
                            "`rdb_end!()` without a matching `rdb_begin!()` in the same block",
                            "no region is open here",
                            Some("a region is `rdb_begin!();` ... `rdb_end!();` as two statements of the same block"),
                        ),
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
            self.error(
                mac.span(),
                "`rdb_begin!()` has no matching `rdb_end!()` in the same block",
                "this region is never closed",
                Some("add `rdb_end!();` later in the same block (markers in different blocks do not pair up)"),
            );
        }
        self.scopes.pop();
    }

    /// The region made of `block.stmts[b..=e]` (markers at both ends).
    fn region(&mut self, block: &'a Block, b: usize, e: usize) {
        let begin_span = block.stmts[b].span();
        let end_span = block.stmts[e].span();
        let Some(fctx) = self.fns.last() else {
            self.error(
                begin_span,
                "debug region outside a function body",
                "regions run at a place in a function",
                Some("move the region into the body of a function or method"),
            );
            return;
        };
        let (fname, generic, is_async) = (fctx.name.clone(), fctx.generic, fctx.is_async);
        if self.closure_depth > 0 {
            self.error(
                begin_span,
                "debug regions inside closures are not supported yet",
                "this region is in a closure body",
                Some("move the region to the enclosing function body, next to the closure's call site"),
            );
            return;
        }
        if is_async || self.async_depth > 0 {
            self.error(
                begin_span,
                "debug regions in `async` code are not supported yet",
                "this region is in an async function or block",
                Some("move the region into a synchronous function called from here"),
            );
            return;
        }
        if generic {
            self.error(
                begin_span,
                format!("debug regions in generic functions are not supported yet (`{fname}` has type parameters)"),
                "this region is in a generic function",
                Some("move the region into a non-generic function, or make the enclosing function non-generic"),
            );
            return;
        }
        let mut outer: Vec<String> = self.scopes.iter().flatten().cloned().collect();
        outer.sort();
        outer.dedup();
        self.region = Some(RegionCtx {
            outer,
            scopes: vec![Vec::new()],
            loop_depth: 0,
            closure_depth: 0,
            labels: Vec::new(),
            args: Vec::new(),
            edits: Vec::new(),
        });
        for stmt in &block.stmts[b + 1..e] {
            self.visit_stmt(stmt);
        }
        let ctx = self.region.take().expect("region context set above");
        let id = self.next_id;
        self.next_id += 1;

        let begin_range = self.range(begin_span);
        let end_range = self.range(end_span);
        self.removals.push(begin_range.start..end_range.end);
        // Anchor: the next statement that stays in the main build.
        let mut anchor = None;
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
                    break;
                }
            }
        }
        let ends_block = anchor.is_none();
        let anchor = anchor.unwrap_or_else(|| self.idx.offset(block.brace_token.span.close().start()));

        let refs: Vec<&str> = ctx.args.iter().map(|a| a.reference.as_str()).collect();
        let params: Vec<&str> = ctx.args.iter().map(|a| a.param.as_str()).collect();
        let tuple = |v: &[&str]| if v.is_empty() { "()".to_string() } else { format!("({},)", v.join(", ")) };
        self.debug_edits.push(Edit {
            range: begin_range.clone(),
            with: format!("::rdb_region::region::<{id}, _, _>({}, move |{}| {{", tuple(&refs), tuple(&params)),
        });
        self.debug_edits.extend(ctx.edits);
        self.debug_edits.push(Edit { range: end_range.clone(), with: "});".into() });
        let region = Region {
            id,
            file: self.input.path.clone(),
            begin: self.line_col(begin_range.start),
            end: self.line_col(end_range.start),
            anchor: LineCol { line: 0, column: 0 },
            function: fname,
            ends_block,
            arguments: ctx
                .args
                .into_iter()
                .map(|a| RegionArgument { name: a.name, kind: a.kind, static_path: a.static_path })
                .collect(),
        };
        self.regions.push((region, anchor));
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

    /// Resolves a name or path used inside the region.
    fn resolve(&mut self, segs: &[String]) -> Resolved {
        let ctx = self.region.as_ref().expect("only called inside a region");
        if segs.len() == 1 {
            let name = &segs[0];
            if ctx.scopes.iter().any(|s| s.contains(name)) {
                return Resolved::RegionLocal;
            }
            if ctx.outer.contains(name) {
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
        ctx.args.push(Arg { name, kind, static_path, reference, param });
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
        match self.resolve(&segs) {
            Resolved::Arg(i) => Some(self.region.as_ref()?.args[i].name.clone()),
            _ => None,
        }
    }

    fn write_error(&mut self, span: Span, var: &str, what: &str) {
        let is_local = self.region.as_ref().is_some_and(|c| c.outer.iter().any(|o| o == var)) && var != "self";
        let help = if is_local {
            format!("debug code may only read the program's state; work on a debug-only copy: `let mut {var} = {var}.clone();`")
        } else {
            "debug code may only read the program's state; work on a debug-only copy of what you need (`let mut copy = ....clone();`)".to_string()
        };
        self.error(span, format!("debug code must not modify program variable `{var}`"), what.to_string(), Some(&help));
    }

    fn exit_error(&mut self, span: Span, what: &str) {
        self.error(
            span,
            format!("`{what}` leaves the debug region"),
            "control must reach `rdb_end!()`",
            Some("a region has one entry and one exit: it cannot return, use `?`, `break`/`continue` out of it, or `.await`"),
        );
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
                            if let Resolved::Arg(a) = self.resolve(&segs) {
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
                    if let Resolved::Arg(a) = self.resolve(std::slice::from_ref(&name)) {
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
                        if let Resolved::Arg(a) = self.resolve(std::slice::from_ref(&name)) {
                            let arg = self.region.as_ref().expect("in region").args[a].clone();
                            if arg.param != arg.name {
                                self.error(
                                    lit.span(),
                                    format!(
                                        "`{{{name}}}` in a format string cannot read program variable `{name}` here"
                                    ),
                                    "inline format arguments are resolved by name in the debug module",
                                    Some(&format!("pass it explicitly: `\"{{}}\", {name}`")),
                                );
                            }
                        }
                    }
                }
                TokenTree::Punct(_) => {}
            }
        }
    }
}

/// The `{name}` / `{name:fmt}` captures of a format string literal.
fn format_captures(lit: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = lit.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '{' {
            if chars.get(i + 1) == Some(&'{') {
                i += 2;
                continue;
            }
            let mut j = i + 1;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let name: String = chars[i + 1..j].iter().collect();
            if !name.is_empty()
                && !name.chars().next().is_some_and(|c| c.is_ascii_digit())
                && matches!(chars.get(j), Some('}') | Some(':'))
            {
                out.push(name);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

impl<'a> Visit<'a> for FileWalk<'a> {
    fn visit_item(&mut self, item: &'a Item) {
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
                self.enter_fn(name, &f.sig, &f.block, false);
            }
            Item::Impl(i) => {
                let ty = match &*i.self_ty {
                    syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
                    other => quote::ToTokens::to_token_stream(other).to_string(),
                };
                self.impl_ctx.push((ty, has_type_generics(&i.generics)));
                visit::visit_item_impl(self, i);
                self.impl_ctx.pop();
            }
            Item::Trait(t) => {
                self.impl_ctx.push((t.ident.to_string(), true));
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
        if self.rdb_item(attrs, item.span(), Ok(false)) {
            return;
        }
        if let syn::ImplItem::Fn(f) = item {
            let (ty, generic) = self.impl_ctx.last().cloned().unwrap_or_default();
            self.enter_fn(format!("{ty}::{}", f.sig.ident), &f.sig, &f.block, generic);
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
                let (tr, _) = self.impl_ctx.last().cloned().unwrap_or_default();
                let body = f.default.as_ref().expect("checked above");
                self.enter_fn(format!("{tr}::{}", f.sig.ident), &f.sig, body, true);
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
                if self.placed_markers.contains(&start) {
                    return; // already reported by the enclosing block
                }
                self.placed_markers.push(start);
                let what = if kind == Marker::Begin { "rdb_begin" } else { "rdb_end" };
                self.error(
                    stmt.span(),
                    "debug regions cannot be nested",
                    format!("`{what}!()` inside a region"),
                    Some("a region's markers must be statements of the same block, and regions cannot contain regions"),
                );
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
            self.scopes.push(names);
            self.closure_depth += 1;
            self.visit_expr(&c.body);
            self.closure_depth -= 1;
            self.scopes.pop();
        }
    }

    fn visit_expr_async(&mut self, a: &'a syn::ExprAsync) {
        if let Some(ctx) = self.region.as_mut() {
            ctx.closure_depth += 1;
            visit::visit_expr_async(self, a);
            self.region.as_mut().expect("still in region").closure_depth -= 1;
        } else {
            self.async_depth += 1;
            visit::visit_expr_async(self, a);
            self.async_depth -= 1;
        }
    }

    fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        let mut names = Vec::new();
        pat_names(&f.pat, &mut names);
        self.scoped_loop(names, f.label.as_ref(), |w| w.visit_block(&f.body));
    }

    fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
        let mut names = Vec::new();
        let_names(&w.cond, &mut names);
        self.visit_expr(&w.cond);
        self.scoped_loop(names, w.label.as_ref(), |s| s.visit_block(&w.body));
    }

    fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
        self.scoped_loop(Vec::new(), l.label.as_ref(), |s| s.visit_block(&l.body));
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
        self.with_scope(names, |w| w.visit_block(&e.then_branch));
        if let Some((_, els)) = &e.else_branch {
            self.visit_expr(els);
        }
    }

    fn visit_arm(&mut self, arm: &'a syn::Arm) {
        let mut names = Vec::new();
        pat_names(&arm.pat, &mut names);
        self.with_scope(names, |w| {
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
                if let Resolved::Arg(a) = self.resolve(&segs) {
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
                if let Resolved::Arg(a) = self.resolve(&segs) {
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
            self.region_macro_tokens(mac.tokens.clone());
        }
        visit::visit_macro(self, mac);
    }
}

impl<'a> FileWalk<'a> {
    fn with_scope(&mut self, names: Vec<String>, f: impl FnOnce(&mut Self)) {
        match self.region.as_mut() {
            Some(ctx) => ctx.scopes.push(names),
            None => self.scopes.push(names),
        }
        f(self);
        match self.region.as_mut() {
            Some(ctx) => {
                ctx.scopes.pop();
            }
            None => {
                self.scopes.pop();
            }
        }
    }

    fn scoped_loop(&mut self, names: Vec<String>, label: Option<&syn::Label>, f: impl FnOnce(&mut Self)) {
        if let Some(ctx) = self.region.as_mut() {
            ctx.loop_depth += 1;
            if let Some(l) = label {
                ctx.labels.push(l.name.ident.to_string());
            }
        }
        self.with_scope(names, f);
        if let Some(ctx) = self.region.as_mut() {
            ctx.loop_depth -= 1;
            if label.is_some() {
                ctx.labels.pop();
            }
        }
    }
}

/// Every marker macro anywhere in the file (to report misplaced ones), and
/// the markers hidden in other macros' input (`cfg_if! { ... }`), which
/// syntax alone cannot place.
/// Marker macros with where they are.
type Markers = Vec<(Marker, Span)>;

fn all_markers(file: &syn::File) -> (Markers, Markers) {
    fn in_tokens(tokens: TokenStream, out: &mut Vec<(Marker, Span)>) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in trees.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => in_tokens(g.stream(), out),
                TokenTree::Ident(id) if matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!') => {
                    if id == "rdb_begin" {
                        out.push((Marker::Begin, id.span()));
                    } else if id == "rdb_end" {
                        out.push((Marker::End, id.span()));
                    }
                }
                _ => {}
            }
        }
    }
    struct V(Vec<(Marker, Span)>, Vec<(Marker, Span)>);
    impl<'ast> Visit<'ast> for V {
        fn visit_macro(&mut self, m: &'ast Macro) {
            match marker_of(m) {
                Some(k) => self.0.push((k, m.span())),
                None => in_tokens(m.tokens.clone(), &mut self.1),
            }
            visit::visit_macro(self, m);
        }
    }
    let mut v = V(Vec::new(), Vec::new());
    v.visit_file(file);
    (v.0, v.1)
}

/// Parses a file's text, keeping every character where it is (a BOM or
/// shebang line is blanked out, not removed, so spans stay valid).
fn parse(text: &str) -> syn::Result<syn::File> {
    let mut t = text.to_string();
    if t.starts_with('\u{feff}') {
        t.replace_range(0..3, " ");
    }
    if t.starts_with("#!") && !t[2..].trim_start().starts_with('[') {
        t.replace_range(0..2, "//");
    }
    syn::parse_str(&t)
}

/// Whether a file may declare a static item (a cheap line scan that keeps
/// files mentioning only `'static` lifetimes from being parsed).
fn declares_static(text: &str) -> bool {
    text.lines().any(|l| {
        let mut t = l.trim_start();
        if let Some(rest) = t.strip_prefix("pub") {
            t = rest.trim_start();
            if t.starts_with('(') {
                t = t.split_once(')').map_or("", |(_, r)| r).trim_start();
            }
        }
        t.starts_with("static ")
    })
}

pub(crate) fn extract(files: &[SourceInput], first_id: u32) -> Result<Extraction, Diagnostics> {
    let mut diags = Vec::new();
    let mut parsed = Vec::new();
    let mut statics = Statics::new();
    for input in files {
        // Files without markers need no parse: nothing to strip or rewrite.
        let relevant = input.text.contains("rdb_") || input.text.contains("debug_only");
        if !relevant {
            parsed.push(None);
            continue;
        }
        match parse(&input.text) {
            Ok(f) => {
                collect_statics(&f, input, &mut statics);
                parsed.push(Some(f));
            }
            Err(e) => {
                let source: Arc<str> = Arc::from(input.text.as_str());
                let idx = LineIndex::new(&input.text);
                let start = idx.offset(e.span().start());
                let end = idx.offset(e.span().end()).max(start);
                let (line, column) = idx.line_col(start);
                diags.push(Diagnostic {
                    message: format!("cannot parse this file: {e}"),
                    file: input.path.clone(),
                    range: start..end,
                    line,
                    column,
                    label: "rustc would reject this too".into(),
                    note: None,
                    help: Some("fix the syntax error (`cargo build` shows it with more detail)".into()),
                    source,
                });
                parsed.push(None);
            }
        }
    }
    // Files without markers may still declare statics regions use.
    for (input, p) in files.iter().zip(&parsed) {
        if p.is_none() && declares_static(&input.text) {
            if let Ok(f) = parse(&input.text) {
                collect_statics(&f, input, &mut statics);
            }
        }
    }
    let mut next_id = first_id;
    let mut out_files = Vec::new();
    let mut regions = Vec::new();
    for (input, p) in files.iter().zip(&parsed) {
        let Some(file) = p else {
            out_files.push(ExtractedFile {
                path: input.path.clone(),
                stripped: input.text.clone(),
                debug: input.text.clone(),
                instrumented: false,
            });
            continue;
        };
        let source: Arc<str> = Arc::from(input.text.as_str());
        let mut w = FileWalk {
            input,
            source,
            idx: LineIndex::new(&input.text),
            statics: &statics,
            module: input.module_path.clone(),
            impl_ctx: Vec::new(),
            fns: Vec::new(),
            scopes: Vec::new(),
            closure_depth: 0,
            async_depth: 0,
            region: None,
            placed_markers: Vec::new(),
            removals: Vec::new(),
            debug_edits: Vec::new(),
            regions: Vec::new(),
            diags: Vec::new(),
            next_id,
        };
        w.visit_file(file);
        let (markers, hidden) = all_markers(file);
        for (kind, span) in hidden {
            let name = if kind == Marker::Begin { "rdb_begin" } else { "rdb_end" };
            w.error(
                span,
                format!("`{name}!()` inside another macro's input is not supported"),
                "rdb cannot see where this runs: the surrounding macro is expanded by rustc",
                Some("move the region out of the macro invocation (e.g. into a function the macro's items call)"),
            );
        }
        for (kind, span) in markers {
            let start = w.range(span).start;
            if !w.placed_markers.contains(&start) {
                let name = if kind == Marker::Begin { "rdb_begin" } else { "rdb_end" };
                w.error(
                    span,
                    format!("`{name}!()` must be a statement of a function body"),
                    "markers are only recognised as statements",
                    Some("write `rdb_begin!();` and `rdb_end!();` as two statements of one block inside a function (not in expressions, items or `#[debug_only]` code)"),
                );
            }
        }
        next_id = w.next_id;
        diags.append(&mut w.diags);

        let widened = w.removals.iter().map(|r| text::removal_range(&input.text, r.clone())).collect();
        let merged = text::merge_removals(&input.text, widened);
        let strip_edits: Vec<Edit> = merged.into_iter().map(|range| Edit { range, with: String::new() }).collect();
        let stripped = text::apply(&input.text, strip_edits.clone());
        let debug = text::apply(&input.text, std::mem::take(&mut w.debug_edits));
        let stripped_idx = LineIndex::new(&stripped);
        for (mut region, anchor) in std::mem::take(&mut w.regions) {
            let (line, column) = stripped_idx.line_col(text::map_offset(&strip_edits, anchor));
            region.anchor = LineCol { line, column };
            regions.push(region);
        }
        out_files.push(ExtractedFile {
            path: input.path.clone(),
            instrumented: stripped != input.text,
            stripped,
            debug,
        });
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    regions.sort_by_key(|r| r.id);
    Ok(Extraction { files: out_files, regions })
}
