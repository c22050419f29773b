/* A sorted linked list of the numbers given on the command line.
 * Bug: inserting in the middle drops everything after the new node. */
#include <stdio.h>
#include <stdlib.h>
#include "rdb.h"

struct node {
  int value;
  struct node *next;
};

struct node *head;
static long __rdb_last;
void __rdb_dump(const struct node *n);

long list_len(const struct node *n) {
  long len = 0;
  for (; n; n = n->next)
    len++;
  return len;
}

void insert(int value) {
  struct node *n = malloc(sizeof *n);
  n->value = value;
  n->next = NULL;
  if (!head || value < head->value) {
    n->next = head;
    head = n;
    return;
  }
  struct node *p = head;
  while (p->next && p->next->value < value)
    p = p->next;
  p->next = n; /* BUG: n->next = p->next is missing */
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    int value = atoi(argv[i]);
    insert(value);
    rdb_begin
    long len = list_len(head);
    if (len <= __rdb_last) {
      printf("rdb: list shrank from %ld to %ld after inserting %d: ", __rdb_last, len, value);
      __rdb_dump(head);
    }
    __rdb_last = len;
    rdb_end
  }
  printf("%ld numbers:", list_len(head));
  for (struct node *n = head; n; n = n->next)
    printf(" %d", n->value);
  printf("\n");
  return 0;
}
