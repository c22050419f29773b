#include <stdio.h>
int foo(void);
int main(void) { printf("%d\n", foo()); return 0; }
