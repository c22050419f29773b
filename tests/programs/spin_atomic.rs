// A Rust thread spins on an atomic flag (`spin_loop` hint, no syscall) until a spawned thread
// sets it. Under rdb's one-thread-at-a-time schedule the spinning thread is switched out at an
// interruption point (a fixed point of its loop), the other thread runs, and replay finds the
// same point again.
// rdb-replays: 2
// rdb-stdout: "value 530, after 3 rounds\n"
// rdb-events-contain: "interrupted in user code"
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

static ROUND: AtomicU64 = AtomicU64::new(0);
static VALUE: AtomicU64 = AtomicU64::new(0);

fn main() {
    let setter = thread::spawn(|| {
        for round in 1..=3 {
            while ROUND.load(Ordering::Acquire) != round - 1 {
                std::hint::spin_loop();
            }
            let mut x = round;
            for i in 0..1000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
            VALUE.fetch_add(x % 1000, Ordering::Relaxed);
            ROUND.store(round * 10, Ordering::Release);
        }
    });
    for round in 1..=3u64 {
        while ROUND.load(Ordering::Acquire) != round * 10 {
            std::hint::spin_loop();
        }
        ROUND.store(round, Ordering::Release);
    }
    setter.join().unwrap();
    println!("value {}, after 3 rounds", VALUE.load(Ordering::Relaxed) % 1000);
}
