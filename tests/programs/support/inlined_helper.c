/* A region calls `total_weight`, a static helper that clang -O2 inlines into its only caller,
 * so the main binary has no code of its own for it: the debug module runs a copy, whose uses
 * of the program's `head`, `scale` and `weight` must reach the program's objects. */
#include <stdio.h>
#include <stdlib.h>
#include "rdb.h"

struct node {
    int value;
    struct node *next;
};

static struct node *head;
int scale = 3;

__attribute__((noinline)) int weight(int v) {
    return v * scale + 1;
}

static int total_weight(void) {
    int sum = 0;
    for (struct node *p = head; p; p = p->next)
        sum += weight(p->value);
    return sum;
}

__attribute__((noinline)) void push(int value) {
    struct node *node = malloc(sizeof *node);
    node->value = value;
    node->next = head;
    head = node;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    for (int i = 1; i <= n; i++) {
        push(i);
        rdb_begin
        printf("rdb: after %d nodes, total weight %d\n", head->value, total_weight());
        rdb_end
    }
    printf("total %d\n", total_weight());
    return 0;
}
