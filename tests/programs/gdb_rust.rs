// Rust for gdb on replays (tests/gdb/rust.gdb): a Rust callback called from C (libc's qsort),
// so backtraces go through Rust and C frames; a thread-local; a spawned thread.
// rdb-build: -g -C opt-level=0
use std::cell::Cell;
use std::ffi::c_void;
use std::os::raw::c_int;

thread_local!(static COMPARISONS: Cell<u32> = const { Cell::new(0) });

#[derive(Debug, Clone, Copy)]
struct Account {
    id: u32,
    balance: i64,
}

extern "C" {
    fn qsort(base: *mut c_void, n: usize, size: usize, cmp: extern "C" fn(*const c_void, *const c_void) -> c_int);
}

#[inline(never)]
extern "C" fn by_balance(a: *const c_void, b: *const c_void) -> c_int {
    let (a, b) = unsafe { (&*(a as *const Account), &*(b as *const Account)) };
    COMPARISONS.with(|c| c.set(c.get() + 1));
    a.balance.cmp(&b.balance) as c_int
}

#[inline(never)]
fn sort(accounts: &mut [Account]) {
    unsafe { qsort(accounts.as_mut_ptr() as *mut c_void, accounts.len(), std::mem::size_of::<Account>(), by_balance) };
}

fn main() {
    let mut accounts: Vec<Account> =
        [(1, 300), (2, -20), (3, 125), (4, 7)].iter().map(|&(id, balance)| Account { id, balance }).collect();
    sort(&mut accounts);
    let worker = std::thread::spawn(|| {
        let mut mine = vec![Account { id: 9, balance: 2 }, Account { id: 8, balance: 1 }];
        sort(&mut mine);
        mine[0].id
    });
    let first = worker.join().unwrap();
    let n = COMPARISONS.with(|c| c.get());
    println!("{:?} first={first} comparisons={n}", accounts.iter().map(|a| a.id).collect::<Vec<_>>());
}
