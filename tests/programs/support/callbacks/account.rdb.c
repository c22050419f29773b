/* Debug code for account.c: who changes the balance? */
#include <stdio.h>
#include "rdb.h"

struct account {
    char owner[8];
    long balance;
};

RDB_ON_WRITE(account) void account_written(struct account old, struct account new, const rdb_access *access) {
    if (old.balance != new.balance)
        printf("[rdb] balance %ld -> %ld at %s (thread %u)\n", old.balance, new.balance, rdb_location(), access->thread);
}
