#!/usr/bin/env bash
# What one ptrace stop costs on this machine, without rdb: the floor under every event callback
# (bench/callbacks.sh). A tracer and its tracee pinned to one CPU; per stop, the tracee traps
# and the tracer waits for it (and for a watch, reads and clears DR6 as rdb does), then
# resumes it. Four kinds, in one run:
#   int3                 the tracee runs `int3` N times (a breakpoint hit: one stop)
#   int3, CPUID faulting the same with the tracee's CPUID faulting on (as rdb's replay has it
#                        until the trace's last cpuid): each switch to or from it writes a
#                        model-specific register, which traps to the hypervisor on VMs
#   watch hit            the tracee writes a global watched with DR0/DR7 N times
#   watch, CPUID faulting
#   bash bench/stop_cost.sh        # N=20000
set -euo pipefail
N=${N:-20000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/stops.c" <<'C'
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static long watched;
static double now_us(void) {
  struct timespec t;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]), watch = argv[2][0] == 'w', nocpuid = argv[3][0] == '1';
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(0, &s);
  sched_setaffinity(0, sizeof s, &s);
  pid_t p = fork();
  if (p == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    if (nocpuid && syscall(SYS_arch_prctl, 0x1012 /* ARCH_SET_CPUID */, 0) != 0) _exit(2);
    raise(SIGSTOP);
    for (int i = 0; i < n; i++) {
      if (watch) *(volatile long *)&watched = i;
      else __asm__ volatile("int3");
    }
    _exit(0);
  }
  int st;
  waitpid(p, &st, 0);
  if (!WIFSTOPPED(st)) { fprintf(stderr, "no CPUID faulting here\n"); return 2; }
  if (watch) {
    ptrace(PTRACE_POKEUSER, p, offsetof(struct user, u_debugreg[0]), &watched);
    ptrace(PTRACE_POKEUSER, p, offsetof(struct user, u_debugreg[7]), 0xd0001); /* write, 8 bytes */
  }
  double t0 = now_us();
  for (int i = 0; i < n; i++) {
    ptrace(PTRACE_CONT, p, 0, 0);
    waitpid(p, &st, 0);
    if (watch) {
      long dr6 = ptrace(PTRACE_PEEKUSER, p, offsetof(struct user, u_debugreg[6]), 0);
      if (dr6 & 1) ptrace(PTRACE_POKEUSER, p, offsetof(struct user, u_debugreg[6]), 0);
    }
  }
  double t1 = now_us();
  ptrace(PTRACE_CONT, p, 0, 0);
  waitpid(p, &st, 0);
  printf("%.2f\n", (t1 - t0) / n);
  return 0;
}
C
cc -O2 "$tmp/stops.c" -o "$tmp/stops"
best() { # best of 3, µs per stop
  local b="" t
  for _ in 1 2 3; do
    t=$("$tmp/stops" "$N" "$1" "$2") || { echo "n/a"; return; }
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
  done
  echo "$b"
}
printf 'one ptrace stop and resume, %d stops, best of 3 (CPU 0); load average %s\n' "$N" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-24s %8s µs\n' "int3" "$(best i 0)"
printf '  %-24s %8s µs\n' "int3, CPUID faulting" "$(best i 1)"
printf '  %-24s %8s µs\n' "watch hit" "$(best w 0)"
printf '  %-24s %8s µs\n' "watch hit, CPUID faulting" "$(best w 1)"
