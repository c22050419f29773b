// A process that busy-waits, with no syscall, on memory it shares with another process (a
// MAP_SHARED page inherited across fork) cannot be replayed exactly: the two are scheduled as
// one unit and switch only at syscalls, so the spin never ends. The watchdog must name the
// process and where it spins (the `while` line below) instead of recording a wrong order.
// rdb-build: -O0 -g
// rdb-record: --watchdog 1
// rdb-expect: refused "without a syscall"
// rdb-stderr-contains: "spinning_shared_memory.c:19"
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
  volatile int *flag = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t c = fork();
  if (c == 0) { usleep(2000); *flag = 1; _exit(0); }
  // The parent spins here.
  int spins = 0;
  while (!*flag) { spins++; }
  waitpid(c, 0, 0);
  puts("done");
  return 0;
}
