

async fn tick() {}

// Locals bound before an `.await` that can run before the region (between
// them, or in a loop around the region) are marked with that `.await`: the
// build serves them only from the future, never from a stale `poll` frame.
async fn work(id: u64, name: String) -> usize {
    let len = name.len();
    tick().await;
    let after = len + 1;
    ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&id, &name, &len, &after,)), move |(id, name, len, after,)| {
    println!("{id} {name} {len} {after}");
    });
    let mut sum = 0;
    for i in 0..3 {
        ::rdb_region::region::<2, _, _>(::rdb_region::types_of!((&i, &sum,)), move |(i, sum,)| {
        println!("{i} {sum}");
        });
        sum += i;
        tick().await;
    }
    if let Some(x) = Some(sum) {
        ::rdb_region::region::<3, _, _>(::rdb_region::types_of!((&x,)), move |(x,)| {
        println!("{x}");
        });
    }
    let total = async {
        let inner = 2;
        ::rdb_region::region::<4, _, _>(::rdb_region::types_of!((&inner, &after,)), move |(inner, after,)| {
        println!("{inner} {after}");
        });
        tick().await;
        inner + after
    }
    .await;
    after + sum + total
}

fn main() {
    let _ = work(1, String::new());
}
