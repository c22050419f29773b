/* A 64-byte record changed field by field at known lines, part of it filled by read(2) from
 * a pipe, and five counters. The callback test watches the record and the counters from a
 * region (watchbig.region.c: this file plus the region): the record and the fifth counter
 * do not fit the four debug registers and are watched with page protection. */
#include <stdio.h>
#include <unistd.h>

struct record {
    long id;
    long balance;
    char name[32];
    long count;
    long checksum;
};

static struct record rec;
static long noise;
static long a, b, c, d, e;

int main(void) {
    int fds[2];
    rec.id = 7;
    for (long i = 1; i <= 3; i++) {
        noise += i;
        rec.balance += 100 * i;
    }
    rec.count = 0;
    if (pipe(fds) != 0)
        return 1;
    if (write(fds[1], "Ada", 4) != 4 || read(fds[0], rec.name, 4) != 4)
        return 1;
    rec.count = 2;
    rec.checksum = rec.id + rec.balance + rec.count;
    a = 1;
    b = 2;
    c = 3;
    d = 4;
    e = 5;
    e = e * 10;
    printf("%ld %ld %s %ld %ld; %ld %ld %ld %ld %ld; noise %ld\n", rec.id, rec.balance, rec.name, rec.count,
           rec.checksum, a, b, c, d, e, noise);
    return 0;
}
