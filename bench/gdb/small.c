/* bench/gdb.sh: a workload gdb's own `record full` handles (a short loop without syscalls). */
#include <stdio.h>

long total;

__attribute__((noinline)) void hit(long i) { total += i; }

int main(void) {
    for (long i = 0; i < 200; i++) {
        for (long k = 0; k < 50; k++)
            total = total * 31 + k;
        hit(i);
    }
    printf("%ld\n", total);
    return 0;
}
