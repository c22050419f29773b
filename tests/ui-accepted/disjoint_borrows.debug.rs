
use std::collections::HashMap;

// A region reads fields the program's live `&mut` borrows leave free, as a
// `println!` at the same place may: the region's arguments must not borrow
// `self` (or `entry`) in a way the borrow checker sees conflict.
struct Tally {
    counts: HashMap<String, u64>,
    total: u64,
}

impl Tally {
    fn add(&mut self, key: String, by: u64) {
        let entry = self.counts.entry(key.clone()).or_insert(0);
        *entry += by;
        ::rdb_region::region::<1, _, _>(::rdb_region::types_of!((&key, &entry, &self,)), move |(key, entry, __rdb_self,)| {
        println!("key={key} entry={} total_before={}", *(*entry), (*__rdb_self).total);
        });
        self.total += by;
        *entry += 0;
    }
}

fn main() {
    let mut t = Tally { counts: HashMap::new(), total: 0 };
    t.add("a".into(), 2);
    let mut v = vec![1, 2, 3];
    let first = &mut v[0];
    *first += 1;
    ::rdb_region::region::<2, _, _>(::rdb_region::types_of!((&first,)), move |(first,)| {
    println!("first={first}");
    });
    *first += 1;
}
