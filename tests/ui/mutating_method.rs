use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let mut stack = vec![1, 2];
    rdb_begin!();
    let copy = stack.clone(); // reading is fine
    stack.push(copy.len());
    rdb_end!();
    println!("{stack:?}");
}
