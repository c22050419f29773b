//! Event callbacks: `#[debug_only]` functions with an `on_syscall` (or other event) attribute.
//!
//! The walk hands every item to [`item`]; a callback becomes a [`Draft`] (or findings when it is
//! malformed). Once a file's regions are numbered, [`finish`] gives each draft its id and the
//! debug-text edits: the attribute is blanked (the debug crate has no `rdb_macros`), and right
//! after the function, on the same line (so line numbers stay), a never-called function names
//! the callback through `rdb_region`'s registration, which emits its entry in the callback table
//! and makes rustc check the callback's signature (see the `rdb-region` crate docs).

use crate::text::{self, Edit, LineIndex};
use crate::valid::Finding;
use crate::{CallTarget, Callback, CallbackKind, LineCol, SourceInput, When};
use proc_macro2::Span;
use std::ops::Range;
use syn::spanned::Spanned;
use syn::{Attribute, Item};

/// The attribute names of event callbacks (under `rdb_macros::` or imported).
const ATTRIBUTES: [&str; 6] = ["on_syscall", "on_call", "on_return", "on_write", "on_read", "watched"];

/// A callback found by the walk, waiting for its id.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    /// The attribute's byte range (blanked in the debug text).
    attr: Range<usize>,
    at: LineCol,
    function: String,
    params: usize,
    module: Vec<String>,
    kind: CallbackKind,
}

/// The callback attribute among `attrs`, with its name.
fn callback_attribute(attrs: &[Attribute]) -> Option<(&Attribute, String)> {
    attrs.iter().find_map(|a| {
        let segs: Vec<String> = a.path().segments.iter().map(|s| s.ident.to_string()).collect();
        let name = match segs.as_slice() {
            [n] => n,
            [k, n] if k == "rdb_macros" => n,
            _ => return None,
        };
        ATTRIBUTES.contains(&name.as_str()).then(|| (a, name.clone()))
    })
}

/// Whether an impl or trait item carries a callback attribute (an error: callbacks are free
/// functions); returns the attribute's span and name.
pub(crate) fn misplaced(attrs: &[Attribute]) -> Option<(Span, String)> {
    callback_attribute(attrs).map(|(a, name)| (a.span(), name))
}

/// What the walk knows where it meets an item.
pub(crate) struct Place<'a> {
    pub(crate) crate_name: &'a str,
    pub(crate) idx: &'a LineIndex<'a>,
    pub(crate) module: &'a [String],
    pub(crate) in_region: bool,
}

impl Place<'_> {
    fn range(&self, span: Span) -> Range<usize> {
        self.idx.offset(span.start())..self.idx.offset(span.end())
    }
}

/// What is wrong with a callback item, each with the byte range it points at.
pub(crate) type Findings = Vec<(Range<usize>, Finding)>;

/// A callback item: its draft, or what is wrong with it. `None` for other items.
pub(crate) fn item(place: &Place<'_>, item: &Item) -> Option<Result<Draft, Findings>> {
    let attrs = crate::syntax::item_attrs(item);
    let (attr, name) = callback_attribute(attrs)?;
    let attr_range = place.range(attr.span());
    let mut findings = Vec::new();
    let Item::Fn(f) = item else {
        return Some(Err(vec![(attr_range, Finding::CallbackNotFunction { attribute: name })]));
    };
    if place.in_region {
        return Some(Err(vec![(attr_range, Finding::CallbackInRegion)]));
    }
    if crate::syntax::is_debug_only(attrs).is_none() {
        findings.push((attr_range.clone(), Finding::CallbackNotDebugOnly { function: f.sig.ident.to_string() }));
    }
    if let Some(span) = unsupported_signature(&f.sig) {
        findings.push((place.range(span), Finding::CallbackSignature { attribute: name.clone() }));
    }
    let kind = match name.as_str() {
        "on_syscall" => syscall_kind(place, attr, &mut findings),
        "on_call" | "on_return" => call_kind(place, attr, &name, &mut findings),
        "on_write" | "on_read" | "watched" => access_kind(place, attr, &name, &mut findings),
        _ => unreachable!("ATTRIBUTES lists the kinds"),
    };
    if !findings.is_empty() {
        return Some(Err(findings));
    }
    let (line, column) = place.idx.line_col(attr_range.start);
    Some(Ok(Draft {
        attr: attr_range,
        at: LineCol { line, column },
        function: f.sig.ident.to_string(),
        params: f.sig.inputs.len(),
        module: place.module.to_vec(),
        kind: kind?,
    }))
}

