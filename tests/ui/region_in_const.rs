use rdb_macros::{rdb_begin, rdb_end};

const LIMIT: i32 = {
    rdb_begin!();
    rdb_end!();
    10
};

fn main() {
    println!("{LIMIT}");
}
