# A two-process replay: gdb debugs the child (`--pid` names its recorded id) and sees it exit
# with its own status; the parent replays alongside and prints what it recorded.
# rdb-program: gdb_fork.c
# rdb-args: --pid {first-child}
break child_work
continue
print n
print shared_before_fork
bt
finish
continue
