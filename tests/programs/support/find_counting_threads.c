/* rdb find's counting stubs over threads: 3 threads run ROUNDS rounds of one system call each
 * and a region whose check, `total < LIMIT`, fails once the threads together added LIMIT. The
 * statement after the region starts with a 7-byte load of a global, which carries the counting
 * stub's jump. tests/tests/e2e/find.rs: counting_stubs_number_hits_as_breakpoints_do. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "rdb.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
long total, after, limit, rounds;

static void *worker(void *arg) {
  long me = (long)arg;
  for (long r = 0; r < rounds; r++) {
    after += getppid() > 0 ? 0 : 1;
    pthread_mutex_lock(&lock);
    total += me;
    rdb_begin
    rdb_check(total < limit, "total %ld in thread %ld at round %ld", total, me, r);
    rdb_end
    after++;
    pthread_mutex_unlock(&lock);
  }
  return NULL;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atol(argv[1]) : 2000;
  limit = argc > 2 ? atol(argv[2]) : 9000;
  pthread_t t[3];
  for (long i = 0; i < 3; i++)
    pthread_create(&t[i], NULL, worker, (void *)(i + 1));
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  printf("total %ld, after %ld\n", total, after);
  return 0;
}
