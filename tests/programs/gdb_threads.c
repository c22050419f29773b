// Threads for gdb on replays (tests/gdb/threads.gdb): two workers with thread-locals, joined by
// main; every thread's state is visible while the replay is halted.
// rdb-build: -O0 -g -pthread
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

__thread long mine;
long total;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

long work(long id, int round) {
    mine += id * 10 + round;
    pthread_mutex_lock(&lock);
    total += id;
    pthread_mutex_unlock(&lock);
    return mine;
}

static void *worker(void *arg) {
    long id = (long)arg;
    for (int round = 0; round < 3; round++) {
        work(id, round);
        usleep(1000);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("total=%ld mine=%ld\n", total, mine);
    return 0;
}
