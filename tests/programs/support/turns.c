/* Threads taking turns (rdb attach --remote tests): THREADS workers add to a shared total in a
 * fixed order, handing the turn on under a mutex and a condition variable, so every run
 * prints the same thing whatever the scheduler does. The region runs in each worker thread in
 * turn: a stub stops a different thread at each hit. Built with rdb-clang (the region) or
 * clang-14 (none). Usage: turns [ROUNDS] (default 4). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "rdb.h"

#define THREADS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int rounds = 4;
static int turn;
static long total;

static void *worker(void *arg) {
  int me = (int)(long)arg;
  for (int round = 0; round < rounds; round++) {
    pthread_mutex_lock(&lock);
    while (turn % THREADS != me)
      pthread_cond_wait(&turn_changed, &lock);
    total += (me + 1) * (round + 1);
    rdb_begin
    printf("rdb: thread %d round %d total %ld turn %d\n", me, round, total, turn);
    rdb_end
    turn++;
    pthread_cond_broadcast(&turn_changed);
    pthread_mutex_unlock(&lock);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1)
    rounds = atoi(argv[1]);
  pthread_t threads[THREADS];
  for (long i = 0; i < THREADS; i++)
    pthread_create(&threads[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++)
    pthread_join(threads[i], NULL);
  printf("total %ld after %d turns\n", total, turn);
  return 0;
}
