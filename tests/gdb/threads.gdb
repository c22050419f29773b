# Threads of a C replay: every thread listed by its recorded id, each one's stack and
# thread-locals readable, switching threads, a watchpoint armed in every thread.
# rdb-program: gdb_threads.c
break work if id == 2 && round == 1
continue
print id
print round
print mine
print total
# Frames inside libc show recorded thread ids among their arguments.
set print frame-arguments none
info threads
bt 2
thread 1
print mine
thread 2
print mine
thread 3
print mine
delete
watch total
continue
continue
delete
continue
