use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let mut i = 0;
    while i < 10 {
        i += 1;
        rdb_begin!();
        for j in 0..i {
            if j == 2 {
                continue; // fine: the loop is inside the region
            }
        }
        if i % 2 == 0 {
            continue;
        }
        rdb_end!();
    }
}
