//! Place expressions over a program's statics (`rdb find --expr`): `LIST.head->next->value`
//! (C), `STATE.items[3].count`, `(*HEAD).next`, `HEAD.next.value` (Rust), resolved with the
//! DWARF types into the steps that find the place at run time: constant offsets (fields,
//! array elements) and the pointer words read on the way (pointers, references, `Box`, an
//! `Option` of one, a slice's or `Vec`'s data pointer and length).

use crate::index::{DieRef, Index};
use crate::types::{type_name, type_size};

/// A place: from a static, the steps to the watched value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The static the expression starts from: its symbol and link-time address.
    pub symbol: String,
    pub address: u64,
    pub steps: Vec<PlaceStep>,
    /// The value's size and the DWARF's name of its type.
    pub size: u64,
    pub type_name: String,
}

/// One step from the place so far (an address) to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlaceStep {
    /// The address moves on by this many bytes (a field, an array element).
    Offset(u64),
    /// The 8-byte pointer word at the address is read and the place is where it points;
    /// 0 means there is no place (`none` says how the program calls it: `null`, `None`).
    /// `what`: the pointer's expression, as written.
    Deref { what: String, none: &'static str },
    /// The address holds a slice or a `Vec`: its data pointer word at `data`, its length
    /// word at `len` (offsets from the address); the place is element `index` (of `element`
    /// bytes), when the length holds it.
    Index { data: u64, len: u64, index: u64, element: u64, what: String },
}

/// Why an expression cannot be a place: the 1-based column where it goes wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceError {
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for PlaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Int(u64),
    Path,
    Dot,
    Arrow,
    Star,
    LBracket,
    RBracket,
    LParen,
    RParen,
    Other(char),
    End,
}

fn lex(expr: &str) -> Result<Vec<(Tok, usize)>, PlaceError> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let at = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c == b'_' || c.is_ascii_alphabetic() {
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push((Tok::Ident(expr[at..i].to_string()), at));
            continue;
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let text = expr[at..i].replace('_', "");
            let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            };
            let value = value.map_err(|_| PlaceError {
                column: at + 1,
                message: format!("`{}` is not an index rdb reads (a decimal or 0x number)", &expr[at..i]),
            })?;
            out.push((Tok::Int(value), at));
            continue;
        } else if expr[i..].starts_with("::") {
            i += 2;
            Tok::Path
        } else if expr[i..].starts_with("->") {
            i += 2;
            Tok::Arrow
        } else {
            i += 1;
            match c {
                b'.' => Tok::Dot,
                b'*' => Tok::Star,
                b'[' => Tok::LBracket,
                b']' => Tok::RBracket,
                b'(' => Tok::LParen,
                b')' => Tok::RParen,
                _ => {
                    let ch = expr[at..].chars().next().unwrap_or('?');
                    i = at + ch.len_utf8();
                    Tok::Other(ch)
                }
            }
        };
        out.push((tok, at));
    }
    out.push((Tok::End, expr.len()));
    Ok(out)
}

/// The expression as parsed; `span` is its text's byte range.
#[derive(Debug, Clone, PartialEq)]
enum Ast {
    Static { path: String, span: (usize, usize) },
    Field { base: Box<Ast>, name: String, arrow: bool, at: usize, span: (usize, usize) },
    Index { base: Box<Ast>, index: u64, at: usize, span: (usize, usize) },
    Deref { base: Box<Ast>, at: usize, span: (usize, usize) },
}

impl Ast {
    fn span(&self) -> (usize, usize) {
        match self {
            Ast::Static { span, .. } | Ast::Field { span, .. } | Ast::Index { span, .. } | Ast::Deref { span, .. } => {
                *span
            }
        }
    }
}

struct Parser<'e> {
    expr: &'e str,
    toks: Vec<(Tok, usize)>,
    at: usize,
}

