/* A region between two tests of a fork's result: clang -O2 threads the
 * parent's path from after `waitpid` past the second test, whose outcome it
 * knows on that path, so the anchor statement's code (`if (child == 0)`) is
 * not on it. The region still runs once in each process. (rdb's tests: the
 * region's hits at -O2 equal those at -O0.) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rdb.h"

static volatile long sink;

__attribute__((noinline)) static long work(long n) {
  long s = 0;
  for (long i = 0; i < n; i++)
    s += i * i;
  sink = s;
  return s;
}

__attribute__((noinline)) static long split(long tag) {
  long a = work(tag);
  fflush(stdout);
  pid_t child = fork();
  if (child > 0)
    waitpid(child, NULL, 0);
  rdb_begin
  printf("rdb: tag %ld work %ld\n", tag, a);
  fflush(stdout);
  rdb_end
  if (child == 0)
    _exit(0);
  return a;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 4;
  printf("split %ld\n", split(n));
  return 0;
}
