use rdb_macros::{rdb_begin, rdb_end};

fn main() {
    let factor = 3;
    let mut words = vec!["pear", "fig", "apple"];
    words.sort_by(|a, b| {
        rdb_begin!();
        println!("compare {a} {b}");
        rdb_end!();
        a.len().cmp(&b.len())
    });
    let scaled: Vec<i32> = [1, 2].iter().map(|x| {
        rdb_begin!();
        println!("x = {x}, factor = {}", factor);
        rdb_end!();
        x * factor
    }).collect();
    let handle = std::thread::spawn(move || {
        let sum: i32 = scaled.iter().sum();
        rdb_begin!();
        println!("sum {sum} of {:?}", scaled);
        rdb_end!();
        sum
    });
    fn nested(n: u64) -> u64 {
        rdb_begin!();
        println!("nested {n}");
        rdb_end!();
        n * 2
    }
    println!("{} {}", handle.join().unwrap(), nested(4));
}
