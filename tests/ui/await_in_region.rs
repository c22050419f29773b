use rdb_macros::{rdb_begin, rdb_end};

fn poll_it(fut: std::future::Ready<i32>) {
    rdb_begin!();
    let v = fut.await;
    println!("{v}");
    rdb_end!();
}

fn main() {}
