use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let x = rdb_begin!();
    println!("{x:?}");
    rdb_end!();
}
