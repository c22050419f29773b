use rdb_macros::{debug_only, on_syscall};

struct Log;

impl Log {
    #[debug_only]
    #[on_syscall(write)]
    fn written(&self) {}
}

fn main() {}
