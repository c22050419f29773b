//! Registers as the stub lays them out: the target description (`qXfer:features:read`, XML
//! with `xi:include`s) gives each register's name, size and number; the `g` packet holds
//! registers in number order. A stub without a description gets gdb's fixed x86-64 layout.
//!
//! The XML is read with a tolerant tag scanner rather than an XML library: stubs send
//! documents that strict parsers refuse (QEMU's `target.xml` uses the `xi:` prefix without
//! declaring its namespace, and every stub's has a DTD), and only the `reg` and `xi:include`
//! tags and their attributes matter.

use rdb_tracee::Regs;

/// One register of the target description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Register {
    pub name: String,
    /// Register number in `p`/`P` packets and stop replies.
    pub number: u32,
    /// Size in bytes.
    pub size: usize,
}

/// All registers of a target, in number order, with their offsets in a `g` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// (register, offset in the `g` reply).
    pub registers: Vec<(Register, usize)>,
}

/// A tag of a target description: its name and attributes.
#[derive(Debug, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub attributes: Vec<(String, String)>,
}

impl Tag {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// The start tags (and empty-element tags) of an XML text, in order; comments, processing
/// instructions, declarations and end tags are skipped.
pub fn tags(xml: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix("!--") {
            rest = after.find("-->").map(|e| &after[e + 3..]).unwrap_or("");
            continue;
        }
        let Some(close) = tag_end(rest) else { break };
        let inner = &rest[..close];
        rest = &rest[close + 1..];
        if inner.starts_with(['?', '!', '/']) {
            continue;
        }
        let inner = inner.trim_end_matches('/');
        let name_end = inner.find(|c: char| c.is_whitespace()).unwrap_or(inner.len());
        out.push(Tag { name: inner[..name_end].to_string(), attributes: attributes(&inner[name_end..]) });
    }
    out
}

/// Index of the `>` that ends a tag, outside quoted attribute values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

fn attributes(mut s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start();
        let Some(eq) = s.find('=') else { return out };
        let key = s[..eq].trim().to_string();
        let after = s[eq + 1..].trim_start();
        let Some(q) = after.chars().next().filter(|c| matches!(c, '"' | '\'')) else { return out };
        let Some(end) = after[1..].find(q) else { return out };
        out.push((key, unescape(&after[1..1 + end])));
        s = &after[end + 2..];
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

impl Layout {
    /// The layout from a description's tags (includes already expanded, in document order).
    /// Registers without `regnum` follow the previous one, as gdb numbers them.
    pub fn from_tags(tags: &[Tag]) -> Result<Layout, String> {
        let mut regs = Vec::new();
        let mut next = 0u32;
        for t in tags.iter().filter(|t| t.name == "reg") {
            let name = t.get("name").ok_or("a <reg> without a name")?.to_string();
            let bits: usize = t
                .get("bitsize")
                .and_then(|b| b.parse().ok())
                .ok_or_else(|| format!("register {name} without a valid bitsize"))?;
            if bits == 0 || !bits.is_multiple_of(8) || bits > 4096 {
                return Err(format!("register {name} has an unusable size of {bits} bits"));
            }
            let number = match t.get("regnum") {
                Some(n) => n.parse().map_err(|_| format!("register {name} has a malformed regnum `{n}`"))?,
                None => next,
            };
            next = number + 1;
            regs.push(Register { name, number, size: bits / 8 });
        }
        if regs.is_empty() {
            return Err("the target description lists no registers".into());
        }
        Ok(Layout::from_registers(regs))
    }

    fn from_registers(mut regs: Vec<Register>) -> Layout {
        regs.sort_by_key(|r| r.number);
        regs.dedup_by_key(|r| r.number);
        let mut offset = 0;
        let registers = regs
            .into_iter()
            .map(|r| {
                let at = offset;
                offset += r.size;
                (r, at)
            })
            .collect();
        Layout { registers }
    }

    /// gdb's layout for an x86-64 stub that sends no description (`amd64` without the Linux
    /// additions: no `orig_rax`, `fs_base` or `gs_base`).
    pub fn amd64_default() -> Layout {
        let mut regs = Vec::new();
        let mut add = |name: &str, size: usize| {
            let number = regs.len() as u32;
            regs.push(Register { name: name.to_string(), number, size });
        };
        for r in ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"] {
            add(r, 8);
        }
        for n in 8..16 {
            add(&format!("r{n}"), 8);
        }
        add("rip", 8);
        add("eflags", 4);
        for s in ["cs", "ss", "ds", "es", "fs", "gs"] {
            add(s, 4);
        }
        for n in 0..8 {
            add(&format!("st{n}"), 10);
        }
        for f in ["fctrl", "fstat", "ftag", "fiseg", "fioff", "foseg", "fooff", "fop"] {
            add(f, 4);
        }
        for n in 0..16 {
            add(&format!("xmm{n}"), 16);
        }
        add("mxcsr", 4);
        Layout::from_registers(regs)
    }

    pub fn find(&self, name: &str) -> Option<&(Register, usize)> {
        self.registers.iter().find(|(r, _)| r.name == name)
    }
}

