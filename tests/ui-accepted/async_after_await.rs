use rdb_macros::{rdb_begin, rdb_end};

async fn tick() {}

// Locals bound before an `.await` that can run before the region (between
// them, or in a loop around the region) are marked with that `.await`: the
// build serves them only from the future, never from a stale `poll` frame.
async fn work(id: u64, name: String) -> usize {
    let len = name.len();
    tick().await;
    let after = len + 1;
    rdb_begin!();
    println!("{id} {name} {len} {after}");
    rdb_end!();
    let mut sum = 0;
    for i in 0..3 {
        rdb_begin!();
        println!("{i} {sum}");
        rdb_end!();
        sum += i;
        tick().await;
    }
    if let Some(x) = Some(sum) {
        rdb_begin!();
        println!("{x}");
        rdb_end!();
    }
    let total = async {
        let inner = 2;
        rdb_begin!();
        println!("{inner} {after}");
        rdb_end!();
        tick().await;
        inner + after
    }
    .await;
    after + sum + total
}

fn main() {
    let _ = work(1, String::new());
}
