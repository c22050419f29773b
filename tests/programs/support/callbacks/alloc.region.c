/* Allocates a list and reports how many times it called malloc; writes with
 * write(2) only (stdio would allocate its buffer). The callback test counts
 * malloc calls with RDB_ON_CALL(malloc) (alloc.rdb.c), and watches the list's
 * head from a region (alloc.region.c: this file plus the region). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rdb.h"

struct node {
    struct node *next;
    int value;
};

static long allocations;

static struct node *push(struct node *head, int value) {
    struct node *n = malloc(sizeof *n);
    allocations++;
    n->next = head;
    n->value = value;
    return n;
}

static void insert(struct node **head, int value) {
    *head = push(*head, value);
}

int main(int argc, char **argv) {
    struct node *head = NULL;
    int count = argc > 1 ? atoi(argv[1]) : 5;
    rdb_begin
    rdb_watch(&head, sizeof head);
    rdb_end
    for (int i = 0; i < count; i++)
        insert(&head, i * i);
    char *scratch = malloc(64);
    allocations++;
    long sum = 0;
    for (struct node *n = head; n; n = n->next)
        sum += n->value;
    int len = snprintf(scratch, 64, "sum %ld, %ld allocations\n", sum, allocations);
    write(1, scratch, (size_t)len);
    return 0;
}
