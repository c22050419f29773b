

fn show<T: std::fmt::Debug>(items: &[T]) {
    ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&items,)), move |(items,)| {
    println!("{items:?}");
    });
}

fn main() {
    show(&[1, 2]);
}