/// The general-purpose registers `Regs` holds, by their target-description names.
pub const GENERAL: [&str; 27] = [
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax",
    "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
];

/// Stores the value of a general-purpose register, by name, into `regs`.
pub fn set_general(regs: &mut Regs, name: &str, value: u64) {
    let field = match name {
        "r15" => &mut regs.r15,
        "r14" => &mut regs.r14,
        "r13" => &mut regs.r13,
        "r12" => &mut regs.r12,
        "rbp" => &mut regs.rbp,
        "rbx" => &mut regs.rbx,
        "r11" => &mut regs.r11,
        "r10" => &mut regs.r10,
        "r9" => &mut regs.r9,
        "r8" => &mut regs.r8,
        "rax" => &mut regs.rax,
        "rcx" => &mut regs.rcx,
        "rdx" => &mut regs.rdx,
        "rsi" => &mut regs.rsi,
        "rdi" => &mut regs.rdi,
        "orig_rax" => &mut regs.orig_rax,
        "rip" => &mut regs.rip,
        "cs" => &mut regs.cs,
        "eflags" => &mut regs.eflags,
        "rsp" => &mut regs.rsp,
        "ss" => &mut regs.ss,
        "fs_base" => &mut regs.fs_base,
        "gs_base" => &mut regs.gs_base,
        "ds" => &mut regs.ds,
        "es" => &mut regs.es,
        "fs" => &mut regs.fs,
        "gs" => &mut regs.gs,
        _ => return,
    };
    *field = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_found_in_descriptions_that_strict_parsers_refuse() {
        // QEMU 7.2's top-level description: a DTD and an undeclared `xi:` prefix.
        let t = tags(
            r#"<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd"><target><architecture>i386:x86-64</architecture><xi:include href="i386-64bit.xml"/></target>"#,
        );
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["target", "architecture", "xi:include"]);
        assert_eq!(t[2].get("href"), Some("i386-64bit.xml"));
        let t = tags("<!-- <reg name=\"no\"/> --><reg name='a&amp;b' bitsize = \"64\" type=\"x>y\"/><feature>");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].get("name"), Some("a&b"));
        assert_eq!(t[0].get("type"), Some("x>y"));
        assert!(tags("<reg name=\"unterminated").is_empty());
    }

    #[test]
    fn registers_are_numbered_in_order_unless_regnum_says_otherwise() {
        let t = tags(
            r#"<feature><reg name="rax" bitsize="64"/><reg name="rbx" bitsize="64"/>
               <reg name="eflags" bitsize="32" regnum="17"/><reg name="cs" bitsize="32"/>
               <reg name="fs_base" bitsize="64" regnum="60"/></feature>"#,
        );
        let l = Layout::from_tags(&t).unwrap();
        let got: Vec<(&str, u32, usize)> =
            l.registers.iter().map(|(r, off)| (r.name.as_str(), r.number, *off)).collect();
        assert_eq!(got, [("rax", 0, 0), ("rbx", 1, 8), ("eflags", 17, 16), ("cs", 18, 20), ("fs_base", 60, 24)]);
        assert!(Layout::from_tags(&tags("<reg name=\"x\" bitsize=\"7\"/>")).is_err());
        assert!(Layout::from_tags(&tags("<reg name=\"x\"/>")).is_err());
        assert!(Layout::from_tags(&tags("<feature/>")).is_err());
    }

    #[test]
    fn the_default_layout_is_gdbs_amd64_one() {
        let l = Layout::amd64_default();
        assert_eq!(l.find("rip").unwrap().1, 16 * 8);
        assert_eq!(l.find("eflags").unwrap().1, 17 * 8);
        assert_eq!(l.find("xmm0").unwrap().1, 17 * 8 + 4 + 6 * 4 + 8 * 10 + 8 * 4);
        assert_eq!(l.find("xmm0").unwrap().0.number, 40);
    }
}
