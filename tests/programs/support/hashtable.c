/* A hash table filled by 3 threads, tried as a new user would (-O0 and -O2, regions in a loop of
 * `worker` before a call of `put` that clang -O2 inlines, in `put` before a `return` and after the
 * insert, and ending an inner loop body). At -O2 the inlined `put` has no DW_AT_entry_pc and its
 * lowest address is alignment padding before a later block of it: the worker region was placed
 * there and refused as a merged loop, never running. Built by tests/tests/e2e/clang_replay.rs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rdb.h"

#define NB 16
struct entry { char key[16]; int val; struct entry *next; };
struct table { struct entry *b[NB]; int count; pthread_mutex_t mu; };

static struct table tab;
static int collisions;

static inline unsigned hash(const char *s) {
    unsigned h = 5381;
    while (*s) h = h * 33 + (unsigned char)*s++;
    return h % NB;
}

static void put(struct table *t, const char *k, int v) {
    unsigned h = hash(k);
    pthread_mutex_lock(&t->mu);
    struct entry *e = t->b[h];
    if (e) collisions++;
    for (; e; e = e->next) {
        if (strcmp(e->key, k) == 0) {
            rdb_begin;
            printf("[dbg] update %s: %d -> %d (bucket %u)\n", k, e->val, v, h);
            rdb_end;
            e->val = v;
            pthread_mutex_unlock(&t->mu);
            return;
        }
    }
    e = malloc(sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", k);
    e->val = v;
    e->next = t->b[h];
    t->b[h] = e;
    t->count++;
    rdb_begin;
    printf("[dbg] insert %s=%d bucket %u count %d\n", k, v, h, t->count);
    rdb_end;
    pthread_mutex_unlock(&t->mu);
}

static void *worker(void *arg) {
    int id = (int)(long)arg;
    char k[16];
    for (int i = 0; i < 6; i++) {
        snprintf(k, sizeof k, "k%d", (i * 7 + id) % 9);
        rdb_begin;
        printf("[dbg] worker %d step %d key %s\n", id, i, k);
        rdb_end;
        put(&tab, k, id * 100 + i);
    }
    return NULL;
}

static int total(const struct table *t) {
    int s = 0;
    for (int i = 0; i < NB; i++)
        for (struct entry *e = t->b[i]; e; e = e->next) {
            s += e->val;
            rdb_begin;
            printf("[dbg] sum %s -> %d\n", e->key, s);
            rdb_end;
        }
    return s;
}

int main(void) {
    pthread_mutex_init(&tab.mu, NULL);
    pthread_t th[3];
    for (long i = 0; i < 3; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    int s = total(&tab);
    rdb_begin;
    printf("[dbg] final count=%d collisions=%d sum=%d\n", tab.count, collisions, s);
    rdb_end;
    printf("count=%d sum=%d collisions=%d\n", tab.count, s, collisions);
    return 0;
}
