//! `cargo-rdb` doubles as the rustc wrapper of the debug build
//! (`RUSTC_WORKSPACE_WRAPPER`): cargo only applies that wrapper to local
//! (path) packages, so dependencies compile as usual while the user's crates
//! get `-C link-dead-code`, which makes rustc instantiate the region helpers
//! of functions nothing calls (also private functions of libraries).

use std::process::Command;

/// Environment variable marking a wrapper call.
pub const ENV: &str = "__CARGO_RDB_RUSTC_WRAPPER";

/// Whether this process was started by cargo as the rustc wrapper.
pub fn is_wrapper_call() -> bool {
    std::env::var_os(ENV).is_some() && std::env::args_os().nth(1).is_some_and(|a| a != "rdb")
}

/// Runs rustc (`argv[1]`) with the remaining arguments plus the debug
/// module's flags, and exits with its status.
pub fn run() -> ! {
    let mut args = std::env::args_os().skip(1);
    let rustc = args.next().expect("checked by is_wrapper_call");
    let rest: Vec<_> = args.collect();
    let mut cmd = Command::new(&rustc);
    cmd.args(&rest);
    // Queries such as `rustc -vV` or `--print` must not get codegen flags.
    let compiles = rest.windows(2).any(|w| w[0] == "--crate-name" && w[1] != "___");
    if compiles {
        // Debug information tells which instantiation of a generic region
        // each trampoline belongs to (see `artefacts`), whatever the profile
        // says; and no optimization: at -O LLVM deletes the region helpers
        // nothing calls (with the table entries they emit), link-dead-code or
        // not. Type layouts do not depend on the optimization level.
        cmd.args([
            "-C",
            "link-dead-code",
            "--cap-lints",
            "allow",
            "-C",
            "debuginfo=2",
            "-C",
            "strip=none",
            "-C",
            "opt-level=0",
        ]);
    }
    match cmd.status() {
        Ok(s) => std::process::exit(s.code().unwrap_or(101)),
        Err(e) => {
            eprintln!("error: cargo rdb could not run rustc `{}`: {e}", rustc.to_string_lossy());
            std::process::exit(101);
        }
    }
}
