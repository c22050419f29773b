/* A record in a page of its own that the program itself makes read-only (its write there
 * faults, and its SIGSEGV handler jumps back), writable again, unmaps and maps anew. The
 * callback test watches the record from a region (watchmap.region.c: this file plus the
 * region) with page protection: the program's own protection and fault must be what it sees. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "rdb.h"

struct record {
    long id;
    long balance;
    char name[32];
    long count;
    long checksum;
};

static sigjmp_buf env;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(env, 1);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return 1;
    struct record *r = (struct record *)(page + 64);
    rdb_begin
    rdb_watch(r, sizeof *r);
    rdb_end
    r->id = 1;
    mprotect(page, 4096, PROT_READ);
    int faulted = 0;
    if (sigsetjmp(env, 1) == 0)
        r->balance = 5;
    else
        faulted = 1;
    mprotect(page, 4096, PROT_READ | PROT_WRITE);
    r->balance = 6;
    munmap(page, 4096);
    if (mmap(page, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != page)
        return 1;
    r->count = 9;
    printf("faulted %d, id %ld, balance %ld, count %ld\n", faulted, r->id, r->balance, r->count);
    return 0;
}