/// A part of a callback's signature rdb cannot call: generics, `async`, `const`, `extern`,
/// variadics.
fn unsupported_signature(sig: &syn::Signature) -> Option<Span> {
    if let Some(g) = sig.generics.params.first() {
        return Some(g.span());
    }
    if let Some(a) = &sig.asyncness {
        return Some(a.span());
    }
    if let Some(c) = &sig.constness {
        return Some(c.span());
    }
    if let Some(abi) = &sig.abi {
        return Some(abi.span());
    }
    sig.variadic.as_ref().map(|v| v.span())
}

/// `on_syscall(name, ..., before | after)`.
fn syscall_kind(
    place: &Place<'_>,
    attr: &Attribute,
    findings: &mut Vec<(Range<usize>, Finding)>,
) -> Option<CallbackKind> {
    let parsed = attr.parse_args_with(syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated);
    let idents: Vec<syn::Ident> = match parsed {
        Ok(p) => p.into_iter().collect(),
        Err(e) => {
            findings.push((place.range(e.span()), Finding::CallbackArguments { message: e.to_string() }));
            return None;
        }
    };
    let mut when = When::After;
    let mut names = Vec::new();
    for (i, ident) in idents.iter().enumerate() {
        let text = ident.to_string();
        match text.as_str() {
            "before" | "after" if i + 1 == idents.len() => {
                when = if text == "before" { When::Before } else { When::After };
            }
            "before" | "after" => findings.push((place.range(ident.span()), Finding::WhenNotLast)),
            _ => match text.parse::<syscalls::Sysno>() {
                Ok(nr) => names.push((text, nr.id() as u64)),
                Err(_) => findings.push((
                    place.range(ident.span()),
                    Finding::UnknownSyscall { name: text.clone(), suggestion: closest_syscall(&text) },
                )),
            },
        }
    }
    if names.is_empty() && findings.is_empty() {
        findings.push((place.range(attr.span()), Finding::NoSyscall));
    }
    Some(CallbackKind::Syscall { names, when })
}

/// `on_call(path)`, `on_call("symbol")` (and `on_return`).
fn call_kind(
    place: &Place<'_>,
    attr: &Attribute,
    name: &str,
    findings: &mut Vec<(Range<usize>, Finding)>,
) -> Option<CallbackKind> {
    let returns = name == "on_return";
    let target = match attr.parse_args::<syn::Expr>() {
        Ok(syn::Expr::Path(p)) if p.qself.is_none() => {
            let segments: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let written = quote::ToTokens::to_token_stream(&p.path).to_string().replace(' ', "");
            let resolved = resolve_path(&segments, place);
            CallTarget::Path { written, resolved }
        }
        Ok(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) if !s.value().is_empty() => {
            CallTarget::Symbol(s.value())
        }
        Ok(other) => {
            findings.push((place.range(other.span()), Finding::CallTarget { attribute: name.to_string() }));
            return None;
        }
        Err(e) => {
            findings.push((place.range(e.span()), Finding::CallTarget { attribute: name.to_string() }));
            return None;
        }
    };
    Some(CallbackKind::Call { target, returns })
}

/// `on_write(path::to::STATIC)` (and `on_read`).
fn access_kind(
    place: &Place<'_>,
    attr: &Attribute,
    name: &str,
    findings: &mut Vec<(Range<usize>, Finding)>,
) -> Option<CallbackKind> {
    match attr.parse_args::<syn::Path>() {
        Ok(path) => {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let written = quote::ToTokens::to_token_stream(&path).to_string().replace(' ', "");
            let resolved = resolve_path(&segments, place);
            if name == "watched" {
                return Some(CallbackKind::Watched { written, resolved });
            }
            Some(CallbackKind::Access { written, resolved, reads: name == "on_read" })
        }
        Err(e) => {
            findings.push((place.range(e.span()), Finding::AccessTarget { attribute: name.to_string() }));
            None
        }
    }
}

