// Output written through a shared writable mapping of the standard output file reaches the file
// without any call that replay could re-emit: the recording is refused, saying so.
// rdb-stdout-to-file
// rdb-expect: refused "mmap of rdb's own output file (fd 1) shared and writable"
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    if (ftruncate(1, 4096) != 0)
        return 1;
    char *out = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 1, 0);
    if (out == MAP_FAILED)
        return 2;
    memcpy(out, "through memory\n", 15);
    return 0;
}
