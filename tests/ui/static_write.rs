use rdb_macros::{rdb_begin, rdb_end};

static mut LEVEL: u32 = 0;

fn main() {
    rdb_begin!();
    unsafe { LEVEL = 3 };
    rdb_end!();
}
