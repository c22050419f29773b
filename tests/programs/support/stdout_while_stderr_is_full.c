// The main thread writes 1 MB to stderr, which its reader drains only after it has read
// "ready" from stdout; a second thread prints that line meanwhile
// (threads::a_write_to_stdout_does_not_wait_for_one_to_stderr). Natively this never blocks for
// good; under the recorder neither may it.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int go[2];

static void *speaker(void *arg) {
    char c;
    if (read(go[0], &c, 1) != 1 || write(1, "ready\n", 6) != 6)
        exit(2);
    return arg;
}

int main(void) {
    static char block[1 << 20];
    memset(block, 'e', sizeof block);
    pthread_t t;
    if (pipe(go) != 0 || pthread_create(&t, NULL, speaker, NULL) != 0 || write(go[1], "g", 1) != 1)
        return 1;
    for (size_t done = 0; done < sizeof block;) {
        ssize_t n = write(2, block + done, sizeof block - done);
        if (n <= 0)
            return 3;
        done += n;
    }
    pthread_join(t, NULL);
    return 0;
}
