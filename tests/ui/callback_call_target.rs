use rdb_macros::{debug_only, on_call};

fn step(n: u32) -> u32 {
    n + 1
}

#[debug_only]
#[on_call(step(1))]
fn stepped(n: u32) {
    println!("{n}");
}

fn main() {
    step(1);
}
