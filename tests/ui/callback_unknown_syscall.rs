use rdb_macros::{debug_only, on_syscall};

#[debug_only]
#[on_syscall(wirte, after)]
fn who_writes(call: &rdb::Syscall) {
    println!("{call:?}");
}

fn main() {}
