use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let x = 1;
    if x > 0 {
        rdb_begin!();
        println!("{x}");
    }
    rdb_end!();
}
