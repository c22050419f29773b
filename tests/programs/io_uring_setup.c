// A system call the engine does not support is refused at record time, by name and number.
// rdb-expect: refused "unsupported syscall `io_uring_setup` (number 425)"
#include <unistd.h>
#include <sys/syscall.h>
int main(void) { syscall(425, 1, 0); return 0; }
