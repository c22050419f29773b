//! Syntax-level facts about a parsed file: the markers, rdb items
//! (`#[debug_only]`, `use rdb_macros`), the names patterns bind, the statics
//! a crate declares, format-string captures. No checking, no rewriting.

use crate::SourceInput;
use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Attribute, Expr, Item, Macro, Pat, Stmt};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Marker {
    Begin,
    End,
}

pub(crate) fn marker_of(mac: &Macro) -> Option<Marker> {
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

/// `rdb_check!(..)` (a region's check for `rdb find`).
pub(crate) fn is_check(mac: &Macro) -> bool {
    let segs: Vec<String> = mac.path.segments.iter().map(|s| s.ident.to_string()).collect();
    matches!(segs.as_slice(), [n] if n == "rdb_check")
        || matches!(segs.as_slice(), [k, n] if k == "rdb_macros" && n == "rdb_check")
}

pub(crate) fn stmt_marker(stmt: &Stmt) -> Option<(Marker, &Macro)> {
    match stmt {
        Stmt::Macro(m) => marker_of(&m.mac).map(|k| (k, &m.mac)),
        Stmt::Expr(Expr::Macro(m), Some(_)) => marker_of(&m.mac).map(|k| (k, &m.mac)),
        _ => None,
    }
}

pub(crate) fn is_debug_only(attrs: &[Attribute]) -> Option<&Attribute> {
    attrs.iter().find(|a| {
        let segs: Vec<String> = a.path().segments.iter().map(|s| s.ident.to_string()).collect();
        matches!(segs.as_slice(), [n] if n == "debug_only")
            || matches!(segs.as_slice(), [k, n] if k == "rdb_macros" && n == "debug_only")
    })
}

pub(crate) fn item_attrs(item: &Item) -> &[Attribute] {
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
pub(crate) fn is_rdb_macros_import(item: &Item) -> Result<bool, ()> {
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
pub(crate) fn pat_names(pat: &Pat, out: &mut Vec<String>) {
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

/// Every identifier that follows the keyword `mut` in `tokens` (groups
/// included): the names of `mut` bindings and `mut self`. `&mut x` (and
/// `&'a mut self`) is left out: a mutable borrow of a local needs a `mut`
/// binding of it, found where it is declared; the receiver `&mut self`
/// binds `self` immutably.
pub(crate) fn mut_names(tokens: proc_macro2::TokenStream, out: &mut std::collections::HashSet<String>) {
    use proc_macro2::TokenTree;
    let mut after_mut = false;
    // The last tokens were `&` (and perhaps a lifetime after it).
    let mut borrow = false;
    let mut lifetime = false;
    for tree in tokens {
        match tree {
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                if after_mut {
                    out.insert(name.strip_prefix("r#").unwrap_or(&name).to_string());
                }
                after_mut = name == "mut" && !borrow;
                borrow = borrow && lifetime;
                lifetime = false;
            }
            TokenTree::Punct(p) => {
                after_mut = false;
                lifetime = p.as_char() == '\'' && borrow;
                borrow = p.as_char() == '&' || lifetime;
            }
            TokenTree::Group(group) => {
                mut_names(group.stream(), out);
                (after_mut, borrow, lifetime) = (false, false, false);
            }
            TokenTree::Literal(_) => (after_mut, borrow, lifetime) = (false, false, false),
        }
    }
}

#[cfg(test)]
mod mut_names_tests {
    #[test]
    fn mut_bindings_not_mut_borrows() {
        let tokens: proc_macro2::TokenStream =
            "fn f<'a>(&'a mut self, mut a: u8, b: &mut u8, c: u8) { let mut d = 1; let e = &mut d; println!(\"{}\", { let mut g = 2; g }); let (mut h, i) = (1, 2); }"
                .parse()
                .unwrap();
        let mut out = std::collections::HashSet::new();
        super::mut_names(tokens, &mut out);
        let mut names: Vec<_> = out.into_iter().collect();
        names.sort();
        assert_eq!(names, ["a", "d", "g", "h"]);
    }
}

/// Names bound by the `let` conditions of an `if`/`while` condition.
pub(crate) fn let_names(cond: &Expr, out: &mut Vec<String>) {
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

/// A program static: its module path inside the crate, and whether it is `static mut`.
#[derive(Clone, Debug)]
pub(crate) struct StaticDef {
    pub(crate) module: Vec<String>,
    pub(crate) mutable: bool,
    pub(crate) crate_name: String,
}

/// Statics of the crate by name (several when different modules declare one).
pub(crate) type Statics = HashMap<String, Vec<StaticDef>>;

pub(crate) fn collect_statics(file: &syn::File, input: &SourceInput, statics: &mut Statics) {
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

/// The `{name}` / `{name:fmt}` captures of a format string literal.
pub(crate) fn format_captures(lit: &str) -> Vec<String> {
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

/// Every `rdb_check!` of the file (those outside regions are reported).
pub(crate) fn all_checks(file: &syn::File) -> Vec<Span> {
    struct V(Vec<Span>);
    impl<'ast> Visit<'ast> for V {
        fn visit_macro(&mut self, m: &'ast Macro) {
            if is_check(m) {
                self.0.push(m.span());
            }
            visit::visit_macro(self, m);
        }
    }
    let mut v = V(Vec::new());
    v.visit_file(file);
    v.0
}

/// Every marker macro anywhere in the file (to report misplaced ones), and
/// the markers hidden in other macros' input (`cfg_if! { ... }`), which
/// syntax alone cannot place.
/// Marker macros with where they are.
pub(crate) type Markers = Vec<(Marker, Span)>;

pub(crate) fn all_markers(file: &syn::File) -> (Markers, Markers) {
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
pub(crate) fn parse(text: &str) -> syn::Result<syn::File> {
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
pub(crate) fn declares_static(text: &str) -> bool {
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
