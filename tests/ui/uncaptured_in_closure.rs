use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let limit = 5;
    let v: Vec<i32> = vec![1, 2, 3];
    v.iter().for_each(|x| {
        rdb_begin!();
        println!("{} of {}", x, limit);
        rdb_end!();
    });
}
