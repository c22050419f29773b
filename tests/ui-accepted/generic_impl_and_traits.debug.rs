
use std::fmt::Debug;

struct Stack<T> {
    items: Vec<T>,
}

impl<T: Debug + Clone> Stack<T> {
    fn push(&mut self, item: T) {
        ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&item, &self,)), move |(item, __rdb_self,)| {
        println!("push {:?} onto {:?}", (*item), (*__rdb_self).items);
        });
        self.items.push(item);
    }
}

trait Shape {
    fn area(&self) -> f64;
    fn describe(&self) -> String {
        let area = self.area();
        ::rdb_region::region::<2, _, _>(::rdb_region::types_of!((&area,)), move |(area,)| {
        println!("area {area}");
        });
        format!("{area:.1}")
    }
}

struct Square(f64);

impl Shape for Square {
    fn area(&self) -> f64 {
        ::rdb_region::region::<3, _, _>(::rdb_region::types_of!((&self,)), move |(__rdb_self,)| {
        println!("side {}", (*__rdb_self).0);
        });
        self.0 * self.0
    }
}

fn total<const N: usize>(values: [u32; N], log: &mut impl std::io::Write) -> u32 {
    let sum = values.iter().sum();
    ::rdb_region::region::<4, _, _>(::rdb_region::types_of!((&sum,)), move |(sum,)| {
    println!("{N} values, sum {sum}");
    });
    let _ = writeln!(log, "{sum}");
    sum
}

fn main() {
    let mut s = Stack { items: Vec::new() };
    s.push(1u8);
    println!("{}", Square(2.0).describe());
    println!("{}", total([1, 2, 3], &mut std::io::sink()));
}
