use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let x = 1;
    rdb_begin!();
    if x > 0 {
        rdb_begin!();
        println!("inner {x}");
        rdb_end!();
    }
    rdb_end!();
}
