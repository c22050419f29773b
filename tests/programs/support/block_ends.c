/* Regions that end a block whose next code other paths reach too: the end of an `if` body (the
 * code after the `if` also runs when the branch is not taken) and the end of a `while` body (the
 * condition is also tested before the first iteration). They were anchored at that next code
 * and ran at every pass through it: `odd 0`, `odd 2`, ... and one `while` line too many. Now
 * each runs where its block's last statement ends, once per pass through the block, or is
 * reported. Built by tests/tests/e2e/clang_replay.rs. */
#include <stdio.h>
#include "rdb.h"

int main(int argc, char **argv) {
  int odd = 0;
  for (int i = 0; i < 6; i++) {
    if (i % 2) {
      odd += i;
      rdb_begin
      printf("rdb: odd %d sum %d\n", i, odd);
      rdb_end
    }
    argc += i;
  }
  int n = argc;
  while (n > 10) {
    n -= 4;
    rdb_begin
    printf("rdb: while n %d\n", n);
    rdb_end
  }
  printf("odd %d argc %d n %d\n", odd, argc, n);
  return 0;
}
