// A thread that busy-waits for another one never gets past its loop when it is never switched
// out in user code (here: switching at interruption points is put off for 100 s); the watchdog
// must name it and where it spins (the `while` line below). spin_flag_preempt.c is the same
// kind of loop with the default switching.
// rdb-build: -O0 -g -lpthread
// rdb-record: --watchdog 1 --preempt-ms 100000
// rdb-expect: refused "without a syscall"
// rdb-stderr-contains: "spinning_thread.c:17"
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
