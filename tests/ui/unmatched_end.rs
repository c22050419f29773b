use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let x = 1;
    println!("{x}");
    rdb_end!();
}
