/* Debug code for watchstack.c: the signal's handler is set. */
#include <stdio.h>
#include "rdb.h"

RDB_ON_SYSCALL(rt_sigaction, after) void action(const rdb_syscall *call) {
    printf("[rdb] rt_sigaction(%lu) = %ld\n", (unsigned long)call->args[0], (long)call->result);
}
