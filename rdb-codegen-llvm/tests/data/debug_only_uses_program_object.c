#include <stdio.h>
#include "rdb.h"
int counter;
static void __rdb_show(void) {
  printf("%d\n", counter);
}
int main(void) {
  counter++;
  rdb_begin
  __rdb_show();
  rdb_end
  return 0;
}
