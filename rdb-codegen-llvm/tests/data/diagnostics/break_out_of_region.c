#include "rdb.h"
int f(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) {
    rdb_begin
    if (i == 3)
      break;
    rdb_end
    s += i;
  }
  return s;
}
