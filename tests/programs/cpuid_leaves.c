// Executes cpuid itself (leaf 0: the vendor string, leaf 1: family/model and features, leaf 7
// subleaf 0: extended features), also in a forked child and after an exec of itself, and
// prints the results. Where the host has CPUID faulting each one is trapped, recorded and
// served back by replay (tests/tests/e2e/cpuid.rs checks that); elsewhere they run natively.
// The APIC id (leaf 1 EBX[31:24]) is left out of the output: it names the CPU the thread ran
// on, which may differ between runs.
// rdb-args: 2
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *who) {
  unsigned a, b, c, d;
  char vendor[13];
  __cpuid_count(0, 0, a, b, c, d);
  memcpy(vendor, &b, 4);
  memcpy(vendor + 4, &d, 4);
  memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  printf("%s: leaf 0: max leaf %#x, vendor %s\n", who, a, vendor);
  __cpuid_count(1, 0, a, b, c, d);
  printf("%s: leaf 1: eax %#x ebx %#x ecx %#x edx %#x\n", who, a, b & 0x00ffffff, c, d);
  __cpuid_count(7, 0, a, b, c, d);
  printf("%s: leaf 7.0: eax %#x ebx %#x ecx %#x edx %#x\n", who, a, b, c, d);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 0;
  show(rounds ? "parent" : "exec'ed");
  if (!rounds)
    return 0;
  pid_t p = fork();
  if (p == 0) {
    show("child");
    _exit(0);
  }
  waitpid(p, 0, 0);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0) {
    perror("readlink");
    return 1;
  }
  self[n] = 0;
  execl(self, argv[0], (char *)0);
  perror("execl");
  return 1;
}
