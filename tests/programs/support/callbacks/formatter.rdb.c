/* Debug code for formatter.c: the first record's field is watched from a call callback,
 * before the program's first heap memory was ever read by debug code. */
#include <stdio.h>
#include "rdb.h"

struct line {
    char text[16];
    int lines_done;
    int width;
};

static int mallocs;
static int watching;

RDB_ON_CALL(malloc) void allocating(unsigned long size) {
    (void)size;
    mallocs++;
}

RDB_ON_CALL(pad_word) void padding(struct line *l, const char *w) {
    (void)w;
    if (!watching) {
        watching = 1;
        printf("[rdb] watch: %d\n", rdb_watch(&l->lines_done, sizeof l->lines_done));
    }
}

RDB_ON_WRITE(words_emitted) void emitted(int old, int new) {
    printf("[rdb] words_emitted %d -> %d at %s\n", old, new, rdb_location());
}

RDB_ON_SYSCALL(write, after) void wrote(const rdb_syscall *call) {
    if (call->data_len > 0 && call->data[0] == 'c')
        printf("[rdb] corrupted line written by %s\n", rdb_location());
}

RDB_ON_SYSCALL(exit_group, before) void leaving(void) {
    printf("[rdb] malloc was called %d times\n", mallocs);
}
