/* Reads an int from the file named by argv[1]; spins forever in user code (no syscalls) when
 * it is 42, else prints it. Recorded with another value, then replayed from a trace whose read
 * was changed to 42, it shows the replay's stall detection. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    volatile int x = 0;
    if (fd < 0 || read(fd, (int *)&x, sizeof x) != sizeof x) return 2;
    while (x == 42) {
    }
    printf("%d\n", x);
    return 0;
}
