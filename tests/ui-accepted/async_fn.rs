use rdb_macros::{rdb_begin, rdb_end};

async fn fetch(n: u32) -> u32 {
    rdb_begin!();
    println!("{n}");
    rdb_end!();
    n + 1
}

fn main() {}
