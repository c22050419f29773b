/* Regions inside a loop's body on a path that leaves the loop: before the `return` of a search
 * loop, and before a `break`. Each runs at most once per call, and its code is on no cycle of
 * the machine code (after the loop's exit test), at -O0 as at -O2; a build took "no cycle" for
 * a loop merged away and refused to run them. Built by tests/tests/e2e/clang_replay.rs. */
#include <stdio.h>
#include "rdb.h"

struct node {
  int key;
  struct node *next;
};

__attribute__((noinline)) static struct node *find(struct node *n, int key) {
  for (; n; n = n->next) {
    if (n->key == key) {
      rdb_begin
      printf("rdb: found %d\n", n->key);
      rdb_end
      return n;
    }
  }
  return 0;
}

__attribute__((noinline)) static int first_negative(const int *v, int len) {
  int i;
  for (i = 0; i < len; i++) {
    if (v[i] < 0) {
      rdb_begin
      printf("rdb: negative at %d\n", i);
      rdb_end
      break;
    }
  }
  return i;
}

int main(int argc, char **argv) {
  struct node c = {3, 0}, b = {2, &c}, a = {1, &b};
  int found = 0;
  for (int k = 0; k < 4 + argc; k++)
    found += find(&a, k) != 0;
  int v[6] = {4, 5, -1, 7, -2, 0};
  int at = first_negative(v, 6) + first_negative(v + 3, 3);
  printf("found %d at %d\n", found, at);
  return 0;
}
