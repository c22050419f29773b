//! Extraction on small inputs: stripping is byte-exact, arguments are found,
//! the debug text is rewritten as documented.

use rdb_extract::{extract, ArgumentKind, SourceInput};

fn input(text: &str) -> SourceInput {
    SourceInput { path: "src/main.rs".into(), text: text.into(), module_path: vec![], crate_name: "app".into() }
}

/// A source file without regions, and the same file with three (`data/`).
const PLAIN: &str = include_str!("data/plain.rs");

const INSTRUMENTED: &str = include_str!("data/instrumented.rs");

#[test]
fn stripping_gives_back_the_plain_file() {
    let x = extract(&[input(INSTRUMENTED)], 1).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(x.files[0].stripped, PLAIN);
    assert!(x.files[0].instrumented);
    assert_eq!(x.regions.len(), 3);
}

#[test]
fn regions_know_their_arguments_and_places() {
    let x = extract(&[input(INSTRUMENTED)], 1).unwrap_or_else(|d| panic!("{d}"));
    let r = &x.regions[0];
    assert_eq!(r.id, 1);
    assert_eq!(r.function, "Vm::run");
    assert_eq!((r.begin.line, r.begin.column), (21, 13));
    assert_eq!((r.end.line, r.end.column), (26, 13));
    // `self.stack.push(...)` is line 11 of the plain file.
    assert_eq!((r.anchor.line, r.anchor.column), (11, 13));
    let names: Vec<&str> = r.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["self", "pc", "code"]);
    let r = &x.regions[1];
    assert_eq!(r.arguments[1].kind, ArgumentKind::Static);
    assert_eq!(r.arguments[1].static_path.as_deref(), Some("app::COUNTER"));
    assert_eq!((r.anchor.line, r.anchor.column), (15, 9));
    let r = &x.regions[2];
    assert_eq!(r.function, "main");
    assert_eq!(r.arguments[0].name, "vm");
    // Region ends the block: anchor is the closing brace.
    assert_eq!((r.anchor.line, r.anchor.column), (22, 1));
}

#[test]
fn debug_text_calls_region_and_keeps_lines() {
    let x = extract(&[input(INSTRUMENTED)], 1).unwrap_or_else(|d| panic!("{d}"));
    let d = &x.files[0].debug;
    assert_eq!(d.lines().count(), INSTRUMENTED.lines().count());
    assert!(
        d.contains("::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&self, &pc, &code,)), move |(__rdb_self, pc, code,)| {"),
        "{d}"
    );
    assert!(d.contains("let depth = (*__rdb_self).stack.len();"), "{d}");
    assert!(d.contains("render(&(*__rdb_self).stack), (*code)[(*pc)]"), "{d}");
    assert!(d.contains("types_of!((&self, &crate::COUNTER,)), move |(__rdb_self, __rdb_static_COUNTER,)| {"), "{d}");
    assert!(d.contains("#[allow(dead_code, unused)]\nfn render"), "{d}");
    assert!(!d.contains("use rdb_macros"), "{d}");
    assert!(!d.contains("rdb_end"), "{d}");
}

#[test]
fn files_without_markers_are_untouched() {
    let x = extract(&[input(PLAIN)], 1).unwrap();
    assert_eq!(x.files[0].stripped, PLAIN);
    assert_eq!(x.files[0].debug, PLAIN);
    assert!(!x.files[0].instrumented);
}

fn one(text: &str) -> rdb_extract::Extraction {
    extract(&[input(text)], 1).unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn names_bound_inside_the_region_are_not_arguments() {
    let x = one(
        "fn f(a: i32, b: i32) -> i32 {\n    let c = a + b;\n    rdb_macros::rdb_begin!();\n    let a = 5;\n    let d = a + c;\n    let g = |b: i32| b + d;\n    for c in 0..3 { println!(\"{}\", g(c)); }\n    rdb_macros::rdb_end!();\n    c\n}\n",
    );
    let names: Vec<&str> = x.regions[0].arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["c"]);
    assert!(x.files[0].debug.contains("let d = a + (*c);"), "{}", x.files[0].debug);
}

