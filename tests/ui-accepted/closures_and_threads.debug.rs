

fn main() {
    let factor = 3;
    let mut words = vec!["pear", "fig", "apple"];
    words.sort_by(|a, b| {
        ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&a, &b,)), move |(a, b,)| {
        println!("compare {a} {b}");
        });
        a.len().cmp(&b.len())
    });
    let scaled: Vec<i32> = [1, 2].iter().map(|x| {
        ::rdb_region::region::<2, _, _>(::rdb_region::types_of!((&x, &factor,)), move |(x, factor,)| {
        println!("x = {x}, factor = {}", (*factor));
        });
        x * factor
    }).collect();
    let handle = std::thread::spawn(move || {
        let sum: i32 = scaled.iter().sum();
        ::rdb_region::region::<3, _, _>(::rdb_region::types_of!((&sum, &scaled,)), move |(sum, scaled,)| {
        println!("sum {sum} of {:?}", (*scaled));
        });
        sum
    });
    fn nested(n: u64) -> u64 {
        ::rdb_region::region::<4, _, _>(::rdb_region::types_of!((&n,)), move |(n,)| {
        println!("nested {n}");
        });
        n * 2
    }
    println!("{} {}", handle.join().unwrap(), nested(4));
}
