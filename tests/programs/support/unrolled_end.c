/* A region that ends a loop body (the last thing of each iteration). clang -O2 unrolls the
 * three iterations fully: the loop's step `w++` has no code of its own, and the first line
 * with code after it is the next copy's `printf`, where `w` is already the next iteration's.
 * Built by tests/tests/e2e/clang_replay.rs at -O0 and -O2. */
#include <stdio.h>
#include "rdb.h"

int main(int argc, char **argv) {
  long vals[3] = {argc * 10, argc * 20, argc * 30};
  long sum = 0;
  for (int w = 0; w < 3; w++) {
    printf("step %d\n", w);
    sum += vals[w];
    rdb_begin
    printf("rdb: step %d sum %ld\n", w, sum);
    rdb_end
  }
  printf("sum %ld\n", sum);
  return 0;
}
