#include <stdio.h>
#include "rdb.h"
int helper(int x);
extern int shared;
int main(void) {
  int v = helper(4);
  rdb_begin
  printf("rdb: helper(2)=%d shared=%d v=%d\n", helper(2), shared, v);
  rdb_end
  return v == 8 ? 0 : 1;
}
