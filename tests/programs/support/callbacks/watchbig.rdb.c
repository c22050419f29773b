/* Debug code for watchbig.c: the system call that fills part of the watched record. */
#include <stdio.h>
#include "rdb.h"

RDB_ON_SYSCALL(read, after) void got(const rdb_syscall *call) {
    printf("[rdb] read of %lu bytes\n", (unsigned long)call->data_len);
}
