use rdb_macros::{debug_only, rdb_begin, rdb_end};

#[debug_only]
fn dump(v: &[i32]) {
    rdb_begin!();
    println!("{v:?}");
    rdb_end!();
}

fn main() {}
