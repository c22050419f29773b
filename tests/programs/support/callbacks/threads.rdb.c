/* Debug code for threads.c: every write, with its thread, and every call of say(). */
#include <stdio.h>
#include "rdb.h"

static int said;

RDB_ON_CALL(say) void saying(const char *who, int i) {
    said++;
    printf("[rdb] say(%s, %d) #%d\n", who, i, said);
}

RDB_ON_SYSCALL(write, after) void wrote(const rdb_syscall *call) {
    printf("[rdb] thread %u wrote %.*s", call->thread, (int)call->data_len, (const char *)call->data);
}
