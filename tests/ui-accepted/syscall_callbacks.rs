use rdb_macros::{debug_only, on_syscall};
use rdb::Syscall;

#[debug_only]
static mut WRITES: usize = 0;

#[debug_only]
#[on_syscall(write, writev, after)]
fn count_writes(call: &Syscall) {
    unsafe { WRITES += call.data().len() };
}

#[debug_only]
#[rdb_macros::on_syscall(openat, before)]
fn opening() {
    println!("opening at {}", rdb::backtrace());
}

mod inner {
    #[rdb_macros::debug_only]
    #[rdb_macros::on_syscall(exit_group, before)]
    fn leaving(call: &rdb::Syscall) {
        println!("exit {}", call.arg(0));
    }
}

fn main() {
    println!("hello");
}
