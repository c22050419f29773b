/* Debug code for reads.c: each read of the limit with its place, each result of square(), and
 * the program's stack when square(2) is called. */
#include <stdio.h>
#include "rdb.h"

RDB_ON_READ(limit) void limit_read(long old, long new, const rdb_access *access) {
    printf("[rdb] limit %ld (changed: %d) read at %s\n", new, (int)(old != new), rdb_location());
}

RDB_ON_RETURN(square) void squared(long value) {
    printf("[rdb] square returned %ld\n", value);
}

RDB_ON_CALL(square) void squaring(long v) {
    if (v == 2)
        printf("[rdb] stack of square(2):\n%s\n", rdb_backtrace());
}
