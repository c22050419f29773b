/* Debug code for spread.c: allocations of the sizes grow() asks for, and every change of the
 * total, in whichever thread or process they happen. */
#include <stdio.h>
#include "rdb.h"

RDB_ON_CALL(malloc) void allocating(unsigned long size) {
    if (size > 1000 && size < 1010)
        printf("[rdb] malloc(%lu)\n", size);
}

RDB_ON_WRITE(total) void total_written(long old, long new, const rdb_access *access) {
    printf("[rdb] total %ld -> %ld (thread %u)\n", old, new, access->thread);
}
