# Every reverse command on a C replay lands exactly where the replay was at some instruction
# going forwards (same registers, stack and globals), and earlier each time (checked by
# support/state.py against every state of a forward pass).
# rdb-program: gdb_basics.c
# rdb-support: state.py
track-state counter tls_value greeting
break gdb_basics.c:36 if i == 0
continue
delete
record-forward scale
watch counter
reverse-continue
check-forward
print counter
delete
reverse-finish
check-forward
break add
reverse-continue
check-forward
delete
reverse-stepi
check-forward
reverse-stepi
check-forward
next
next
next
moved-forward
check-forward
reverse-next
check-forward
reverse-next
check-forward
reverse-step
check-forward
bt 1
reverse-finish
check-forward
delete
continue