const SUPPORTED: &str = "a place is a static, then fields (`.f`, C's `->f`), constant indices (`[3]`) and \
                         dereferences (`*p`)";

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].0
    }

    fn pos(&self) -> usize {
        self.toks[self.at].1
    }

    fn bump(&mut self) -> (Tok, usize) {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn unsupported(&self, what: &str) -> PlaceError {
        let at = self.pos();
        let rest = self.expr[at..].trim_end();
        let found = if rest.is_empty() { "the end".to_string() } else { format!("`{rest}`") };
        PlaceError { column: at + 1, message: format!("{what}, found {found} ({SUPPORTED})") }
    }

    fn unary(&mut self) -> Result<Ast, PlaceError> {
        if *self.peek() == Tok::Star {
            let (_, at) = self.bump();
            let base = self.unary()?;
            let end = base.span().1;
            return Ok(Ast::Deref { base: Box::new(base), at, span: (at, end) });
        }
        self.postfix()
    }

    fn primary(&mut self) -> Result<Ast, PlaceError> {
        let start = self.pos();
        match self.peek().clone() {
            Tok::LParen => {
                self.bump();
                let inner = self.unary()?;
                if *self.peek() != Tok::RParen {
                    return Err(self.unsupported("expected `)`"));
                }
                self.bump();
                // The parentheses are part of the text the pointer is named by.
                Ok(match inner {
                    Ast::Static { path, .. } => Ast::Static { path, span: (start, self.pos_end()) },
                    other => reparen(other, (start, self.pos_end())),
                })
            }
            Tok::Ident(_) | Tok::Path => {
                let mut path = String::new();
                if *self.peek() == Tok::Path {
                    self.bump();
                    path.push_str("::");
                }
                loop {
                    let Tok::Ident(s) = self.peek().clone() else {
                        return Err(self.unsupported("expected a name"));
                    };
                    self.bump();
                    path.push_str(&s);
                    if *self.peek() != Tok::Path {
                        break;
                    }
                    self.bump();
                    path.push_str("::");
                }
                if *self.peek() == Tok::LParen {
                    return Err(
                        self.unsupported("a function call is not a place: name a debug-only function with `fn NAME`")
                    );
                }
                Ok(Ast::Static { path, span: (start, self.pos_end()) })
            }
            _ => Err(self.unsupported("expected a static's name")),
        }
    }

    /// The end of the text consumed so far.
    fn pos_end(&self) -> usize {
        if self.at == 0 {
            return 0;
        }
        let (tok, at) = &self.toks[self.at - 1];
        at + match tok {
            Tok::Ident(s) => s.len(),
            Tok::Int(_) => {
                self.expr[*at..].find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(self.expr.len() - at)
            }
            Tok::Path | Tok::Arrow => 2,
            Tok::Other(c) => c.len_utf8(),
            Tok::End => 0,
            _ => 1,
        }
    }

    fn postfix(&mut self) -> Result<Ast, PlaceError> {
        let mut e = self.primary()?;
        loop {
            let start = e.span().0;
            match self.peek().clone() {
                Tok::Dot | Tok::Arrow => {
                    let (tok, _) = self.bump();
                    let at = self.pos();
                    let name = match self.peek().clone() {
                        Tok::Ident(s) => s,
                        Tok::Int(n) => n.to_string(),
                        _ => return Err(self.unsupported("expected a field name")),
                    };
                    self.bump();
                    if *self.peek() == Tok::LParen {
                        return Err(self.unsupported("a method call is not a place"));
                    }
                    e = Ast::Field {
                        base: Box::new(e),
                        name,
                        arrow: tok == Tok::Arrow,
                        at,
                        span: (start, self.pos_end()),
                    };
                }
                Tok::LBracket => {
                    self.bump();
                    let at = self.pos();
                    let index = match self.peek().clone() {
                        Tok::Int(n) => {
                            self.bump();
                            n
                        }
                        _ => return Err(self.unsupported("only constant indices are supported")),
                    };
                    if *self.peek() != Tok::RBracket {
                        return Err(self.unsupported("only constant indices are supported: expected `]`"));
                    }
                    self.bump();
                    e = Ast::Index { base: Box::new(e), index, at, span: (start, self.pos_end()) };
                }
                _ => return Ok(e),
            }
        }
    }
}

