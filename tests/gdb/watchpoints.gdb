# Hardware watchpoints on a C replay: write (watch), read (rwatch) and access (awatch), on a
# global and a thread-local.
# rdb-program: gdb_basics.c
watch counter
continue
continue
delete
rwatch counter
continue
bt 1
delete
awatch tls_value
continue
continue
delete
continue