#[test]
fn shorthand_fields_statics_and_paths_in_macros() {
    let text = "mod m {\n    pub static mut LEVEL: u32 = 0;\n    pub static NAME: &str = \"n\";\n}\nstruct P { x: i32 }\nfn f(x: i32) {\n    rdb_macros::rdb_begin!();\n    let p = P { x };\n    println!(\"{} {}\", p.x, m::NAME);\n    let l = unsafe { m::LEVEL };\n    rdb_macros::rdb_end!();\n}\n";
    let x = one(text);
    let r = &x.regions[0];
    let args: Vec<(&str, Option<&str>)> =
        r.arguments.iter().map(|a| (a.name.as_str(), a.static_path.as_deref())).collect();
    assert_eq!(args, [("x", None), ("NAME", Some("app::m::NAME")), ("LEVEL", Some("app::m::LEVEL"))]);
    let d = &x.files[0].debug;
    assert!(d.contains("P { x: (*x) }"), "{d}");
    assert!(d.contains("p.x, (*__rdb_static_m_NAME))"), "{d}");
    assert!(d.contains("unsafe { &*::core::ptr::addr_of!(crate::m::LEVEL) }"), "{d}");
    assert!(d.contains("unsafe { (*__rdb_static_m_LEVEL) }"), "{d}");
}

#[test]
fn inline_regions_take_their_separating_blanks() {
    let x = one("fn main() {\n    let a = 1; rdb_macros::rdb_begin!(); dbg!(a); rdb_macros::rdb_end!(); let b = 2;\n    let _ = b;\n}\n");
    assert_eq!(x.files[0].stripped, "fn main() {\n    let a = 1; let b = 2;\n    let _ = b;\n}\n");
    let r = &x.regions[0];
    assert_eq!((r.anchor.line, r.anchor.column), (2, 16));
}

#[test]
fn module_paths_of_files() {
    use rdb_extract::module_path_of;
    use std::path::Path;
    assert!(module_path_of(Path::new("main.rs")).is_empty());
    assert!(module_path_of(Path::new("bin/tool.rs")).is_empty());
    assert_eq!(module_path_of(Path::new("vm.rs")), ["vm"]);
    assert_eq!(module_path_of(Path::new("a/b/mod.rs")), ["a", "b"]);
    assert_eq!(module_path_of(Path::new("a/c.rs")), ["a", "c"]);
}

#[test]
fn arguments_say_whether_a_statement_before_the_region_may_change_them() {
    // `pc` changes only after the region (a loop runs that before the next hit); `acc` before it,
    // by a method call; `n` by `&mut` (in a macro's input); `k` never.
    let x = one("fn f(n: usize, k: usize) -> usize {\n    let mut pc = 0;\n    let mut acc = Vec::new();\n    \
         assert!(bump(&mut n));\n    loop {\n        acc.push(pc);\n        rdb_macros::rdb_begin!();\n        \
         println!(\"{pc} {} {n} {k}\", acc.len());\n        rdb_macros::rdb_end!();\n        pc += 1;\n        \
         if pc > k { return pc; }\n    }\n}\n");
    let mut unwritten: Vec<(&str, bool)> =
        x.regions[0].arguments.iter().map(|a| (a.name.as_str(), a.unwritten_before)).collect();
    unwritten.sort_unstable();
    assert_eq!(unwritten, [("acc", false), ("k", true), ("n", false), ("pc", true)]);
    // A destructuring assignment, a raw `&raw mut` borrow.
    let x = one("fn f() -> usize {\n    let (mut a, mut b, mut c) = (1, 2, 3);\n    (a, [b, _]) = (4, [5, 6]);\n    \
         let p = &raw mut c;\n    rdb_macros::rdb_begin!();\n    println!(\"{a} {b} {c}\");\n    \
         rdb_macros::rdb_end!();\n    a + b + unsafe { *p }\n}\n");
    let mut unwritten: Vec<(&str, bool)> =
        x.regions[0].arguments.iter().map(|a| (a.name.as_str(), a.unwritten_before)).collect();
    unwritten.sort_unstable();
    assert_eq!(unwritten, [("a", false), ("b", false), ("c", false)]);
}

#[test]
fn a_region_before_a_loop_statement_knows_its_lines() {
    let text = "fn main() {\n    let t = \"a b\";\n    rdb_begin!();\n    println!(\"{t}\");\n    rdb_end!();\n    for w in t.split(' ') {\n        println!(\"{w}\");\n    }\n    rdb_begin!();\n    println!(\"{t}\");\n    rdb_end!();\n    let n = t.len();\n    println!(\"{n}\");\n}\n";
    let x = one(text);
    // In the stripped text the loop is at lines 3-5.
    assert_eq!(x.regions[0].before_loop, Some((3, 5)));
    assert_eq!(x.regions[1].before_loop, None);
}
