use std::sync::atomic::{AtomicUsize, Ordering};
use rdb_macros::{debug_only, rdb_begin, rdb_end};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Renders a stack.
#[debug_only]
fn render(s: &[i64]) -> String {
    format!("{s:?}")
}

#[debug_only]
static HITS: AtomicUsize = AtomicUsize::new(0);

struct Vm { name: String, stack: Vec<i64> }

impl Vm {
    fn run(&mut self, code: &[i64]) -> i64 {
        let mut pc = 0;
        while pc < code.len() {
            rdb_begin!();
            let depth = self.stack.len();
            HITS.fetch_add(1, Ordering::Relaxed);
            println!("pc={pc} depth={depth} {} {}", render(&self.stack), code[pc]);
            for i in 0..depth { if i > 3 { break; } }
            rdb_end!();
            self.stack.push(code[pc]);
            pc += 1;
        }
        COUNTER.fetch_add(1, Ordering::Relaxed);
        rdb_macros::rdb_begin!();
        println!("{} {}", self.name, COUNTER.load(Ordering::Relaxed));
        rdb_macros::rdb_end!();
        self.stack.iter().sum()
    }
}

fn main() {
    let mut vm = Vm { name: "x".into(), stack: vec![] };
    println!("{}", vm.run(&[1, 2, 3])); rdb_begin!(); dbg!(vm.name.len()); rdb_end!(); // trailing
}
