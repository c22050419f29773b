// A Rust program: random SipHash keys, the clock, a child through posix_spawn, a caught panic.
// rdb-nondeterministic
// rdb-stdout-contains: "panicked: true"
use std::collections::HashMap;
fn main() {
    let m: HashMap<u32, u32> = (0..8).map(|i| (i, i * 2)).collect(); // random SipHash keys
    println!("{:?} {:?}", m.iter().collect::<Vec<_>>(), std::time::SystemTime::now());
    let out = std::process::Command::new("echo").arg("child").output().unwrap(); // posix_spawn
    print!("{}", String::from_utf8_lossy(&out.stdout));
    let r = std::panic::catch_unwind(|| None::<u8>.unwrap());
    println!("panicked: {}", r.is_err());
}
