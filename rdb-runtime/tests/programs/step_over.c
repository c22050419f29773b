#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <string.h>
#include <unistd.h>
static int table[64];
static double acc_d;
static uintptr_t seen_return;
typedef long (*op_fn)(long, long);
__attribute__((noinline)) long add(long a, long b) {
    seen_return ^= (uintptr_t)__builtin_return_address(0);
    return a + b;
}
__attribute__((noinline)) long mul(long a, long b) { return (a * b) ^ (a >> 3); }
__attribute__((noinline)) long rec(long n) { return n < 2 ? n : rec(n - 1) + rec(n - 2); }
op_fn ops[2] = {add, mul};
static volatile long *ro_page;
static uintptr_t fault_pc;
static void on_segv(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    fault_pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    mprotect((void *)ro_page, 4096, PROT_READ | PROT_WRITE);
}
/* Faults on a read-only page; the handler makes it writable and returns, so the store runs
   again. The handler sees the pc of the store: the program's own address, even when the
   store was displaced. */
__attribute__((noinline)) void touch(long v) { *ro_page = v; }
__attribute__((noinline)) long step(long x, int i) {
    switch (i % 7) {
    case 0: x += table[i % 64]; break;
    case 1: x = ops[i & 1](x, i); break;
    case 2: x ^= x << 7; break;
    case 3: x = x * 31 + rec(i % 12); break;
    case 4: acc_d += (double)x / (i + 1); x += (long)acc_d; break;
    case 5: { char buf[32]; snprintf(buf, sizeof buf, "%ld", x); x += (long)strlen(buf); } break;
    default: x -= i;
    }
    return x;
}
int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < 64; i++) table[i] = (i * i) ^ 0x55;
    long x = argc;
    struct sigaction sa = {0};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, 0);
    ro_page = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int k = 0; k < 3; k++) {
        touch(x);
        x ^= (long)(fault_pc & 0xffff);
        mprotect((void *)ro_page, 4096, PROT_READ);
    }
    char out[64];
    memset(out, 'x', sizeof out);
    out[63] = '\n';
    for (int i = 0; i < 300; i++) {
        x = step(x, i) ^ (long)(seen_return & 0xff);
        if (i % 10 == 0) write(1, out, 1 + (unsigned long)x % 63);
    }
    printf("%ld\n", x);
    return (int)(x & 0x7f);
}
