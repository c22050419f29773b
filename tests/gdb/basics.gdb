# Breakpoints (by function, temporary, conditional), stepping (step, next, finish, until),
# backtraces, frames, locals, printing (a thread-local too) and memory on a C replay; the
# program's output comes in program order and the replay ends as recorded.
# rdb-program: gdb_basics.c
break add
tbreak factorial if n == 3
info breakpoints
continue
bt
print a
print counter
print tls_value
print greeting
monitor when
continue
info locals
up
info locals
print p
print/x p.y
x/2dw &p
down
finish
next
next
step
delete 1
continue
bt
frame 1
print n
info threads
info sharedlibrary
break scale
continue
print *p
print by
finish
until 43
print s
print f
x/s greeting
continue
