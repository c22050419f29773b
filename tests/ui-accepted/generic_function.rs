use rdb_macros::{rdb_begin, rdb_end};

fn show<T: std::fmt::Debug>(items: &[T]) {
    rdb_begin!();
    println!("{items:?}");
    rdb_end!();
}

fn main() {
    show(&[1, 2]);
}
