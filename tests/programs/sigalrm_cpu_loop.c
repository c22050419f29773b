// A CPU-bound loop that makes no syscall receives SIGALRM from setitimer, and the handler ends
// the loop: how far it got depends on the instruction the signal interrupted. The recorder
// delivers the signal at an interruption point (registers, FP registers and stack) that replay
// finds again with a hardware breakpoint, so every replay prints the recorded counts.
// rdb-build: -O1 -g
// rdb-replays: 2
// rdb-nondeterministic
// rdb-events-contain: "interrupted in user code"
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
static volatile sig_atomic_t stop;
static volatile unsigned long seen;
static void on_alarm(int sig) {
  (void)sig;
  stop = 1;
}
__attribute__((noinline)) static unsigned long work(unsigned long x) {
  for (int i = 0; i < 20000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}
int main(void) {
  signal(SIGALRM, on_alarm);
  for (int round = 0; round < 3; round++) {
    stop = 0;
    struct itimerval t = {{0, 0}, {0, 20000}};
    setitimer(ITIMER_REAL, &t, 0);
    unsigned long x = 1, rounds = 0;
    while (!stop) {
      x = work(x);
      rounds++;
    }
    printf("round %d: %lu calls, x = %lx\n", round, rounds, x);
  }
  return 0;
}
