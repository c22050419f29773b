/* Pads words to a width in heap records and writes each with write(2); a width past the
 * text buffer overruns into the record's next field, which the program then reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct line {
    char text[16];
    int lines_done;
    int width;
};

int words_emitted;
static int allocations;

static void *xalloc(size_t n) {
    allocations++;
    return malloc(n);
}

static void pad_word(struct line *l, const char *w) {
    size_t n = strlen(w);
    memcpy(l->text, w, n);
    for (size_t i = n; i < (size_t)l->width; i++)
        l->text[i] = '.';
    l->text[l->width] = '\n';
}

static void emit(struct line *l) {
    write(1, l->text, (size_t)l->width + 1);
    words_emitted++;
}

int main(int argc, char **argv) {
    int width = argc > 1 ? atoi(argv[1]) : 12;
    const char *words[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < 3; i++) {
        struct line *l = xalloc(sizeof *l);
        l->width = width;
        l->lines_done = i;
        pad_word(l, words[i]);
        emit(l);
        if (l->lines_done != i) {
            char msg[64];
            int m = snprintf(msg, sizeof msg, "corrupted: lines_done=%d expected %d\n", l->lines_done, i);
            write(1, msg, (size_t)m);
        }
        free(l);
    }
    char *summary = xalloc(64);
    int m = snprintf(summary, 64, "words=%d allocations=%d\n", words_emitted, allocations);
    write(1, summary, (size_t)m);
    free(summary);
    return 0;
}