fn reparen(e: Ast, span: (usize, usize)) -> Ast {
    match e {
        Ast::Static { path, .. } => Ast::Static { path, span },
        Ast::Field { base, name, arrow, at, .. } => Ast::Field { base, name, arrow, at, span },
        Ast::Index { base, index, at, .. } => Ast::Index { base, index, at, span },
        Ast::Deref { base, at, .. } => Ast::Deref { base, at, span },
    }
}

fn parse(expr: &str) -> Result<Ast, PlaceError> {
    let mut p = Parser { expr, toks: lex(expr)?, at: 0 };
    let e = p.unary()?;
    if *p.peek() != Tok::End {
        return Err(p.unsupported("unsupported syntax"));
    }
    Ok(e)
}

/// Whether an expression is a static's path alone.
pub fn is_static_path(expr: &str) -> bool {
    matches!(parse(expr), Ok(Ast::Static { .. })) && !expr.contains('(')
}

const MAX_DEPTH: usize = 16;

/// The type through typedefs and qualifiers.
fn strip(index: &Index<'_>, mut r: Option<DieRef>) -> Result<Option<DieRef>, gimli::Error> {
    for _ in 0..MAX_DEPTH {
        let Some(t) = r else { return Ok(None) };
        match index.die(t)?.tag {
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => r = index.reference(t, gimli::DW_AT_type)?,
            _ => return Ok(Some(t)),
        }
    }
    Ok(r)
}

/// A structure's member: name, offset, type DIE, whether it is a bit-field.
type Member = (Option<String>, u64, Option<DieRef>, bool);

/// Finds a static by its path: its symbol, link-time address and variable DIE, or why not.
pub(crate) type Locate<'a> = dyn Fn(&str) -> Result<Result<(String, u64, DieRef), String>, gimli::Error> + 'a;

/// A structure's members.
fn members(index: &Index<'_>, r: DieRef) -> Result<Vec<Member>, gimli::Error> {
    let mut out = Vec::new();
    for child in index.children(r)? {
        if index.die(child)?.tag != gimli::DW_TAG_member {
            continue;
        }
        let bits = index.attr(child, gimli::DW_AT_bit_size)?.is_some();
        out.push((
            index.string(child, gimli::DW_AT_name)?,
            index.udata(child, gimli::DW_AT_data_member_location)?.unwrap_or(0),
            index.reference(child, gimli::DW_AT_type)?,
            bits,
        ));
    }
    Ok(out)
}

fn raw_name(index: &Index<'_>, r: DieRef) -> Result<String, gimli::Error> {
    Ok(index.string(r, gimli::DW_AT_name)?.unwrap_or_default())
}

fn is_rust(index: &Index<'_>, r: DieRef) -> bool {
    index.units[r.unit].language == Some(gimli::DW_LANG_Rust)
}

/// What a pointer-like value holds: the pointer word's offset in the value, the pointee type,
/// and how a 0 word is called.
struct PointerLike {
    offset: u64,
    pointee: Option<DieRef>,
    none: &'static str,
}

