//! Validation: what the walk found that makes a region malformed, turned
//! into rustc-style diagnostics. Every message text of the extractor lives
//! here.

use crate::diag::Diagnostic;
use crate::text::LineIndex;
use crate::SourceInput;
use std::ops::Range;
use std::sync::Arc;

/// Methods of std types that write through `&mut self`; calling one on a
/// program variable inside a region is reported before rustc does.
pub(crate) const MUTATING_METHODS: &[&str] = &[
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

/// Something wrong found in a file, with the byte range it points at.
#[derive(Debug, Clone)]
pub(crate) enum Finding {
    /// `rdb_begin!()` while a region of the same block is open.
    NestedBegin {
        outer: Range<usize>,
    },
    /// A marker statement inside a region's statements.
    NestedMarker {
        marker: &'static str,
    },
    UnmatchedEnd,
    Unclosed,
    OutsideFunction,
    /// Control leaves the region (`return`, `?`, `break`, `continue`, `.await`).
    Exit {
        what: &'static str,
    },
    /// Debug code writes a program variable.
    Write {
        var: String,
        what: String,
        local: bool,
    },
    MixedUse,
    MarkerInMacro {
        marker: &'static str,
    },
    MisplacedMarker {
        marker: &'static str,
    },
    /// `rdb_check!` outside a region.
    CheckOutsideRegion,
    /// `{name}` in a format string names a program variable the debug module renames.
    FormatCapture {
        name: String,
    },
    /// A region in a closure (or `async` block) reads a variable of the
    /// enclosing function that only debug code uses: the program's closure
    /// does not capture it, so no copy of it exists where the region runs.
    Uncaptured {
        name: String,
        closure: Range<usize>,
    },
    /// A debug-only local of an earlier region, used in another function
    /// body (a closure or `async` body is a call of its own).
    SharedInOtherBody {
        name: String,
        region: u32,
    },
    Parse {
        message: String,
    },
    /// A callback attribute on something other than a free function.
    CallbackNotFunction {
        attribute: String,
    },
    /// A callback declared inside a region.
    CallbackInRegion,
    /// A callback without `#[debug_only]`.
    CallbackNotDebugOnly {
        function: String,
    },
    /// A callback signature rdb cannot call (generic, `async`, ...).
    CallbackSignature {
        attribute: String,
    },
    /// The attribute's arguments do not parse.
    CallbackArguments {
        message: String,
    },
    UnknownSyscall {
        name: String,
        suggestion: Option<String>,
    },
    /// `before`/`after` is not the last argument of `on_syscall`.
    WhenNotLast,
    /// `on_syscall` names no system call.
    NoSyscall,
    /// `on_call`/`on_return` is not given a path or a symbol name.
    CallTarget {
        attribute: String,
    },
    /// `on_write`/`on_read` is not given a path to a static.
    AccessTarget {
        attribute: String,
    },
}

impl Finding {
    fn text(&self) -> (String, String, Option<String>) {
        let s = |x: &str| x.to_string();
        match self {
            Finding::NestedBegin { .. } => (
                s("debug regions cannot be nested"),
                s("this `rdb_begin!()` opens a region inside another one"),
                Some(s("close the first region with `rdb_end!();` before opening the next")),
            ),
            Finding::NestedMarker { marker } => (
                s("debug regions cannot be nested"),
                format!("`{marker}!()` inside a region"),
                Some(s("a region's markers must be statements of the same block, and regions cannot contain regions")),
            ),
            Finding::UnmatchedEnd => (
                s("`rdb_end!()` without a matching `rdb_begin!()` in the same block"),
                s("no region is open here"),
                Some(s("a region is `rdb_begin!();` ... `rdb_end!();` as two statements of the same block")),
            ),
            Finding::Unclosed => (
                s("`rdb_begin!()` has no matching `rdb_end!()` in the same block"),
                s("this region is never closed"),
                Some(s("add `rdb_end!();` later in the same block (markers in different blocks do not pair up)")),
            ),
            Finding::OutsideFunction => (
                s("debug region outside a function body"),
                s("regions run at a place in a function"),
                Some(s("move the region into the body of a function or method")),
            ),
            Finding::Exit { what } => (
                format!("`{what}` leaves the debug region"),
                s("control must reach `rdb_end!()`"),
                Some(s("a region has one entry and one exit: it cannot return, use `?`, `break`/`continue` out of it, or `.await`")),
            ),
            Finding::Write { var, what, local } => (
                format!("debug code must not modify program variable `{var}`"),
                what.clone(),
                Some(if *local {
                    format!("debug code may only read the program's state; work on a debug-only copy: `let mut {var} = {var}.clone();`")
                } else {
                    s("debug code may only read the program's state; work on a debug-only copy of what you need (`let mut copy = ....clone();`)")
                }),
            ),
            Finding::MixedUse => (
                s("this `use` mixes `rdb_macros` with other imports"),
                s("cannot be removed from the main build without rewriting it"),
                Some(s("import from `rdb_macros` in a `use` item of its own")),
            ),
            Finding::MarkerInMacro { marker } => (
                format!("`{marker}!()` inside another macro's input is not supported"),
                s("rdb cannot see where this runs: the surrounding macro is expanded by rustc"),
                Some(s("move the region out of the macro invocation (e.g. into a function the macro's items call)")),
            ),
            Finding::MisplacedMarker { marker } => (
                format!("`{marker}!()` must be a statement of a function body"),
                s("markers are only recognised as statements"),
                Some(s("write `rdb_begin!();` and `rdb_end!();` as two statements of one block inside a function (not in expressions, items or `#[debug_only]` code)")),
            ),
            Finding::CheckOutsideRegion => (
                s("`rdb_check!()` must be inside a region"),
                s("a check runs where its region runs, for `rdb find`"),
                Some(s("put it between `rdb_begin!();` and `rdb_end!();`")),
            ),
            Finding::FormatCapture { name } => (
                format!("`{{{name}}}` in a format string cannot read program variable `{name}` here"),
                s("inline format arguments are resolved by name in the debug module"),
                Some(format!("pass it explicitly: `\"{{}}\", {name}`")),
            ),
            Finding::Uncaptured { name, .. } => (
                format!("`{name}` is not captured by the closure this region is in"),
                s("only debug code uses it here, so the program's closure holds no copy of it"),
                Some(format!("read `{name}` in a region outside the closure, or in one where the program's own code uses it")),
            ),
            Finding::SharedInOtherBody { name, region } => (
                format!("`{name}` is a debug-only local of another function body"),
                format!("region {region} declares it outside the closure or `async` body this region is in, which runs as a call of its own"),
                Some(s("share debug-only locals between regions of the same body, or keep the value in a `#[debug_only]` static")),
            ),
            Finding::Parse { message } => (
                format!("cannot parse this file: {message}"),
                s("rustc would reject this too"),
                Some(s("fix the syntax error (`cargo build` shows it with more detail)")),
            ),
            Finding::CallbackNotFunction { attribute } => (
                format!("`{attribute}` must be put on a free function"),
                s("not a function rdb can call"),
                Some(s("write the callback as a `#[debug_only]` function at module level (not a method or another item)")),
            ),
            Finding::CallbackInRegion => (
                s("event callbacks cannot be declared inside a debug region"),
                s("declared inside a region"),
                Some(s("move the callback out of the region, to module level")),
            ),
            Finding::CallbackNotDebugOnly { function } => (
                format!("event callback `{function}` must be `#[debug_only]`"),
                s("without `#[debug_only]` the callback would be compiled into the program"),
                Some(s("add `#[debug_only]` (from `rdb_macros`) above the callback attribute")),
            ),
            Finding::CallbackSignature { attribute } => (
                format!("`{attribute}` callbacks cannot be generic, `async`, `const` or `extern`"),
                s("rdb calls the callback as a plain Rust function"),
                Some(s("write a plain `fn` (it may call generic or async helpers)")),
            ),
            Finding::CallbackArguments { message } => (
                format!("malformed callback attribute: {message}"),
                s("cannot read this"),
                Some(s("write `#[rdb_macros::on_syscall(write, after)]`: one or more system call names, then optionally `before` or `after`")),
            ),
            Finding::UnknownSyscall { name, suggestion } => (
                format!("`{name}` is not an x86-64 system call"),
                s("unknown system call"),
                Some(match suggestion {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => s("use the kernel's name of the call (`write`, `openat`, `recvfrom`, ...), as `strace` shows it"),
                }),
            ),
            Finding::WhenNotLast => (
                s("`before` / `after` must come last"),
                s("not a system call"),
                Some(s("write the system call names first: `on_syscall(read, write, before)`")),
            ),
            Finding::CallTarget { attribute } => (
                format!("`{attribute}` needs the function it watches"),
                s("expected a path to a function of the program, or a symbol name in quotes"),
                Some(format!("write `#[rdb_macros::{attribute}(crate::vm::Vm::push)]` for a function of the program, or `#[rdb_macros::{attribute}(\"malloc\")]` for a symbol of a shared library")),
            ),
            Finding::AccessTarget { attribute } => (
                format!("`{attribute}` needs the static it watches"),
                s("expected a path to a static of the program"),
                Some(format!("write `#[rdb_macros::{attribute}(crate::bank::AUDITED)]`; to watch other memory, call `rdb::watch(&value)` from a region")),
            ),
            Finding::NoSyscall => (
                s("`on_syscall` needs at least one system call name"),
                s("no system call named"),
                Some(s("write `#[rdb_macros::on_syscall(write)]` (or several: `on_syscall(read, write, after)`)")),
            ),
        }
    }

    fn note(&self) -> Option<(Range<usize>, String)> {
        match self {
            Finding::NestedBegin { outer } => Some((outer.clone(), "the enclosing region starts here".into())),
            Finding::Uncaptured { closure, .. } => Some((closure.clone(), "the closure starts here".into())),
            _ => None,
        }
    }
}

/// The diagnostic for `finding` at `range` of `input`.
pub(crate) fn diagnostic(input: &SourceInput, source: &Arc<str>, range: Range<usize>, finding: &Finding) -> Diagnostic {
    let idx = LineIndex::new(source);
    let (line, column) = idx.line_col(range.start);
    let (message, label, help) = finding.text();
    Diagnostic {
        message,
        file: input.path.clone(),
        range,
        line,
        column,
        label,
        note: finding.note(),
        help,
        source: source.clone(),
    }
}
