# `rdb gdb --goto EVENT` starts at that event; `monitor when` says where the replay is.
# rdb-program: gdb_basics.c
# rdb-args: --goto 41
monitor when
bt 1
break scale
continue
monitor when
continue
