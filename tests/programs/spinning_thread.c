// A thread that busy-waits for another one never gets past its loop under a syscall-boundary
// scheduler; the watchdog must name it and where it spins (the `while` line below).
// rdb-build: -O0 -g -lpthread
// rdb-record: --watchdog 1
// rdb-expect: refused "without a syscall"
// rdb-stderr-contains: "spinning_thread.c:15"
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static volatile int flag;
static void *setter(void *a) { usleep(2000); flag = 1; return a; }
int main(void) {
  pthread_t t;
  pthread_create(&t, 0, setter, 0);
  while (!flag) { }
  pthread_join(t, 0);
  puts("done");
  return 0;
}
