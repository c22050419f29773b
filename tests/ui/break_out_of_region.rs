use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    for i in 0..10 {
        rdb_begin!();
        if i == 3 {
            break;
        }
        rdb_end!();
        println!("{i}");
    }
}
