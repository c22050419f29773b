// Four threads each write three blocks of 200 KB of their own letter to standard output in one
// `write` each. Read slowly (tests/e2e/threads.rs), every write blocks on the full pipe far
// longer than the recorder's 2 ms deadline for giving a turn up, so other threads run and
// write meanwhile: what the replay prints must still be exactly what the recording printed.
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (200 * 1024)

static void *writer(void *arg) {
    static char blocks[4][BLOCK];
    long id = (long)arg;
    char *block = blocks[id];
    memset(block, 'a' + id, BLOCK - 1);
    block[BLOCK - 1] = '\n';
    for (int round = 0; round < 3; round++) {
        size_t done = 0;
        while (done < BLOCK) {
            ssize_t n = write(1, block + done, BLOCK - done);
            if (n <= 0) {
                perror("write");
                return NULL;
            }
            done += n;
        }
    }
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, writer, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    return 0;
}
