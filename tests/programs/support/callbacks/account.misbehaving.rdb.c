/* Debug code for account.c that goes wrong in every way a callback can: it writes
 * program memory, hangs, then crashes; the replay reports each and goes on. */
#include <stdint.h>
#include "rdb.h"

struct account {
    char owner[8];
    long balance;
};

RDB_ON_WRITE(account) void account_written(struct account old, struct account new, const rdb_access *access) {
    if (old.balance == new.balance)
        return;
    if (new.balance == 100)
        *(long *)(uintptr_t)access->address = 0; /* a write to the program */
    if (new.balance == 128)
        for (;;) /* a hang */
            ;
    if (new.balance == 2)
        *(volatile int *)0 = 1; /* a crash */
}
