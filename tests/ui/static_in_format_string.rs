use rdb_macros::{rdb_begin, rdb_end};
use std::sync::atomic::AtomicU32;

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn main() {
    rdb_begin!();
    println!("{COUNTER:?}");
    rdb_end!();
}
