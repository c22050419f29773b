/* Debug code for watchmap.c: the program's own fault. */
#include <stdio.h>
#include "rdb.h"

RDB_ON_SYSCALL(mprotect, after) void protected(const rdb_syscall *call) {
    printf("[rdb] mprotect(..., %lu) = %ld\n", (unsigned long)call->args[2], (long)call->result);
}
