use rdb_macros::{rdb_begin, rdb_end};

struct Counter {
    hits: u64,
}

impl Counter {
    fn hit(&mut self) {
        rdb_begin!();
        self.hits += 1;
        rdb_end!();
        self.hits += 1;
    }
}

fn main() {
    Counter { hits: 0 }.hit();
}
