// Threads for gdb on replays: two workers with thread-locals take turns through pipes (the first
// once both said they are ready: every recording has the same interleaving), joined by main.
// rdb-build: -O0 -g -pthread
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

__thread long mine;
long total;
int turn[2][2], ready[2]; /* turn[i]: the pipe worker i+1 waits on */

long work(long id, int round) {
    mine += id * 10 + round;
    total += id;
    return mine;
}

static void *worker(void *arg) {
    long id = (long)arg;
    char token = write(ready[1], "r", 1);
    for (int round = 0; round < 3; round++) {
        read(turn[id - 1][0], &token, 1);
        work(id, round);
        write(turn[id % 2][1], &token, 1);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    pipe(turn[0]);
    pipe(turn[1]);
    pipe(ready);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    char r;
    for (int i = 0; i < 2; i++)
        read(ready[0], &r, 1);
    write(turn[0][1], "x", 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("total=%ld mine=%ld\n", total, mine);
    return 0;
}
