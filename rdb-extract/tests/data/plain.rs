use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

struct Vm { name: String, stack: Vec<i64> }

impl Vm {
    fn run(&mut self, code: &[i64]) -> i64 {
        let mut pc = 0;
        while pc < code.len() {
            self.stack.push(code[pc]);
            pc += 1;
        }
        COUNTER.fetch_add(1, Ordering::Relaxed);
        self.stack.iter().sum()
    }
}

fn main() {
    let mut vm = Vm { name: "x".into(), stack: vec![] };
    println!("{}", vm.run(&[1, 2, 3])); // trailing
}
