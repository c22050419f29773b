/* Debug-only helpers of list.c: compiled only into the debug module. */
#include <stdio.h>

struct node {
  int value;
  struct node *next;
};

void __rdb_dump(const struct node *n) {
  for (; n; n = n->next)
    printf("%d ", n->value);
  printf("\n");
}
