use rdb_macros::on_syscall;

#[on_syscall(write)]
fn who_writes(call: &rdb::Syscall) {
    println!("{call:?}");
}

fn main() {}
