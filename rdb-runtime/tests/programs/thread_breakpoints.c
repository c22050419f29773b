#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
int counter;
__attribute__((noinline)) int work(long who) {
    int seen = counter;
    write(2, "", 0);
    counter = seen + 1;
    return seen + (int)who;
}
static void *run(void *arg) {
    for (int i = 0; i < 20; i++) work((long)arg);
    return 0;
}
int main(void) {
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], 0, run, (void *)(i + 1));
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    printf("counter %d\n", counter);
    return 0;
}
