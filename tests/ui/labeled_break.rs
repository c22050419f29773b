use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    'outer: for i in 0..10 {
        rdb_begin!();
        for j in 0..i {
            if j == 5 {
                break 'outer;
            }
        }
        rdb_end!();
    }
}
