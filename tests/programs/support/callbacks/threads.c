/* Two threads write lines in turns; the callback test checks that callbacks run
 * for every thread's writes in the recorded order. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void say(const char *who, int i) {
    char line[64];
    int n = snprintf(line, sizeof line, "%s %d\n", who, i);
    write(1, line, (size_t)n);
}

static void *worker(void *arg) {
    for (int i = 0; i < 20; i++) {
        say((const char *)arg, i);
        usleep(100);
    }
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, worker, "alpha");
    pthread_create(&b, NULL, worker, "beta");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    say("done", 0);
    return 0;
}