/// A Rust path with `crate`, `self` and `super` resolved (`crate::vm::Vm::push` in crate
/// `events` is `events::vm::Vm::push`); relative paths stay as written.
fn resolve_path(segments: &[String], place: &Place<'_>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut rest = segments;
    match segments.first().map(String::as_str) {
        Some("crate") => {
            out.push(place.crate_name.to_string());
            rest = &segments[1..];
        }
        Some("self") => {
            out.push(place.crate_name.to_string());
            out.extend(place.module.iter().cloned());
            rest = &segments[1..];
        }
        Some("super") => {
            out.push(place.crate_name.to_string());
            let mut module = place.module.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                module.pop();
                rest = &rest[1..];
            }
            out.extend(module);
        }
        // `::other_crate::f` and relative paths: as written.
        _ => {}
    }
    out.extend(rest.iter().cloned());
    out.join("::")
}

/// The x86-64 syscall name closest to `name` (edit distance at most 2), for a hint.
fn closest_syscall(name: &str) -> Option<String> {
    syscalls::Sysno::iter()
        .map(|s| (distance(name, s.name()), s.name()))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n.to_string())
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Ids for `drafts` from `next_id` on, their debug-text edits, and the callbacks. The
/// attribute is replaced, on its own line, by the registration function (and the attributes
/// after it keep applying to the callback), so that rustc's complaints about a callback that
/// does not fit its event point at the attribute.
pub(crate) fn finish(input: &SourceInput, drafts: Vec<Draft>, next_id: &mut u32) -> (Vec<Edit>, Vec<Callback>) {
    let mut edits = Vec::new();
    let mut callbacks = Vec::new();
    for d in drafts {
        let id = *next_id;
        *next_id += 1;
        let f = &d.function;
        let registration = match &d.kind {
            CallbackKind::Syscall { .. } => format!("::rdb_region::on_syscall::<{id}, _, _>({f})"),
            CallbackKind::Call { target: CallTarget::Path { written, .. }, returns: false } => {
                format!("::rdb_region::on_call::<{id}, _, _, _, _>({written}, {f})")
            }
            CallbackKind::Call { target: CallTarget::Path { written, .. }, returns: true } => {
                format!("::rdb_region::on_return::<{id}, _, _, _, _>({written}, {f})")
            }
            CallbackKind::Call { target: CallTarget::Symbol(_), .. } => {
                format!("::rdb_region::on_symbol::<{id}, _, _>({f})")
            }
            CallbackKind::Watched { written, .. } => {
                format!("::rdb_region::watched::<{id}, _, _, _>(::core::ptr::addr_of!({written}), {f})")
            }
            CallbackKind::Access { written, .. } => {
                format!(
                    "const {{ ::rdb_region::access_fits(::core::ptr::addr_of!({written}), &{f}) }}; ::rdb_region::on_access::<{id}, _, _, _>(::core::ptr::addr_of!({written}), {f})"
                )
            }
        };
        let attr_text = &input.text[d.attr.clone()];
        edits.push(Edit {
            range: d.attr.clone(),
            with: format!(
                "#[allow(dead_code, non_snake_case)] fn __rdb_callback_{id}() {{ {registration}; }}{}",
                text::newlines_of(attr_text)
            ),
        });
        callbacks.push(Callback {
            id,
            file: input.path.clone(),
            at: d.at,
            function: d.function,
            params: d.params,
            module_path: d.module,
            crate_name: input.crate_name.clone(),
            kind: d.kind,
        });
    }
    (edits, callbacks)
}

/// `use rdb::...;`: an import of the debug-side API crate, removed from the main build (the
/// debug build keeps it).
pub(crate) fn is_api_import(item: &Item) -> bool {
    fn root_is_rdb(tree: &syn::UseTree) -> bool {
        match tree {
            syn::UseTree::Path(p) => p.ident == "rdb",
            syn::UseTree::Name(n) => n.ident == "rdb",
            syn::UseTree::Rename(r) => r.ident == "rdb",
            syn::UseTree::Glob(_) => false,
            syn::UseTree::Group(g) => !g.items.is_empty() && g.items.iter().all(root_is_rdb),
        }
    }
    match item {
        Item::Use(u) => root_is_rdb(&u.tree),
        Item::ExternCrate(e) => e.ident == "rdb",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_get_a_suggestion() {
        assert_eq!(closest_syscall("wirte").as_deref(), Some("write"));
        assert_eq!(closest_syscall("opneat").as_deref(), Some("openat"));
        assert_eq!(closest_syscall("frobnicate"), None);
    }
}
