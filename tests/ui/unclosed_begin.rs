use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let x = 1;
    rdb_begin!();
    println!("{x}");
}
