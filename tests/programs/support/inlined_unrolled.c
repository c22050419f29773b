/* A region in a function that clang -O2 inlines into a loop it unrolls:
 * every copy of the region's code must run the region, once per call.
 * (rdb's tests: the region's hits at -O2 equal those at -O0.) */
#include <stdio.h>
#include <stdlib.h>
#include "rdb.h"

static volatile long sink;

static void add(long v) {
  rdb_begin
  printf("rdb: add %ld\n", v);
  rdb_end
  sink = v * v;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10;
  for (long i = 0; i < n; i++)
    add(i);
  printf("last %ld\n", sink);
  return 0;
}
