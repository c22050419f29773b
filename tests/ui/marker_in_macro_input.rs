use rdb_macros::{rdb_begin, rdb_end};

macro_rules! items {
    ($($i:item)*) => { $($i)* };
}

items! {
    fn helper(x: i32) -> i32 {
        rdb_begin!();
        println!("{x}");
        rdb_end!();
        x + 1
    }
}

fn main() {
    println!("{}", helper(1));
}
