use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    rdb_begin!();
    let x = ;
    rdb_end!();
}
