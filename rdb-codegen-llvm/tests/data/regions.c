#include <stdio.h>
#include "rdb.h"
struct point { int x, y; };
static int __rdb_seen;
int total;
int step(int k) {
  rdb_begin
  __rdb_seen++;
  rdb_end
  static int calls;
  struct point p = { k, k * 2 };
  calls++;
  rdb_begin
  printf("rdb: step %d calls %d p=(%d,%d)\n", k, calls, p.x, p.y);
  rdb_end
  rdb_begin
  printf("rdb: total %d seen %d\n", total, __rdb_seen);
  rdb_end
  if (k % 2) {
    total += k;
    rdb_begin
    int arr[3] = { k, total, calls };
    for (int i = 0; i < 3; i++) printf("rdb: arr[%d]=%d\n", i, arr[i]);
    rdb_end
    k = -k; /* the region runs here: ending the `if` body, it would have no place of its own */
  }
  return total;
}
int main(void) {
  for (int k = 0; k < 3; k++) step(k);
  printf("%d\n", total);
  return 0;
}
