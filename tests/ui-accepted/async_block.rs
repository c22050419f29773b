use rdb_macros::{rdb_begin, rdb_end};

async fn double(n: u32) -> u32 {
    n * 2
}

fn main() {
    let base = 10;
    let task = async move {
        let doubled = double(base).await;
        rdb_begin!();
        println!("base {} doubled {doubled}", base);
        rdb_end!();
        doubled
    };
    drop(task);
}
