use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let v = vec![3, 1, 2];
    rdb_begin!();
    let before = v.len();
    rdb_end!();
    let doubled: Vec<i32> = v.iter().map(|x| {
        rdb_begin!();
        println!("{x} of {before}");
        rdb_end!();
        x * 2
    }).collect();
    println!("{doubled:?}");
}
