#include <stdio.h>
int a(int), b(int), c(int);
int main(void) { printf("%d %d %d\n", a(1), b(2), c(3)); return 0; }
