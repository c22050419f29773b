

async fn fetch(n: u32) -> u32 {
    ::rdb_region::region::<1, _, _>((&n,), move |(n,)| {
    println!("{n}");
    });
    n + 1
}

fn main() {}
