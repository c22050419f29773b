

fn main() {
    let v = vec![1, 2, 3];
    v.iter().for_each(|x| {
        ::rdb_region::region::<1, _, _>((&x,), move |(x,)| {
        println!("{x}");
        });
    });
}
