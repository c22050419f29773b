use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let v = vec![1, 2, 3];
    v.iter().for_each(|x| {
        rdb_begin!();
        println!("{x}");
        rdb_end!();
    });
}
