

// A `let` in one region is visible in later regions of the same call: the
// first region returns it, keyed by the call's frame address (argument 0).
fn depth(n: u32) -> u32 {
    let __rdb_shared_1 = ::rdb_region::region_shared::<1, _, _, _, _>(::rdb_region::types_of!((&n,)), (), move |(n,), ()| {
    let entered = (*n) * 10;
    let label = format!("depth {n}");
    ; (entered, label,) });
    let below = if n == 0 { 0 } else { depth(n - 1) + 1 };
    let __rdb_shared_2 = ::rdb_region::region_shared::<2, _, _, _, _>(::rdb_region::types_of!((&below,)), (&__rdb_shared_1,), move |(below,), ((entered, label,),)| {
    println!("{label}: entered {entered}, below {below}");
    let checked = entered + (*below);
    ; (checked,) });
    let __rdb_shared_3 = ::rdb_region::region_shared::<3, _, _, _, _>(::rdb_region::types_of!(()), (&__rdb_shared_1, &__rdb_shared_2,), move |(), ((entered, label,), (checked,),)| {
    println!("{label} checked {checked}");
    ; () });
    below
}

fn main() {
    depth(2);
}
