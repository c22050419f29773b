use rdb_macros::{rdb_begin, rdb_end};

fn check(v: &[i32]) -> bool {
    rdb_begin!();
    if v.is_empty() {
        return false;
    }
    rdb_end!();
    true
}

fn main() {
    check(&[1]);
}
