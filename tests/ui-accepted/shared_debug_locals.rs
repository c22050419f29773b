use rdb_macros::{rdb_begin, rdb_end};

// A `let` in one region is visible in later regions of the same call: the
// first region returns it, keyed by the call's frame address (argument 0).
fn depth(n: u32) -> u32 {
    rdb_begin!();
    let entered = n * 10;
    let label = format!("depth {n}");
    rdb_end!();
    let below = if n == 0 { 0 } else { depth(n - 1) + 1 };
    rdb_begin!();
    println!("{label}: entered {entered}, below {below}");
    let checked = entered + below;
    rdb_end!();
    rdb_begin!();
    println!("{label} checked {checked}");
    rdb_end!();
    below
}

fn main() {
    depth(2);
}
