#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "rdb.h"
struct big { long a[8]; char name[16]; };
static struct big make(int k) { struct big b; memset(&b, 0, sizeof b); b.a[0] = k; strcpy(b.name, "big"); return b; }
static int table[5] = {1, 2, 3, 4, 5};
static const char *names[] = {"zero", "one", "two"};
typedef int (*op_fn)(int);
static int twice(int x) { return 2 * x; }
RDB_DEBUG_ONLY static int debug_counter;
static void __rdb_note(const char *s) { debug_counter++; fprintf(stderr, "note %s %d\n", s, debug_counter); }
int work(int n, op_fn f) {
  int acc = 0;
  struct big b = make(n);
  for (int i = 0; i < n; i++) {
    acc += f(table[i % 5]);
    rdb_begin
    switch (i % 3) {
    case 0: printf("rdb: %s\n", names[i % 3]); break;
    case 1: printf("rdb: %d\n", i > 2 ? acc : -acc); break;
    default: __rdb_note(b.name);
    }
    int vla[n + 1];
    for (int j = 0; j <= n; j++) vla[j] = j && i ? table[j % 5] : 0;
    struct big copy = make(vla[n]);
    printf("rdb: %ld %s %d %d\n", copy.a[0], b.name, f(3), acc && n || i);
    double d = acc / 3.0;
    if (d > 1.5 && (long)&table[2] != 0) printf("rdb: d=%.2f t=%d\n", d, table[2]);
    rdb_end
  }
  return acc;
}
int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", work(argc + 3, twice));
  return 0;
}
