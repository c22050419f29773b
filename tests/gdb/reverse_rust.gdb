# Going back in a Rust replay, through C: reverse-continue to earlier calls of a Rust callback
# that qsort (C) makes; reverse-stepi, reverse-finish and reverse-stepi again from the callback
# back into the C caller; each lands where the replay was going forwards.
# rdb-program: gdb_rust.rs
# rdb-support: state.py
set print frame-arguments none
break gdb_rust::by_balance
continue
save-point
continue
save-point
reverse-continue
check-forward
delete
finish
record-forward gdb_rust::by_balance
record-forward caller
reverse-stepi
check-forward
bt 1
reverse-finish
check-forward
bt 1
reverse-stepi
check-forward
continue
