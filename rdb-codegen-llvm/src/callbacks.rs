//! C event callbacks: `RDB_ON_SYSCALL(write, after) void f(const rdb_syscall *call) { ... }`
//! (and `RDB_ON_CALL`, `RDB_ON_RETURN`, `RDB_ON_WRITE`, `RDB_ON_READ`) in debug sources
//! (`*.rdb.c`).
//!
//! - **Compile** ([`scan`], [`wrapper_unit`]): a debug source is compiled as a generated unit
//!   that `#include`s it (so static callbacks are in reach) and adds, per callback, an entry
//!   `void __rdb_callback_<name>_<hash>(void **argv)` that calls it with its arguments in the
//!   regions' `argv` convention, and a record of what it is for in the section
//!   `rdb_c_callbacks` (kept by the linker in the debug module, whatever step compiled it).
//! - **Link** ([`read_specs`]): the debug module's records are the callbacks; the driver gives
//!   them ids after the regions, locates the functions and statics they watch in the program's
//!   DWARF, and checks each call callback's parameters against the function's (count and, from
//!   the debug module's own DWARF, sizes).
//!
//! Wrappers pass each value as the callback declares it: a call callback's parameter `i` reads
//! `*(T *)argv[i]` with `T` its declared type (parameters must be plain declarations: no
//! function-pointer declarators); a syscall callback gets `argv[0]` as its `rdb_syscall`
//! pointer; a memory callback gets `*(T *)argv[0]`, `*(T *)argv[1]` and `argv[2]` as its
//! `rdb_access` pointer.

use std::path::Path;

use crate::source::{tokens_of, Diagnostic, Pos};

/// The macros and what they watch.
const MACROS: [(&str, Kind); 5] = [
    ("RDB_ON_SYSCALL", Kind::Syscall),
    ("RDB_ON_CALL", Kind::Call),
    ("RDB_ON_RETURN", Kind::Return),
    ("RDB_ON_WRITE", Kind::Write),
    ("RDB_ON_READ", Kind::Read),
];

/// The section of the debug module holding the callbacks' records.
pub const SECTION: &str = "rdb_c_callbacks";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Syscall,
    Call,
    Return,
    Write,
    Read,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Syscall => "syscall",
            Kind::Call => "call",
            Kind::Return => "return",
            Kind::Write => "write",
            Kind::Read => "read",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        MACROS.iter().map(|(_, k)| *k).find(|k| k.name() == s)
    }
}

/// A callback found in a debug source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CCallback {
    pub kind: Kind,
    /// The macro's arguments (`write, after`; `insert`).
    pub args: Vec<String>,
    /// The callback function.
    pub function: String,
    /// Its parameters' types, as written (`struct list *`, `int`).
    pub params: Vec<String>,
    /// The macro's position.
    pub pos: Pos,
}

