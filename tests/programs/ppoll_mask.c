// ppoll with a temporary signal mask: SIGALRM, blocked outside, interrupts the ppoll; the old
// mask is back afterwards.
// rdb-stdout: "ppoll -1 errno 4 got 1\nblocked again: 1\n"
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
static volatile int got;
static void h(int s) { (void)s; got++; }
int main(void) { sigset_t b, e, now; sigemptyset(&b); sigaddset(&b, SIGALRM); sigemptyset(&e);
  sigprocmask(SIG_BLOCK, &b, 0); signal(SIGALRM, h); alarm(1);
  int r = ppoll(0, 0, 0, &e); printf("ppoll %d errno %d got %d\n", r, errno, got);
  sigprocmask(SIG_BLOCK, 0, &now); printf("blocked again: %d\n", sigismember(&now, SIGALRM)); return 0; }
