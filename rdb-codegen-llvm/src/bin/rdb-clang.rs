//! `rdb-clang`: a drop-in for clang-14 that also builds the rdb debug module
//! and descriptors. See `rdb_codegen_llvm::driver`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = rdb_codegen_llvm::driver::run(args) {
        let message = e.to_string();
        if !message.is_empty() {
            eprintln!("{message}");
        }
        std::process::exit(e.exit_code());
    }
}
