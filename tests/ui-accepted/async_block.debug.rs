

async fn double(n: u32) -> u32 {
    n * 2
}

fn main() {
    let base = 10;
    let task = async move {
        let doubled = double(base).await;
        ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&doubled, &base,)), move |(doubled, base,)| {
        println!("base {} doubled {doubled}", (*base));
        });
        doubled
    };
    drop(task);
}
