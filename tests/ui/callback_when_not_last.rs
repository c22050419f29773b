use rdb_macros::{debug_only, on_syscall};

#[debug_only]
#[on_syscall(before, write)]
fn early() {}

fn main() {}
