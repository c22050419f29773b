// A 32-bit system call (`int 0x80`) from a 64-bit program is refused at its entry, with the
// reason, instead of being decoded with x86-64 numbering (20 is getpid for i386, writev for
// x86-64).
// rdb-expect: refused "a 32-bit system call (int 0x80, number 20)"
int main(void) {
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
    return r > 0 ? 0 : 1;
}