/// `r` as a pointer: a C pointer, a Rust reference or raw pointer, `Box`, `NonNull`,
/// `Unique`, `AtomicPtr`, or an `Option` of one of those (8 bytes, `None` is 0).
fn pointer_like(index: &Index<'_>, r: Option<DieRef>, depth: usize) -> Result<Option<PointerLike>, gimli::Error> {
    let Some(t) = strip(index, r)? else { return Ok(None) };
    if depth > MAX_DEPTH {
        return Ok(None);
    }
    let die = index.die(t)?;
    match die.tag {
        gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type => {
            // A Rust slice reference is a structure; a pointer to `dyn` is one too.
            Ok(Some(PointerLike { offset: 0, pointee: index.reference(t, gimli::DW_AT_type)?, none: "null" }))
        }
        gimli::DW_TAG_structure_type if is_rust(index, t) => {
            let name = raw_name(index, t)?;
            let base = name.split('<').next().unwrap_or("");
            match base {
                "Box" | "NonNull" | "Unique" | "AtomicPtr" | "UnsafeCell" => {
                    for (_, offset, ty, _) in members(index, t)? {
                        if type_size(index, ty)? == Some(8) {
                            if let Some(p) = pointer_like(index, ty, depth + 1)? {
                                return Ok(Some(PointerLike { offset: offset + p.offset, ..p }));
                            }
                        }
                    }
                    Ok(None)
                }
                "Option" if index.udata(t, gimli::DW_AT_byte_size)? == Some(8) => {
                    // `Some(p)`'s payload, niche-encoded: `None` is the 0 word.
                    for part in index.children(t)? {
                        if index.die(part)?.tag != gimli::DW_TAG_variant_part {
                            continue;
                        }
                        for variant in index.children(part)? {
                            for (name, offset, ty, _) in
                                members(index, variant)?.into_iter().map(|m| (m.0, m.1, m.2, m.3))
                            {
                                if name.as_deref() != Some("Some") {
                                    continue;
                                }
                                let Some(some) = strip(index, ty)? else { continue };
                                for (field, inner, ty, _) in members(index, some)? {
                                    if field.as_deref() == Some("__0") {
                                        if let Some(p) = pointer_like(index, ty, depth + 1)? {
                                            return Ok(Some(PointerLike {
                                                offset: offset + inner + p.offset,
                                                pointee: p.pointee,
                                                none: "None",
                                            }));
                                        }
                                    }
                                }
                            }
                        }
                    }
                    Ok(None)
                }
                _ => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// The first pointer word inside a structure (a `Vec`'s buffer: `buf.inner.ptr.pointer…`).
fn first_pointer(index: &Index<'_>, r: Option<DieRef>, depth: usize) -> Result<Option<u64>, gimli::Error> {
    let Some(t) = strip(index, r)? else { return Ok(None) };
    if depth > MAX_DEPTH {
        return Ok(None);
    }
    match index.die(t)?.tag {
        gimli::DW_TAG_pointer_type => Ok(Some(0)),
        gimli::DW_TAG_structure_type => {
            for (_, offset, ty, _) in members(index, t)? {
                if let Some(o) = first_pointer(index, ty, depth + 1)? {
                    return Ok(Some(offset + o));
                }
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// A Rust slice (`&[T]`, `&mut [T]`, `*const [T]`) or `Vec<T>`: the data pointer's and the
/// length's offsets, the element type.
fn sequence(index: &Index<'_>, t: DieRef) -> Result<Option<(u64, u64, Option<DieRef>)>, gimli::Error> {
    if index.die(t)?.tag != gimli::DW_TAG_structure_type || !is_rust(index, t) {
        return Ok(None);
    }
    let name = raw_name(index, t)?;
    let ms = members(index, t)?;
    let field = |n: &str| ms.iter().find(|m| m.0.as_deref() == Some(n));
    if ["&[", "&mut [", "*const [", "*mut ["].iter().any(|p| name.starts_with(p)) {
        if let (Some(data), Some(len)) = (field("data_ptr"), field("length")) {
            let element = match strip(index, data.2)? {
                Some(p) => index.reference(p, gimli::DW_AT_type)?,
                None => None,
            };
            return Ok(Some((data.1, len.1, element)));
        }
    }
    if name.starts_with("Vec<") {
        let element = index
            .children(t)?
            .into_iter()
            .find(|&c| index.die(c).is_ok_and(|d| d.tag == gimli::DW_TAG_template_type_parameter));
        let element = match element {
            Some(c) => index.reference(c, gimli::DW_AT_type)?,
            None => None,
        };
        if let (Some(buf), Some(len)) = (field("buf"), field("len")) {
            if let Some(data) = first_pointer(index, buf.2, 0)? {
                return Ok(Some((buf.1 + data, len.1, element)));
            }
        }
    }
    Ok(None)
}

/// Resolves `expr` against the static `root` (its address, symbol and variable DIE).
pub(crate) fn resolve(
    index: &Index<'_>,
    expr: &str,
    locate: &Locate<'_>,
) -> Result<Result<Place, PlaceError>, gimli::Error> {
    let ast = match parse(expr) {
        Ok(a) => a,
        Err(e) => return Ok(Err(e)),
    };
    let mut steps = Vec::new();
    let ty = match walk(index, expr, &ast, locate, &mut steps)? {
        Ok(w) => w,
        Err(e) => return Ok(Err(e)),
    };
    let Walked { ty, symbol, address, .. } = ty;
    let size = type_size(index, ty)?.unwrap_or(0);
    let name = type_name(index, ty)?;
    if size == 0 {
        return Ok(Err(PlaceError {
            column: 1,
            message: format!("`{expr}` ({name}) has no size in the DWARF: it has no memory to watch"),
        }));
    }
    // Consecutive offsets add up.
    let mut merged: Vec<PlaceStep> = Vec::new();
    for s in steps {
        match (merged.last_mut(), &s) {
            (Some(PlaceStep::Offset(a)), PlaceStep::Offset(b)) => *a += b,
            (_, PlaceStep::Offset(0)) => {}
            _ => merged.push(s),
        }
    }
    Ok(Ok(Place { symbol, address, steps: merged, size, type_name: name }))
}

struct Walked {
    ty: Option<DieRef>,
    symbol: String,
    address: u64,
    rust: bool,
}

fn walk(
    index: &Index<'_>,
    expr: &str,
    ast: &Ast,
    locate: &Locate<'_>,
    steps: &mut Vec<PlaceStep>,
) -> Result<Result<Walked, PlaceError>, gimli::Error> {
    let text = |span: (usize, usize)| expr[span.0..span.1].trim().to_string();
    let fail = |column: usize, message: String| Ok(Err(PlaceError { column: column + 1, message }));
    match ast {
        Ast::Static { path, span } => match locate(path)? {
            Ok((symbol, address, die)) => {
                let ty = match index.inherited(die, gimli::DW_AT_type)? {
                    Some((owner, _)) => index.reference(owner, gimli::DW_AT_type)?,
                    None => None,
                };
                Ok(Ok(Walked { ty, symbol, address, rust: is_rust(index, die) }))
            }
            Err(why) => fail(span.0, why),
        },
        Ast::Deref { base, at, .. } => {
            let mut w = match walk(index, expr, base, locate, steps)? {
                Ok(w) => w,
                Err(e) => return Ok(Err(e)),
            };
            match pointer_like(index, w.ty, 0)? {
                Some(p) => {
                    steps.push(PlaceStep::Offset(p.offset));
                    steps.push(PlaceStep::Deref { what: text(base.span()), none: p.none });
                    w.ty = p.pointee;
                    Ok(Ok(w))
                }
                None => fail(*at, format!("`{}` ({}) is not a pointer", text(base.span()), type_name(index, w.ty)?)),
            }
        }
        Ast::Field { base, name, arrow, at, .. } => {
            let mut w = match walk(index, expr, base, locate, steps)? {
                Ok(w) => w,
                Err(e) => return Ok(Err(e)),
            };
            let base_text = text(base.span());
            if *arrow && w.rust {
                return fail(*at - 2, "`->` is C's: Rust reaches a field through a pointer with `.`".to_string());
            }
            let pointer = pointer_like(index, w.ty, 0)?;
            match (&pointer, *arrow, w.rust) {
                (Some(_), false, false) => {
                    return fail(
                        *at - 1,
                        format!(
                            "`{base_text}` is a pointer ({}): write `{base_text}->{name}`",
                            type_name(index, w.ty)?
                        ),
                    )
                }
                (None, true, _) => {
                    return fail(
                        *at - 2,
                        format!(
                            "`{base_text}` is not a pointer ({}): write `{base_text}.{name}`",
                            type_name(index, w.ty)?
                        ),
                    )
                }
                _ => {}
            }
            // C's `->`, Rust's auto-deref through references, `Box` and `Option<Box>`.
            let mut depth = 0;
            let mut shown = base_text.clone();
            while let Some(p) = pointer_like(index, w.ty, 0)? {
                if depth > MAX_DEPTH {
                    break;
                }
                steps.push(PlaceStep::Offset(p.offset));
                steps.push(PlaceStep::Deref { what: shown.clone(), none: p.none });
                shown = format!("*{shown}");
                w.ty = p.pointee;
                depth += 1;
            }
            let Some(t) = strip(index, w.ty)? else {
                return fail(*at, format!("`{base_text}` has no type in the DWARF"));
            };
            let tag = index.die(t)?.tag;
            if !matches!(tag, gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type) {
                return fail(
                    *at,
                    format!(
                        "`{base_text}` ({}) has no fields: it is not a struct or union",
                        type_name(index, Some(t))?
                    ),
                );
            }
            if index.children(t)?.into_iter().any(|c| index.die(c).is_ok_and(|d| d.tag == gimli::DW_TAG_variant_part)) {
                return fail(
                    *at,
                    format!(
                        "`{base_text}` is an enum ({}): the fields of its variants are not supported",
                        type_name(index, Some(t))?
                    ),
                );
            }
            // Rust's tuple fields are `__0`, `__1`.
            let wanted =
                if w.rust && name.chars().all(|c| c.is_ascii_digit()) { format!("__{name}") } else { name.clone() };
            match find_member(index, t, &wanted, 0)? {
                Some((_, _, true)) => {
                    fail(*at, format!("`{name}` is a bit-field: rdb watches whole bytes (watch `{base_text}`)"))
                }
                Some((offset, ty, false)) => {
                    steps.push(PlaceStep::Offset(offset));
                    w.ty = ty;
                    Ok(Ok(w))
                }
                None => {
                    let mut names = Vec::new();
                    member_names(index, t, &mut names, 0)?;
                    let names: Vec<String> = names
                        .into_iter()
                        .map(|n| match n.strip_prefix("__") {
                            Some(d) if w.rust && d.chars().all(|c| c.is_ascii_digit()) => d.to_string(),
                            _ => n,
                        })
                        .collect();
                    fail(
                        *at,
                        format!(
                            "{} has no field `{name}` (its fields: {})",
                            type_name(index, Some(t))?,
                            if names.is_empty() { "none".to_string() } else { names.join(", ") }
                        ),
                    )
                }
            }
        }
        Ast::Index { base, index: i, at, .. } => {
            let mut w = match walk(index, expr, base, locate, steps)? {
                Ok(w) => w,
                Err(e) => return Ok(Err(e)),
            };
            let base_text = text(base.span());
            let mut shown = base_text.clone();
            for _ in 0..MAX_DEPTH {
                let Some(t) = strip(index, w.ty)? else { break };
                let die = index.die(t)?;
                if die.tag == gimli::DW_TAG_array_type {
                    let element = index.reference(t, gimli::DW_AT_type)?;
                    let subranges: Vec<DieRef> = index
                        .children(t)?
                        .into_iter()
                        .filter(|&c| index.die(c).is_ok_and(|d| d.tag == gimli::DW_TAG_subrange_type))
                        .collect();
                    if subranges.len() > 1 {
                        return fail(*at, format!("`{base_text}` is a multi-dimensional array: not supported"));
                    }
                    let count = match subranges.first() {
                        Some(&s) => count_of(index, s)?,
                        None => None,
                    };
                    if let Some(n) = count {
                        if *i >= n {
                            return fail(
                                *at,
                                format!(
                                    "index {i} is out of range: `{base_text}` ({}) has {n} element{}",
                                    type_name(index, Some(t))?,
                                    if n == 1 { "" } else { "s" }
                                ),
                            );
                        }
                    }
                    let Some(size) = type_size(index, element)? else {
                        return fail(*at, format!("the elements of `{base_text}` have no size in the DWARF"));
                    };
                    steps.push(PlaceStep::Offset(i * size));
                    w.ty = element;
                    return Ok(Ok(w));
                }
                if let Some((data, len, element)) = sequence(index, t)? {
                    let Some(size) = type_size(index, element)? else {
                        return fail(*at, format!("the elements of `{base_text}` have no size in the DWARF"));
                    };
                    steps.push(PlaceStep::Index { data, len, index: *i, element: size, what: shown.clone() });
                    w.ty = element;
                    return Ok(Ok(w));
                }
                let Some(p) = pointer_like(index, Some(t), 0)? else { break };
                if !w.rust {
                    // C's `p[i]`: `*(p + i)`, no length to check.
                    let Some(size) = type_size(index, p.pointee)? else {
                        return fail(*at, format!("`{base_text}` points to a type without a size"));
                    };
                    steps.push(PlaceStep::Deref { what: shown.clone(), none: p.none });
                    steps.push(PlaceStep::Offset(i * size));
                    w.ty = p.pointee;
                    return Ok(Ok(w));
                }
                // Rust's auto-deref.
                steps.push(PlaceStep::Offset(p.offset));
                steps.push(PlaceStep::Deref { what: shown.clone(), none: p.none });
                shown = format!("*{shown}");
                w.ty = p.pointee;
            }
            fail(
                *at,
                format!(
                    "`{base_text}` ({}) cannot be indexed: arrays, slices, `Vec`s and C pointers can",
                    type_name(index, w.ty)?
                ),
            )
        }
    }
}

fn count_of(index: &Index<'_>, r: DieRef) -> Result<Option<u64>, gimli::Error> {
    if let Some(count) = index.udata(r, gimli::DW_AT_count)? {
        return Ok(Some(count));
    }
    let lower = index.udata(r, gimli::DW_AT_lower_bound)?.unwrap_or(0);
    Ok(index.udata(r, gimli::DW_AT_upper_bound)?.and_then(|upper| upper.checked_add(1)?.checked_sub(lower)))
}

/// Member `name` of structure `t` (through C's anonymous members): offset, type, bit-field.
fn find_member(
    index: &Index<'_>,
    t: DieRef,
    name: &str,
    depth: usize,
) -> Result<Option<(u64, Option<DieRef>, bool)>, gimli::Error> {
    if depth > MAX_DEPTH {
        return Ok(None);
    }
    for (n, offset, ty, bits) in members(index, t)? {
        match n {
            Some(n) if n == name => return Ok(Some((offset, ty, bits))),
            None => {
                if let Some(inner) = strip(index, ty)? {
                    if let Some((o, ty, bits)) = find_member(index, inner, name, depth + 1)? {
                        return Ok(Some((offset + o, ty, bits)));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

fn member_names(index: &Index<'_>, t: DieRef, out: &mut Vec<String>, depth: usize) -> Result<(), gimli::Error> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    for (n, _, ty, _) in members(index, t)? {
        match n {
            Some(n) => out.push(n),
            None => {
                if let Some(inner) = strip(index, ty)? {
                    member_names(index, inner, out, depth + 1)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_places_with_their_spans() {
        let e = parse("LIST.head->next->value").unwrap();
        let Ast::Field { base, name, arrow: true, at, span } = e else { panic!() };
        assert_eq!((name.as_str(), at, span), ("value", 17, (0, 22)));
        assert_eq!(base.span(), (0, 15));
        let e = parse("(*HEAD).next").unwrap();
        let Ast::Field { base, .. } = e else { panic!() };
        assert!(matches!(*base, Ast::Deref { span: (0, 7), .. }), "{base:?}");
        let e = parse("crate::app::STATE.items[3].count").unwrap();
        let Ast::Field { base, .. } = e else { panic!() };
        let Ast::Index { index: 3, span, .. } = *base else { panic!() };
        assert_eq!(span, (0, 26));
        assert!(matches!(parse("*p").unwrap(), Ast::Deref { .. }));
        assert!(matches!(parse("pair.0").unwrap(), Ast::Field { ref name, .. } if name == "0"));
        assert!(matches!(parse("::app::X.a[0x10]").unwrap(), Ast::Index { index: 16, .. }));
        assert!(is_static_path("crate::bank::AUDITED") && !is_static_path("a.b"));
    }

    #[test]
    fn refuses_other_syntax_with_its_column() {
        for (expr, column, why) in [
            ("a[i]", 3, "only constant indices"),
            ("a + b", 3, "unsupported syntax"),
            ("f()", 2, "function call"),
            ("a.len()", 6, "method call"),
            ("a.", 3, "expected a field name"),
            ("(a", 3, "expected `)`"),
            ("", 1, "expected a static's name"),
            ("a[2", 4, "expected `]`"),
            ("a[1z]", 3, "not an index"),
        ] {
            let e = parse(expr).unwrap_err();
            assert_eq!(e.column, column, "{expr}: {e}");
            assert!(e.message.contains(why), "{expr}: {e}");
        }
    }
}
