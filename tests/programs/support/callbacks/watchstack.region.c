/* A record on main's stack, changed before and after a signal whose handler runs on the same
 * stack page, and a signal action whose old value the kernel writes there. The callback test
 * watches the record from a region (watchstack.region.c: this file plus the region) with page
 * protection: the kernel's writes on the protected stack page must still succeed. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "rdb.h"

struct record {
    long v[8];
};

static volatile int got;

static void on_usr1(int sig) {
    got = sig;
}

int main(void) {
    struct record r;
    memset(&r, 0, sizeof r);
    rdb_begin
    rdb_watch(&r, sizeof r);
    rdb_end
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, &old);
    r.v[0] = 1;
    raise(SIGUSR1);
    r.v[7] = 2;
    printf("%ld %ld %d\n", r.v[0], r.v[7], got);
    return 0;
}
