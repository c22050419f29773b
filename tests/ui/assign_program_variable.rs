use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let mut total = 0;
    for i in 0..10 {
        total += i;
        rdb_begin!();
        total = 0;
        rdb_end!();
    }
    println!("{total}");
}
