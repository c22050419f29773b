# A 32-bit program is refused when it is exec'ed, with the reason (its system calls are
# numbered and passed differently), instead of being decoded with x86-64 numbering. Built
# with binutils alone (no 32-bit C library needed).
# rdb-setup: as --32 "$CASE_DIR/support/hello32.s" -o hello32.o && ld -m elf_i386 hello32.o -o hello32
# rdb-expect: refused "is a 32-bit program: rdb records x86-64 programs only"
exec ./hello32
