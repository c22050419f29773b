/* rdb find --expr: one long stretch of user code (no system call) between two events, inside
 * which the static `audited` and the place `ACCOUNT->audited` (behind a pointer) change once,
 * at iteration AT of ITERS (about 7 instructions per iteration at -O1: see bench/find_expr.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

unsigned long audited = 1;
struct account {
    long id;
    unsigned long audited;
} *ACCOUNT;

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 1000000;
    long at = argc > 2 ? atol(argv[2]) : iters / 2;
    ACCOUNT = calloc(1, sizeof *ACCOUNT);
    ACCOUNT->audited = 1;
    unsigned long x = (unsigned long)getpid(); /* the event before the stretch */
    for (long i = 0; i < iters; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        if (i == at) {
            audited = x | 1; /* the statement rdb find --expr audited must name */
            ACCOUNT->audited = x | 1; /* the statement rdb find --expr 'ACCOUNT->audited' must name */
        }
    }
    printf("%lu %lu %lu\n", x, audited, ACCOUNT->audited); /* the event after it */
    return 0;
}
