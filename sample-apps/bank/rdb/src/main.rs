//! Accounts moved between by threads, then audited by tokio tasks. The
//! transfers race: the threads interleave differently on every run, so the
//! order of the log lines does too.

use rdb_macros::{rdb_begin, rdb_end};
use std::fmt::Debug;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// What happened, in order.
struct Ledger<T> {
    entries: Vec<T>,
}

impl<T: Debug + Clone> Ledger<T> {
    fn record(&mut self, entry: T) {
        rdb_begin!();
        println!("[rdb] record #{} {:?}", self.entries.len(), entry);
        rdb_end!();
        self.entries.push(entry);
    }
}

fn describe<T: Debug>(label: &str, value: &T) -> String {
    rdb_begin!();
    println!("[rdb] describe {label} = {:?}", value);
    rdb_end!();
    format!("{label}: {value:?}")
}

fn transfer(balances: &Mutex<Vec<i64>>, from: usize, to: usize, amount: i64, log: &mut impl Write) {
    let mut accounts = balances.lock().unwrap();
    let before = accounts[from];
    accounts[from] = before - amount;
    accounts[to] += amount;
    rdb_begin!();
    println!("[rdb] moved {amount} from {from} to {to} (had {before})");
    rdb_end!();
    let _ = writeln!(log, "moved {amount} from {from} to {to} (had {before})");
}

async fn audit(balances: Arc<Mutex<Vec<i64>>>, round: u32) -> i64 {
    let total: i64 = balances.lock().unwrap().iter().sum();
    tokio::task::yield_now().await;
    rdb_begin!();
    println!("[rdb] audit {round}: {total}");
    rdb_end!();
    println!("audit {round}: {total}");
    total
}

fn main() {
    let balances = Arc::new(Mutex::new(vec![100i64; 4]));
    let handles: Vec<_> = (0..3usize)
        .map(|t| {
            let shared = balances.clone();
            std::thread::spawn(move || {
                let mut log = Vec::new();
                for i in 0..4usize {
                    let amount = ((t * 7 + i) % 13 + 1) as i64;
                    rdb_begin!();
                    println!("[rdb] thread {t} step {i} amount {amount}");
                    rdb_end!();
                    transfer(&shared, t, (t + 1) % 4, amount, &mut log);
                }
                String::from_utf8(log).unwrap()
            })
        })
        .collect();
    let mut ledger = Ledger { entries: Vec::new() };
    for h in handles {
        ledger.record(h.join().unwrap());
    }
    for entry in &ledger.entries {
        print!("{entry}");
    }
    let snapshot = balances.lock().unwrap().clone();
    println!("{}", describe("balances", &snapshot));
    println!("{}", describe("threads", &ledger.entries.len()));

    let current = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let first = current.block_on(audit(balances.clone(), 1));
    let pool = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let shared = balances.clone();
    let second = pool.block_on(async move {
        let task = tokio::spawn(async move {
            let total = audit(shared, 2).await;
            rdb_begin!();
            println!("[rdb] task total {total}");
            rdb_end!();
            total * 2
        });
        task.await.unwrap()
    });
    let mut sorted = snapshot.clone();
    sorted.sort_by(|a, b| {
        rdb_begin!();
        println!("[rdb] compare {a} {b}");
        rdb_end!();
        b.cmp(a)
    });
    println!("totals {first} {second} sorted {sorted:?}");
}
