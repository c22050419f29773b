#include "rdb.h"
int f(int n) {
  rdb_begin
  if (n) return 1;
  rdb_end
  return 0;
}
