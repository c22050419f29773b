//! `rdb-clang`: a drop-in for clang-14 that also builds the rdb debug module
//! and descriptors. See `rdb_codegen_llvm::driver`.

/// `rdb-clang --help` (clang's own options: `clang-14 --help`).
const HELP: &str = "\
rdb-clang: clang-14 for C programs with rdb debug regions

Usage: rdb-clang [CLANG ARGUMENTS]...

Builds exactly what clang-14 builds from the sources without their debug code (the program is
byte-identical to a plain clang-14 build of the original source), and, when it links an
executable PROG, beside it the debug module PROG.rdb.so and the descriptors
PROG.rdb-functions.json and PROG.rdb-arguments.json that `rdb replay TRACE --debug PROG` uses
to run the debug code at its places in a recorded execution.

  rdb-clang -O2 -g list.c dump.rdb.c -o list    # compile and link in one step
  rdb-clang -O2 -g -c list.c -o list.o          # or compile, then link with rdb-clang too

Debug code in the sources:
  #include \"rdb.h\"                  the markers (rdb-clang provides the header)
  rdb_begin ... rdb_end              a debug region, each marker on a line of its own
  __rdb_NAME, RDB_DEBUG_ONLY         debug-only declarations
  FILE.rdb.c                         a debug-only source file

Options of rdb-clang itself:
  -h, --help             print this help
  --print-include-dir    print the directory of rdb.h (for a plain clang-14 build of
                         instrumented sources: -I \"$(rdb-clang --print-include-dir)\")

Every other argument goes to clang-14 unchanged (see `clang-14 --help`). Documentation:
rdb-codegen-llvm/README.md in the rdb repository.
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return;
    }
    if let Err(e) = rdb_codegen_llvm::driver::run(args) {
        let message = e.to_string();
        if !message.is_empty() {
            eprintln!("{message}");
        }
        std::process::exit(e.exit_code());
    }
}
