use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let mut v = vec![3, 1, 2];
    rdb_begin!();
    let r = &mut v;
    println!("{r:?}");
    rdb_end!();
    v.sort();
}
