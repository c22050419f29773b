/* Allocations and writes of a global in the main thread, in a second thread and in a forked
 * child: the callback test checks that symbol (malloc) and memory callbacks see all of them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

long total;

static void grow(long n) {
    char *p = malloc(n);
    p[0] = 1;
    total += n;
    free(p);
}

static void *worker(void *arg) {
    grow((long)arg);
    return NULL;
}

int main(void) {
    pthread_t t;
    grow(1001);
    pthread_create(&t, NULL, worker, (void *)1002);
    pthread_join(t, NULL);
    pid_t child = fork();
    if (child == 0) {
        grow(1003);
        printf("child total %ld\n", total);
        return 0;
    }
    waitpid(child, NULL, 0);
    grow(1004);
    printf("parent total %ld\n", total);
    return 0;
}
