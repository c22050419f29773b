// A signal sent to one thread (`pthread_kill`) is handled by that thread at replay too, and the
// program sees the recorded thread ids (gettid in the thread and in the handler).
// rdb-build: -O0 -g -lpthread
// rdb-replays: 2
// rdb-stdout-starts-with: "handled in worker: 1, tids differ from main: 1"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
static volatile sig_atomic_t got;
static volatile long handler_tid;
static long worker_tid;
static void on_usr1(int s) { (void)s; handler_tid = syscall(SYS_gettid); got = 1; }
static void *worker(void *a) {
    worker_tid = syscall(SYS_gettid);
    while (!got) usleep(500);
    return a;
}
int main(void) {
    signal(SIGUSR1, on_usr1);
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    while (!worker_tid) usleep(100);
    usleep(2000);
    pthread_kill(t, SIGUSR1);
    pthread_join(t, 0);
    printf("handled in worker: %d, tids differ from main: %d, worker tid %ld\n", handler_tid == worker_tid, worker_tid != syscall(SYS_gettid), worker_tid);
    return 0;
}
