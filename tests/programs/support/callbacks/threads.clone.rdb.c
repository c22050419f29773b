/* Debug code for threads.c: the system calls that create its threads, before and after. */
#include <stdio.h>
#include "rdb.h"

RDB_ON_SYSCALL(clone, clone3, before) void creating(const rdb_syscall *call) {
    printf("[rdb] before %s by %u: result %ld\n", call->name, call->thread, (long)call->result);
}

RDB_ON_SYSCALL(clone, clone3, after) void created(const rdb_syscall *call) {
    printf("[rdb] after %s by %u: result %ld\n", call->name, call->thread, (long)call->result);
}
