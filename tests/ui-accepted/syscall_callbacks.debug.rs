
use rdb::Syscall;

#[allow(dead_code, unused)]
static mut WRITES: usize = 0;

#[allow(dead_code, unused)]
#[allow(dead_code, non_snake_case)] fn __rdb_callback_1() { ::rdb_region::on_syscall::<1, _, _>(count_writes); }
fn count_writes(call: &Syscall) {
    unsafe { WRITES += call.data().len() };
}

#[allow(dead_code, unused)]
#[allow(dead_code, non_snake_case)] fn __rdb_callback_2() { ::rdb_region::on_syscall::<2, _, _>(opening); }
fn opening() {
    println!("opening at {}", rdb::backtrace());
}

mod inner {
    #[allow(dead_code, unused)]
    #[allow(dead_code, non_snake_case)] fn __rdb_callback_3() { ::rdb_region::on_syscall::<3, _, _>(leaving); }
    fn leaving(call: &rdb::Syscall) {
        println!("exit {}", call.arg(0));
    }
}

fn main() {
    println!("hello");
}