/// The callbacks of a debug source.
pub fn scan(file: &Path, text: &str) -> Result<Vec<CCallback>, Vec<Diagnostic>> {
    let tokens = tokens_of(file, text).map_err(|d| vec![d])?;
    let mut out = Vec::new();
    let mut diags = Vec::new();
    let bad = |pos: Pos, message: String, hint: &str| Diagnostic {
        file: file.to_path_buf(),
        pos,
        message,
        hint: Some(hint.to_string()),
    };
    let mut i = 0;
    while i < tokens.len() {
        let Some(&(_, kind)) = MACROS.iter().find(|(m, _)| tokens[i].0 == *m) else {
            i += 1;
            continue;
        };
        let pos = tokens[i].1;
        // The macro's arguments.
        if tokens.get(i + 1).map(|t| t.0.as_str()) != Some("(") {
            diags.push(bad(pos, format!("`{}` needs its arguments", tokens[i].0), "write e.g. `RDB_ON_CALL(insert)`"));
            i += 1;
            continue;
        }
        let mut j = i + 2;
        let mut args = vec![String::new()];
        let mut depth = 1;
        while j < tokens.len() {
            match tokens[j].0.as_str() {
                "(" => depth += 1,
                ")" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                "," if depth == 1 => {
                    args.push(String::new());
                    j += 1;
                    continue;
                }
                _ => {}
            }
            let last = args.last_mut().expect("one");
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(&tokens[j].0);
            j += 1;
        }
        args.retain(|a| !a.is_empty());
        // The function definition: the identifier before the first `(`, its parameters.
        let mut k = j + 1;
        while k < tokens.len() && tokens[k].0 != "(" && tokens[k].0 != ";" && tokens[k].0 != "{" {
            k += 1;
        }
        if tokens.get(k).map(|t| t.0.as_str()) != Some("(") || k == 0 {
            diags.push(bad(
                pos,
                format!("`{}` must come right before a function definition", tokens[i].0),
                "write `RDB_ON_CALL(insert) void inserting(int v) { ... }`",
            ));
            i = k;
            continue;
        }
        let function = tokens[k - 1].0.clone();
        let mut params: Vec<Vec<String>> = vec![Vec::new()];
        let mut depth = 1;
        let mut m = k + 1;
        while m < tokens.len() {
            match tokens[m].0.as_str() {
                "(" | "[" => depth += 1,
                ")" | "]" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                "," if depth == 1 => {
                    params.push(Vec::new());
                    m += 1;
                    continue;
                }
                _ => {}
            }
            params.last_mut().expect("one").push(tokens[m].0.clone());
            m += 1;
        }
        params.retain(|p| !p.is_empty());
        if params.len() == 1 && params[0] == ["void"] {
            params.clear();
        }
        let mut types = Vec::new();
        for p in &params {
            match param_type(p) {
                Some(t) => types.push(t),
                None => diags.push(bad(
                    tokens[k].1,
                    format!(
                        "parameter `{}` of callback `{function}`: rdb-clang passes plain declarations only",
                        p.join(" ")
                    ),
                    "declare it as `TYPE name` (no function-pointer declarators; use a typedef)",
                )),
            }
        }
        if args.is_empty() {
            diags.push(bad(
                pos,
                format!("`{}` needs what it watches", tokens[i].0),
                "write `RDB_ON_SYSCALL(write)`, `RDB_ON_CALL(insert)`, `RDB_ON_WRITE(head)`",
            ));
        }
        if kind == Kind::Syscall {
            if let Some(d) = check_syscalls(file, pos, &args) {
                diags.push(d);
            }
        }
        out.push(CCallback { kind, args, function, params: types, pos });
        i = m;
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}

/// A parameter's type from its declaration's tokens: without the name (the last identifier),
/// arrays as pointers. `None` for function-pointer declarators.
fn param_type(tokens: &[String]) -> Option<String> {
    if tokens.iter().any(|t| t == "(") {
        return None;
    }
    let mut t: Vec<String> = tokens.to_vec();
    let mut array = false;
    if let Some(open) = t.iter().position(|x| x == "[") {
        t.truncate(open);
        array = true;
    }
    // The name: a trailing identifier that is not a type keyword (`unsigned`, `int`).
    const KEYWORDS: [&str; 12] =
        ["int", "char", "short", "long", "unsigned", "signed", "float", "double", "void", "_Bool", "const", "volatile"];
    if t.len() > 1 && t.last().is_some_and(|n| is_identifier(n) && !KEYWORDS.contains(&n.as_str())) {
        let before = &t[t.len() - 2];
        if !matches!(before.as_str(), "struct" | "union" | "enum") {
            t.pop();
        }
    }
    let mut ty = t.join(" ");
    if array {
        ty.push_str(" *");
    }
    Some(ty)
}

fn is_identifier(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Unknown syscall names or a misplaced `before`/`after`.
fn check_syscalls(file: &Path, pos: Pos, args: &[String]) -> Option<Diagnostic> {
    for (i, a) in args.iter().enumerate() {
        let when = a == "before" || a == "after";
        if when && i + 1 != args.len() {
            return Some(Diagnostic {
                file: file.to_path_buf(),
                pos,
                message: "`before` / `after` must come last".into(),
                hint: Some("write `RDB_ON_SYSCALL(read, write, before)`".into()),
            });
        }
        if !when && a.parse::<syscalls::Sysno>().is_err() {
            return Some(Diagnostic {
                file: file.to_path_buf(),
                pos,
                message: format!("`{a}` is not an x86-64 system call"),
                hint: Some("use the kernel's name of the call (`write`, `openat`, ...), as `strace` shows it".into()),
            });
        }
    }
    None
}

/// The entry symbol of `callback` of the debug source `file` (unique across debug sources).
fn entry_symbol(file: &Path, function: &str) -> String {
    let hash = rdb_descriptors::hash_bytes(file.as_os_str().as_encoded_bytes());
    format!("__rdb_callback_{function}_{}", &hash[..12])
}

/// The unit rdb-clang compiles for the debug source `file` (absolute): the source itself, then
/// the callbacks' entries and records.
pub fn wrapper_unit(file: &Path, callbacks: &[CCallback]) -> String {
    let mut out = format!("#include \"{}\"\n", file.display());
    if callbacks.is_empty() {
        return out;
    }
    for c in callbacks {
        let entry = entry_symbol(file, &c.function);
        let args: Vec<String> = match c.kind {
            Kind::Syscall => (0..c.params.len().min(1)).map(|_| "(const rdb_syscall *)argv[0]".to_string()).collect(),
            Kind::Call | Kind::Return => {
                c.params.iter().enumerate().map(|(i, t)| format!("*({t} *)argv[{i}]")).collect()
            }
            Kind::Write | Kind::Read => c
                .params
                .iter()
                .enumerate()
                .map(
                    |(i, t)| {
                        if i == 2 {
                            "(const rdb_access *)argv[2]".to_string()
                        } else {
                            format!("*({t} *)argv[{i}]")
                        }
                    },
                )
                .collect(),
        };
        out.push_str(&format!(
            "void {entry}(void **argv);\nvoid {entry}(void **argv) {{ (void)argv; {}({}); }}\n",
            c.function,
            args.join(", ")
        ));
        let record = format!(
            "{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}",
            c.kind.name(),
            c.args.join(","),
            c.function,
            entry,
            file.display(),
            c.pos.line,
            c.pos.column,
            c.params.len()
        );
        out.push_str(&format!(
            "__attribute__((section(\"{SECTION}\"), used)) static const char {entry}_record[] = {};\n",
            c_string(&record)
        ));
    }
    out
}

/// A C string literal of `s` (NUL-terminated by C).
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// A callback as the debug module records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub kind: Kind,
    pub args: Vec<String>,
    pub function: String,
    pub entry: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub params: usize,
}

/// The callback records of a debug module (none when it has no section of them).
pub fn read_specs(module: &Path) -> Result<Vec<Spec>, String> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(module).map_err(|e| format!("cannot read {}: {e}", module.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", module.display()))?;
    let Some(section) = file.section_by_name(SECTION) else { return Ok(Vec::new()) };
    let bytes = section.data().map_err(|e| format!("{}: {e}", module.display()))?;
    let mut out = Vec::new();
    for record in bytes.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let f: Vec<&str> = text.split('\x1f').collect();
        let [kind, args, function, entry, file, line, column, params] = f[..] else {
            return Err(format!("{}: a malformed callback record in `{SECTION}`", module.display()));
        };
        out.push(Spec {
            kind: Kind::parse(kind).ok_or_else(|| format!("unknown callback kind `{kind}`"))?,
            args: args.split(',').filter(|a| !a.is_empty()).map(|a| a.trim().to_string()).collect(),
            function: function.to_string(),
            entry: entry.to_string(),
            file: file.to_string(),
            line: line.parse().unwrap_or(0),
            column: column.parse().unwrap_or(0),
            params: params.parse().unwrap_or(0),
        });
    }
    out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    out.dedup_by(|a, b| a.entry == b.entry);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_are_found_with_their_parameters() {
        let text = "#include \"rdb.h\"\nstatic long n;\nRDB_ON_SYSCALL(write, after) void who(const rdb_syscall *call) { n++; }\nRDB_ON_CALL(insert)\nstatic void inserting(struct list *l, int v, char name[]) { }\nRDB_ON_WRITE(head) void h(void) {}\n";
        let found = scan(Path::new("x.rdb.c"), text).unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].args, ["write", "after"]);
        assert_eq!(found[0].params, ["const rdb_syscall *"]);
        assert_eq!(found[1].function, "inserting");
        assert_eq!(found[1].params, ["struct list *", "int", "char *"]);
        assert!(found[2].params.is_empty());
        let unit = wrapper_unit(Path::new("/a/x.rdb.c"), &found);
        assert!(unit.contains("inserting(*(struct list * *)argv[0], *(int *)argv[1], *(char * *)argv[2]);"), "{unit}");
        assert!(unit.contains("who((const rdb_syscall *)argv[0]);"), "{unit}");
    }

    #[test]
    fn callbacks_in_program_sources_are_refused() {
        let err = crate::source::analyse(Path::new("p.c"), "RDB_ON_CALL(f) void __rdb_g(void) {}\n").unwrap_err();
        assert!(err[0].to_string().contains("p.c:1:1: error: `RDB_ON_CALL` in a program source"), "{}", err[0]);
    }

    #[test]
    fn unknown_syscalls_are_errors() {
        let err = scan(Path::new("x.rdb.c"), "RDB_ON_SYSCALL(wirte) void f(void) {}\n").unwrap_err();
        assert!(err[0].to_string().contains("x.rdb.c:1:1: error: `wirte` is not an x86-64 system call"), "{}", err[0]);
    }
}
