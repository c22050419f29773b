/* Parameters clang -O2 keeps only in their argument registers, which later
 * calls clobber: at the region the DWARF describes them by their value on
 * entry to the function (DW_OP_entry_value). The replay keeps those values
 * at each call's entry, recursion included, and in a child forked inside a
 * call (which never passes that call's entry), and the region prints the same
 * values as at -O0. (rdb's tests: the region's output at -O2 equals -O0's.) */
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

__attribute__((noinline)) static long descend(long x, long depth) {
  long a = work(x);
  long b = depth > 0 ? descend(x + 3, depth - 1) : 0;
  rdb_begin
  printf("rdb: x %ld depth %ld\n", x, depth);
  rdb_end
  return a + b;
}

static volatile int in_child;

__attribute__((noinline)) static long split(long tag) {
  long a = work(tag);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0)
    in_child = 1;
  else
    waitpid(child, NULL, 0);
  rdb_begin
  printf("rdb: %s tag %ld\n", in_child ? "child" : "parent", tag);
  fflush(stdout);
  rdb_end
  sink = a;
  if (in_child)
    _exit(0);
  return a;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 4;
  printf("total %ld\n", descend(n, n));
  printf("split %ld\n", split(n + 100));
  return 0;
}
