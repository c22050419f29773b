/* bench/gdb.sh: a long replay for gdb latencies. Each round computes a little, makes a
   syscall (a replay stop) and, every STRIDE rounds, calls hit() (where gdb breaks). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

unsigned long state = 1469598103934665603UL;
long hits;

__attribute__((noinline)) void hit(long round) {
    hits++;
    state ^= (unsigned long)round;
}

int main(int argc, char **argv) {
    long rounds = atol(argv[1]), stride = atol(argv[2]), work = atol(argv[3]);
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < work; i++)
            state = (state ^ (unsigned long)i) * 1099511628211UL;
        getppid();
        if (r % stride == 0)
            hit(r);
    }
    printf("%lx %ld\n", state, hits);
    return 0;
}
