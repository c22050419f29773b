use rdb_macros::{debug_only, on_syscall};

#[debug_only]
#[on_syscall(read, write)]
fn traced<T: Default>() {
    let _ = T::default();
}

fn main() {}
