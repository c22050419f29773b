use rdb_macros::{rdb_begin, rdb_end};

fn parse(s: &str) -> Result<i32, std::num::ParseIntError> {
    rdb_begin!();
    let n: i32 = s.parse()?;
    println!("{n}");
    rdb_end!();
    s.parse()
}

fn main() {
    let _ = parse("1");
}
