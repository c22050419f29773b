/* Prints the value it was compiled with (-DVALUE=n): rebuilding it with another value makes
 * a different program at the same path. */
#include <stdio.h>
int main(void) {
    printf("value %d\n", VALUE);
    return 0;
}
