use {rdb_macros::rdb_begin, std::fmt::Write};
use rdb_macros::rdb_end;

fn main() {
    let mut s = String::new();
    write!(s, "x").unwrap();
    rdb_begin!();
    println!("{s}");
    rdb_end!();
}
