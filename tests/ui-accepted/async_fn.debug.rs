

async fn fetch(n: u32) -> u32 {
    ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&n,)), move |(n,)| {
    println!("{n}");
    });
    n + 1
}

fn main() {}
