#include "rdb.h"
int f(int n) {
  rdb_begin
  n++;
  return n;
}
