/* Debug code for alloc.c: count malloc calls, see each insert. */
#include <stdio.h>
#include "rdb.h"

static long mallocs;
static unsigned long bytes;

RDB_ON_CALL(malloc) void allocating(unsigned long size) {
    mallocs++;
    bytes += size;
}

RDB_ON_CALL(insert) void inserting(void *head, int value) {
    (void)head;
    printf("[rdb] insert(%d) after %ld mallocs\n", value, mallocs);
}

RDB_ON_SYSCALL(write, after) void wrote(const rdb_syscall *call) {
    printf("[rdb] write of %lu bytes by %s\n", (unsigned long)call->data_len, rdb_location());
}

RDB_ON_SYSCALL(exit_group, before) void leaving(void) {
    printf("[rdb] malloc was called %ld times (%lu bytes)\n", mallocs, bytes);
}
