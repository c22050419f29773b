// Output written by every call that moves bytes between descriptors reaches the replay exactly
// as the recording wrote it: sendfile (from an offset and from the file position), splice from
// a pipe and from a file, tee and vmsplice to a standard output that is a pipe, and the same
// calls writing to a file of the program's own (whose contents it then prints). Its twin
// output_by_fd_calls_to_file.c runs this with standard output in a regular file
// (copy_file_range instead of tee and vmsplice there).
// rdb-stdout: "sendfile at an offset\nsendfile at the position\nsplice from a pipe\nsplice from a file\ntee from a pipe\nvmsplice from memory\nvmsplice into memory\nin a file: sendfile splice copy_file_range\n"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static void check(long got, long want, const char *what) {
    if (got != want) {
        fprintf(stderr, "%s returned %ld, expected %ld: %s\n", what, got, want, strerror(errno));
        exit(1);
    }
}

/* A temporary file holding `text`, already unlinked. */
static int file_with(const char *text) {
    char name[] = "/tmp/rdb-fd-calls-XXXXXX";
    int fd = mkstemp(name);
    check(fd >= 0, 1, "mkstemp");
    unlink(name);
    check(write(fd, text, strlen(text)), (long)strlen(text), "write");
    return fd;
}

/* A pipe holding `text`. */
static void pipe_with(int p[2], const char *text) {
    check(pipe(p), 0, "pipe");
    check(write(p[1], text, strlen(text)), (long)strlen(text), "write");
}

int main(void) {
    struct stat st;
    check(fstat(1, &st), 0, "fstat");
    int to_pipe = S_ISFIFO(st.st_mode);

    int f = file_with("xxsendfile at an offset\nsendfile at the position\nsplice from a file\ncopy_file_range from a file\n");
    off_t off = 2;
    check(sendfile(1, f, &off, 22), 22, "sendfile at an offset");
    check(lseek(f, off, SEEK_SET), off, "lseek");
    check(sendfile(1, f, NULL, 25), 25, "sendfile at the position");

    int p[2];
    pipe_with(p, "splice from a pipe\n");
    check(splice(p[0], NULL, 1, NULL, 19, 0), 19, "splice from a pipe");

    if (to_pipe) {
        off = 49;
        check(splice(f, &off, 1, NULL, 19, 0), 19, "splice from a file");
        int q[2];
        pipe_with(q, "tee from a pipe\n");
        check(tee(q[0], 1, 16, 0), 16, "tee");
        char drained[16];
        check(read(q[0], drained, 16), 16, "read after tee");
        check(memcmp(drained, "tee from a pipe\n", 16), 0, "the bytes tee left");
        /* vmsplice hands the pages to the pipe: they must not change until read. */
        static char a[] = "vmsplice ", b[] = "from memory\n";
        struct iovec iov[2] = {{a, 9}, {b, 12}};
        check(vmsplice(1, iov, 2, 0), 21, "vmsplice");
        /* vmsplice from a pipe's read end copies into memory, like readv. */
        int v[2];
        pipe_with(v, "vmsplice into memory\n");
        static char into[32];
        struct iovec dst = {into, sizeof into};
        check(vmsplice(v[0], &dst, 1, 0), 21, "vmsplice from a pipe");
        check(memcmp(into, "vmsplice into memory\n", 21), 0, "the bytes vmsplice copied");
        check(write(1, into, 21), 21, "write");
    } else {
        /* A file can be spliced only through a pipe: through one of ours, into the output. */
        off = 49;
        check(splice(f, &off, p[1], NULL, 19, 0), 19, "splice from a file into a pipe");
        check(splice(p[0], NULL, 1, NULL, 19, 0), 19, "splice from a file");
        off_t from = 68;
        check(copy_file_range(f, &from, 1, NULL, 28, 0), 28, "copy_file_range");
    }

    /* The same calls writing to a file of the program's own. */
    int g = file_with("in a file: ");
    off = 2;
    check(sendfile(g, f, &off, 8), 8, "sendfile to a file");
    pipe_with(p, " splice ");
    check(splice(p[0], NULL, g, NULL, 8, 0), 8, "splice to a file");
    off_t from = 68, to = 27;
    check(copy_file_range(f, &from, g, &to, 15, 0), 15, "copy_file_range to a file");
    char back[64] = {0};
    check(pread(g, back, 42, 0), 42, "pread");
    back[42] = '\n';
    check(write(1, back, 43), 43, "write");
    return 0;
}
