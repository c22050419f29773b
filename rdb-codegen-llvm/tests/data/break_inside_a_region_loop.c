#include <stdio.h>
#include "rdb.h"
int main(void) {
  int s = 0;
  rdb_begin
  for (int i = 0; ; i++) {
    if (i > s + 3) break;
    printf("%d\n", i);
  }
  rdb_end
  return s;
}
