//! Runs the outlining pass on one bitcode file (development aid):
//! `outline IN.bc OUT.bc FILE.c BEGIN:END[,BEGIN:END...] [PROGRAM_SYMBOL...]`
use rdb_codegen_llvm::pass::{outline_file, PassInput, RegionSpec};
use std::path::Path;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let regions: Vec<RegionSpec> = a[4]
        .split(',')
        .enumerate()
        .map(|(n, r)| {
            let (b, e) = r.split_once(':').unwrap();
            RegionSpec {
                id: n as u32 + 1,
                begin_line: b.parse().unwrap(),
                end_line: e.parse().unwrap(),
                identifiers: Default::default(),
            }
        })
        .collect();
    let syms = a[5..].iter().cloned().collect();
    let debug_only = Default::default();
    let input =
        PassInput { file: Path::new(&a[3]), regions: &regions, debug_only: &debug_only, program_symbols: &syms };
    match outline_file(Path::new(&a[1]), Path::new(&a[2]), &input) {
        Ok(r) => println!("{r:#?}"),
        Err(e) => eprintln!("{e}"),
    }
}
