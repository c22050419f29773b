/* Driven by tests/session.rs: a debugger breaks in `bump`, steps, watches `total`, and looks
   at every thread while the replay is halted. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

long total;
__thread long mine;

__attribute__((noinline)) long bump(long by) {
    mine += by;
    total += by;
    return total;
}

static void *worker(void *arg) {
    for (int i = 0; i < 3; i++) {
        bump((long)arg);
        write(1, "w\n", 2);
    }
    return 0;
}

int main(void) {
    pthread_t t;
    for (long i = 1; i <= 3; i++) bump(i);
    pthread_create(&t, 0, worker, (void *)100);
    pthread_join(t, 0);
    printf("total %ld\n", total);
    return 0;
}
