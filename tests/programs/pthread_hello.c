// The smallest threaded program (threads have their own cases: threads_*.c).
// rdb-build: -O1 -g -lpthread
// rdb-stdout: "in thread\njoined\n"
#include <pthread.h>
#include <stdio.h>
static void *f(void *a) { puts("in thread"); return a; }
int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); pthread_join(t, 0); puts("joined"); return 0; }
