use rdb_macros::{rdb_begin, rdb_check, rdb_end};

fn main() {
    let v = vec![1, 2, 3];
    rdb_check!(v.len() < 3, "{v:?}");
    rdb_begin!();
    rdb_check!(v.len() <= 3, "len {}", v.len());
    rdb_end!();
}
