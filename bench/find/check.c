/* bench/find.sh's workload: ROUNDS rounds of one system call each (a replay event); every
 * STRIDE-th round updates `total` and runs a region whose check, `total >= 0`, fails from
 * round BREAK on (the program corrupts `total` there). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "rdb.h"

long total;
/* A global: the statement after the region starts with a 7-byte load (`mov calls(%rip),%rax`),
 * which can carry the counting stub's jump (a local's 4-byte `mov -0x30(%rbp),%rax` cannot:
 * `rdb find` then stops at every hit). */
long calls;

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: check ROUNDS STRIDE BREAK\n");
    return 2;
  }
  long rounds = atol(argv[1]), stride = atol(argv[2]), brk = atol(argv[3]);
  for (long r = 0; r < rounds; r++) {
    calls += getppid() > 0;
    if (r == brk)
      total = -1000000000000;
    if (r % stride == 0) {
      total += r;
      rdb_begin
      rdb_check(total >= 0, "total %ld at round %ld", total, r);
      rdb_end
      calls++;
    }
  }
  printf("%ld calls, total %ld\n", calls, total);
  return 0;
}
