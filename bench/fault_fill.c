/* How fast can a process fill a lazily mirrored page of another process?
 * Measures the two designs DESIGN.md allows for the debug host:
 *   segv: PROT_NONE reservation + SIGSEGV handler (mprotect RW,
 *         process_vm_readv, mprotect R), in the faulting thread;
 *   uffd: userfaultfd missing-page mode, a handler thread reads the page
 *         with process_vm_readv and installs it with UFFDIO_COPY.
 * Each touches a 16 MiB mirror (once per fill unit), invalidates (mprotect
 * NONE / MADV_DONTNEED: one call for the range) and touches it again.
 * Build and run: clang-14 -O2 -pthread bench/fault_fill.c -o /tmp/ff && /tmp/ff
 * (prefix with `taskset -c 1` to pin everything to one CPU). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define SIZE (16UL << 20)
static char *base;
static pid_t child;
static volatile long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void pull(void *local, void *remote, size_t len) {
    struct iovec l = {local, len}, r = {remote, len};
    if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)len)
        _exit(3);
}

static size_t chunk = PAGE; /* bytes filled per fault (segv) */
static void on_segv(int sig, siginfo_t *si, void *ctx) {
    char *page = (char *)((uintptr_t)si->si_addr & ~(chunk - 1));
    mprotect(page, chunk, PROT_READ | PROT_WRITE);
    pull(page, page, chunk);
    mprotect(page, chunk, PROT_READ);
}

static int uffd;
static char bounce[PAGE] __attribute__((aligned(4096)));
static void *serve(void *arg) {
    struct uffd_msg msg;
    for (;;) {
        struct pollfd p = {uffd, POLLIN, 0};
        poll(&p, 1, -1);
        if (read(uffd, &msg, sizeof msg) != sizeof msg)
            continue;
        char *page = (char *)(msg.arg.pagefault.address & ~(PAGE - 1));
        pull(bounce, page, PAGE);
        struct uffdio_copy c = {(uintptr_t)page, (uintptr_t)bounce, PAGE, 0, 0};
        ioctl(uffd, UFFDIO_COPY, &c);
    }
    return arg;
}

/* Microseconds per fault (one touch per `stride` bytes). */
static double touch_all(size_t stride) {
    double t = now();
    for (size_t off = 0; off < SIZE; off += stride)
        sink += base[off];
    return (now() - t) / (SIZE / stride) * 1e6;
}

int main(void) {
    base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(base, 7, SIZE);
    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    munmap(base, SIZE);

    /* segv */
    mmap(base, SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    struct sigaction sa = {0};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    for (chunk = PAGE; chunk <= 64 * PAGE; chunk *= 4) {
        mprotect(base, SIZE, PROT_NONE);
        double first = touch_all(chunk);
        double t = now();
        mprotect(base, SIZE, PROT_NONE);
        double inval = (now() - t) * 1e6;
        double again = touch_all(chunk);
        printf("segv, %3lu pages per fault: %6.2f us per fault first fill, %6.2f us refill; invalidation %.1f us\n",
               chunk / PAGE, first, again, inval);
    }
    munmap(base, SIZE);

    /* uffd */
    uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
    struct uffdio_api api = {UFFD_API, 0, 0};
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
        perror("userfaultfd");
        return 1;
    }
    mmap(base, SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    struct uffdio_register reg = {{(uintptr_t)base, SIZE}, UFFDIO_REGISTER_MODE_MISSING, 0};
    if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
        perror("UFFDIO_REGISTER");
        return 1;
    }
    pthread_t th;
    pthread_create(&th, NULL, serve, NULL);
    double first = touch_all(PAGE);
    double t = now();
    madvise(base, SIZE, MADV_DONTNEED);
    double inval = (now() - t) * 1e6;
    double again = touch_all(PAGE);
    printf("uffd,   1 page  per fault: %6.2f us per fault first fill, %6.2f us refill; invalidation %.1f us\n", first,
           again, inval);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}
