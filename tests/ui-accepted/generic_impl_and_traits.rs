use rdb_macros::{rdb_begin, rdb_end};
use std::fmt::Debug;

struct Stack<T> {
    items: Vec<T>,
}

impl<T: Debug + Clone> Stack<T> {
    fn push(&mut self, item: T) {
        rdb_begin!();
        println!("push {:?} onto {:?}", item, self.items);
        rdb_end!();
        self.items.push(item);
    }
}

trait Shape {
    fn area(&self) -> f64;
    fn describe(&self) -> String {
        let area = self.area();
        rdb_begin!();
        println!("area {area}");
        rdb_end!();
        format!("{area:.1}")
    }
}

struct Square(f64);

impl Shape for Square {
    fn area(&self) -> f64 {
        rdb_begin!();
        println!("side {}", self.0);
        rdb_end!();
        self.0 * self.0
    }
}

fn total<const N: usize>(values: [u32; N], log: &mut impl std::io::Write) -> u32 {
    let sum = values.iter().sum();
    rdb_begin!();
    println!("{N} values, sum {sum}");
    rdb_end!();
    let _ = writeln!(log, "{sum}");
    sum
}

fn main() {
    let mut s = Stack { items: Vec::new() };
    s.push(1u8);
    println!("{}", Square(2.0).describe());
    println!("{}", total([1, 2, 3], &mut std::io::sink()));
}
