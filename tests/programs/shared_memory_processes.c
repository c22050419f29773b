// Processes sharing memory (issue 17), replayed exactly: rdb schedules them as one unit, like
// threads, and replay maps a shared copy of each file mapped MAP_SHARED.
// 1. MAP_SHARED|MAP_ANONYMOUS inherited across fork: the child stores 42 and raises a flag the
//    parent spins on (a bounded loop with sched_yield), then the two take turns through a futex
//    on the shared page, counting to 200.
// 2. A file in /tmp and a POSIX shared memory object (/dev/shm), each mapped separately by the
//    parent and by a child that opens it by name, and a memfd the child maps again from the
//    descriptor it inherited: what the child stores, the parent reads.
// rdb-build: -O1 -g
// rdb-replays: 3
// rdb-stdout: "anonymous: flag seen, value 42\nturns: 200\nfile: parent reads 42\nshm: parent reads 42\nmemfd: parent reads 42\n"
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct page {
    volatile int flag, value;
    volatile int turn; // futex word: whose turn it is (0 parent, 1 child)
    volatile int count;
};

static void futex_wait(volatile int *w, int v) { syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0); }
static void futex_wake(volatile int *w) { syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0); }

// Take turns `me` (0 or 1) with the other process until the count reaches 200.
static void take_turns(struct page *p, int me) {
    for (;;) {
        while (p->turn != me) {
            if (p->count >= 200) return;
            futex_wait(&p->turn, !me);
        }
        if (p->count >= 200) {
            p->turn = !me;
            futex_wake(&p->turn);
            return;
        }
        p->count++;
        p->turn = !me;
        futex_wake(&p->turn);
    }
}

static void anonymous(void) {
    struct page *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(10);
    pid_t c = fork();
    if (c == 0) {
        p->value = 42;
        p->flag = 1;
        take_turns(p, 1);
        _exit(0);
    }
    int spins = 0;
    while (!p->flag && spins < 1000000) {
        sched_yield();
        spins++;
    }
    printf("anonymous: flag %s, value %d\n", p->flag ? "seen" : "never seen", p->value);
    take_turns(p, 0);
    waitpid(c, NULL, 0);
    printf("turns: %d\n", p->count);
}

// Map `fd` shared in the parent and, opened again by `open_again`, in a child that stores 42.
static int by_name(int fd, int (*open_again)(const char *), const char *name) {
    if (ftruncate(fd, 4096) != 0) exit(11);
    int *mine = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mine == MAP_FAILED) exit(12);
    *mine = 1;
    pid_t c = fork();
    if (c == 0) {
        int f = open_again(name);
        int *theirs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        if (theirs == MAP_FAILED) _exit(13);
        *theirs = 42;
        _exit(0);
    }
    waitpid(c, NULL, 0);
    return *mine;
}

static int open_file(const char *name) { return open(name, O_RDWR); }
static int memfd;
static int same_memfd(const char *name) { return name ? memfd : -1; }
static int open_shm(const char *name) { return shm_open(name, O_RDWR, 0); }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    anonymous();
    char path[64];
    snprintf(path, sizeof path, "/tmp/rdb-shared-%d", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return 1;
    printf("file: parent reads %d\n", by_name(fd, open_file, path));
    unlink(path);
    char name[64];
    snprintf(name, sizeof name, "/rdb-shared-%d", (int)getpid());
    int shm = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (shm < 0) return 2;
    printf("shm: parent reads %d\n", by_name(shm, open_shm, name));
    shm_unlink(name);
    memfd = memfd_create("rdb-shared", 0);
    if (memfd < 0) return 3;
    printf("memfd: parent reads %d\n", by_name(memfd, same_memfd, "memfd"));
    return 0;
}
