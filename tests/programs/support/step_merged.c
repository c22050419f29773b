/* A region ending a loop body, anchored at the loop's step `e = e->next`. clang -O2 gives the
 * step no line row of its own: the step's load sits in the body's row and in a line-0 row, and
 * the step's line has rows only at the condition's columns. Those rows run before each
 * iteration's `s += e->val`, and a region placed there printed the sum before the add (one
 * element behind, the first one `0`) and a key of the wrong entry. It must print what -O0
 * prints or be reported, never those values. Built by tests/tests/e2e/clang_replay.rs. */
#include <stdio.h>
#include <stdlib.h>
#include "rdb.h"

struct entry {
  int val;
  struct entry *next;
};

static struct entry *buckets[4];

static int total(void) {
  int s = 0;
  for (int i = 0; i < 4; i++)
    for (struct entry *e = buckets[i]; e; e = e->next) {
      s += e->val;
      rdb_begin
      printf("rdb: val %d sum %d\n", e->val, s);
      rdb_end
    }
  return s;
}

int main(int argc, char **argv) {
  for (int v = 1; v <= 6 + argc; v++) {
    struct entry *e = malloc(sizeof *e);
    e->val = v * 10;
    e->next = buckets[v % 4];
    buckets[v % 4] = e;
  }
  printf("sum %d\n", total());
  return 0;
}
