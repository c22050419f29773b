# Going back across threads: reverse-continue lands at each earlier breakpoint hit, in
# whichever thread it was, with the state it had going forwards; a reverse watchpoint finds
# the last write of a global by another thread.
# rdb-program: gdb_threads.c
# rdb-support: state.py
track-state total mine
set print frame-arguments none
break work
continue
save-point
continue
save-point
continue
save-point
continue
save-point
continue
save-point
print id
print round
reverse-continue
check-forward
print id
reverse-continue
check-forward
print id
reverse-continue
check-forward
print id
reverse-continue
check-forward
print id
info threads
delete
continue
