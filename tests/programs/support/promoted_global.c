/* clang -O2 keeps `total` in a register for the whole loop and stores it once after it: at the
 * region, memory still holds 0. The region must not print that as `total`. */
#include <stdio.h>
#include <stdlib.h>
#include "rdb.h"

long total;

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    for (int i = 1; i <= n; i++) {
        total += i * i;
        rdb_begin
        printf("rdb: total %ld\n", total);
        rdb_end
        if (total > 1000000)
            break;
    }
    printf("total %ld\n", total);
    return 0;
}
