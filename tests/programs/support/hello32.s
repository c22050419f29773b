# A static 32-bit (i386) program: write and exit through int 0x80 (programs::elf32_program_is_refused).
.globl _start
_start:
    movl $4, %eax        # write
    movl $1, %ebx
    movl $msg, %ecx
    movl $14, %edx
    int $0x80
    movl $1, %eax        # exit
    xorl %ebx, %ebx
    int $0x80
.data
msg: .ascii "a 32-bit hello\n"
