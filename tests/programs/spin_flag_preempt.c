// One thread spins in user code on a flag that another thread sets, without a syscall in the
// loop. rdb runs one thread at a time, so the spinning thread must be switched out in the
// middle of its loop: the recorder interrupts it at a point replay finds again (the loop is a
// fixed point: every arrival has the same registers, stack and memory), and the replay prints
// what the recording did.
// rdb-build: -O0 -g -lpthread
// rdb-replays: 2
// rdb-stdout: "setter saw 3 rounds, spinner saw 3 flags, sum 600\n"
// rdb-events-contain: "interrupted in user code"
#include <pthread.h>
#include <stdio.h>
static volatile int flag;
static volatile long sum;
static void *setter(void *a) {
  (void)a;
  for (int round = 1; round <= 3; round++) {
    while (flag) { }
    sum += round * 100;
    flag = round;
  }
  return 0;
}
int main(void) {
  pthread_t t;
  pthread_create(&t, 0, setter, 0);
  int seen = 0;
  while (seen < 3) {
    while (!flag) { }
    seen++;
    flag = 0;
  }
  pthread_join(t, 0);
  printf("setter saw 3 rounds, spinner saw %d flags, sum %ld\n", seen, sum);
  return 0;
}
