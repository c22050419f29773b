#include "rdb.h"
int f(int n) {
  int s = 0;
  while (n--) {
    rdb_begin
    if (n == 3) continue;
    rdb_end
    s += n;
  }
  return s;
}
