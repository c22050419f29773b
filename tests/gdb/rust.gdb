# A Rust replay: a breakpoint in a Rust callback that C (qsort) calls, backtraces through Rust
# and C, Rust values, the spawned thread.
# rdb-program: gdb_rust.rs
set print frame-arguments none
break gdb_rust::by_balance
continue
bt 8
print *(a as *const gdb_rust::Account)
finish
continue
frame function gdb_rust::sort
print accounts
print accounts[1]
frame function gdb_rust::main
print accounts.len
delete
break gdb_rust::sort
continue
thread
bt 2
delete
continue
