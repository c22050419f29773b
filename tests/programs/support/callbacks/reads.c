/* A limit read by a check in a loop and a function whose results are summed: the callback
 * test checks read callbacks of a global, return callbacks and a backtrace from a callback. */
#include <stdio.h>

long limit = 3;

static int under(long v) {
    return v < limit;
}

static long square(long v) {
    return v * v;
}

int main(void) {
    long sum = 0;
    for (long i = 0; under(i); i++)
        sum += square(i);
    printf("sum %ld\n", sum);
    return 0;
}
