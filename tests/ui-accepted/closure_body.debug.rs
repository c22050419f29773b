

fn main() {
    let v = vec![1, 2, 3];
    v.iter().for_each(|x| {
        ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&x,)), move |(x,)| {
        println!("{x}");
        });
    });
}
