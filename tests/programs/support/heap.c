/* A priority heap, tried as a new user would. At -O2 the statement after the sift region (`i = p;`)
 * has no code (kept in registers): the region runs where the statement before it (`swap(..)`,
 * inlined) ends, once per sift; it was refused. Built by tests/tests/e2e/clang_replay.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rdb.h"

struct item { int id; int prio; };
struct heap { struct item *v; int n, cap; };

static void swap(struct item *a, struct item *b) { struct item t = *a; *a = *b; *b = t; }

static void push(struct heap *h, struct item it) {
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 2;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
        rdb_begin;
        printf("[dbg] grow to %d for id %d\n", h->cap, it.id);
        rdb_end;
    }
    int i = h->n++;
    h->v[i] = it;
    do {
        int p = (i - 1) / 2;
        if (i == 0 || h->v[p].prio >= h->v[i].prio) break;
        swap(&h->v[p], &h->v[i]);
        rdb_begin;
        printf("[dbg] sift id %d from %d to %d\n", it.id, i, p);
        rdb_end;
        i = p;
    } while (1);
}

static int pop(struct heap *h, struct item *out) {
    if (h->n == 0) goto empty;
    *out = h->v[0];
    h->v[0] = h->v[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l].prio > h->v[m].prio) m = l;
        if (r < h->n && h->v[r].prio > h->v[m].prio) m = r;
        if (m == i) break;
        swap(&h->v[m], &h->v[i]);
        i = m;
    }
    rdb_begin;
    printf("[dbg] pop id %d prio %d left %d\n", out->id, out->prio, h->n);
    rdb_end;
    return 1;
empty:
    rdb_begin;
    printf("[dbg] empty heap\n");
    rdb_end;
    return 0;
}

typedef int (*scorer)(int);
static int twice(int x) { return 2 * x; }
static int square(int x) { return x * x; }

int main(int argc, char **argv) {
    struct heap h = {0};
    scorer s = argc > 1 ? twice : square;
    for (int id = 1; id <= 7; id++) {
        struct item it = { id, s((id * 5) % 7) };
        rdb_begin;
        printf("[dbg] push id %d prio %d\n", it.id, it.prio);
        rdb_end;
        push(&h, it);
    }
    struct item out;
    long sum = 0;
    while (pop(&h, &out)) sum = sum * 10 + out.id;
    printf("order %ld\n", sum);
    free(h.v);
    return 0;
}
