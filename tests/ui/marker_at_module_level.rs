use rdb_macros::{rdb_begin, rdb_end};

rdb_begin!();

fn main() {}

rdb_end!();
