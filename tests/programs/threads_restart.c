// rdb-build: -O0 -g -lpthread
// rdb-replays: 2
// rdb-stdout: "round 0: poll 1 revents 0x1 read x\nround 1: poll 1 revents 0x1 read x\n"
// The recording must really resume a poll with restart_syscall, or the case checks nothing.
// rdb-events-contain: "restart_syscall() = 1"
/* A thread blocked in poll is woken by a SIGCHLD it does not handle (the main thread blocks
 * it, and it is ignored by default but still queued under ptrace): the kernel interrupts its
 * poll with ERESTART_RESTARTBLOCK and resumes it with restart_syscall, which writes revents.
 * The replay must give the program those revents too, or it takes another path. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int fds[2];

static void *poller(void *arg) {
  for (int round = 0; round < 2; round++) {
    struct pollfd p = { .fd = fds[0], .events = POLLIN, .revents = 0 };
    int n = poll(&p, 1, -1);
    char c = '-';
    if (p.revents & POLLIN)
      read(fds[0], &c, 1);
    printf("round %d: poll %d revents %#x read %c\n", round, n, p.revents, c);
    fflush(stdout);
  }
  return arg;
}

int main(void) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (pipe(fds) != 0)
    return 1;
  pthread_t t;
  pthread_create(&t, 0, poller, 0);
  pthread_sigmask(SIG_BLOCK, &chld, 0);
  for (int round = 0; round < 2; round++) {
    usleep(100000); /* let the poller block in poll */
    pid_t c = fork();
    if (c == 0)
      _exit(0);
    waitpid(c, 0, 0);
    usleep(50000);
    write(fds[1], "x", 1);
  }
  pthread_join(t, 0);
  return 0;
}
