// A small single-threaded program for gdb on replays (tests/gdb/basics*.gdb): calls, a loop, a
// recursion, a global, a thread-local, a struct and a string.
// rdb-build: -O0 -g
#include <stdio.h>
#include <string.h>

struct point {
    int x, y;
};

int counter = 5;
__thread int tls_value = 7;
static char greeting[32] = "hello";

int add(int a, int b) {
    counter++;
    return a + b;
}

int factorial(int n) {
    if (n <= 1)
        return 1;
    return n * factorial(n - 1);
}

static int scale(struct point *p, int by) {
    p->x *= by;
    p->y *= by;
    return p->x + p->y;
}

int main(void) {
    int x = 3;
    struct point p = {1, 2};
    for (int i = 0; i < 3; i++) {
        x = add(x, i);
        printf("step %d: x=%d\n", i, x);
    }
    tls_value += x;
    int f = factorial(5);
    int s = scale(&p, 10);
    strcat(greeting, ", world");
    printf("%s: x=%d counter=%d tls=%d f=%d s=%d\n", greeting, x, counter, tls_value, f, s);
    return 0;
}
