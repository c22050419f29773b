/* A region before a statement that clang -O2 takes out of a fully unrolled loop: `s->seen++`
 * ten times becomes one `addq $0xa` after the loop, the only code of its line. At -O0 the
 * region runs at each of the ten iterations; at -O2 no place runs it once per iteration, and
 * the build and the replay must say so rather than run it once with the last values.
 * Built by tests/tests/e2e/clang_replay.rs at -O0 and -O2. */
#include <stdio.h>
#include "rdb.h"

struct stats {
  long seen, total;
};

__attribute__((noinline)) void work(struct stats *s, long base) {
  for (int i = 0; i < 10; i++) {
    s->total += base + i;
    rdb_begin
    printf("rdb: total %ld\n", s->total);
    rdb_end
    s->seen++;
  }
}

int main(int argc, char **argv) {
  struct stats s = {0, 0};
  work(&s, argc);
  printf("seen %ld total %ld\n", s.seen, s.total);
  return 0;
}
