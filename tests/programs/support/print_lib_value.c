/* Prints what lib_value() of libvalue.so returns. */
#include <stdio.h>
int lib_value(void);
int main(void) {
    printf("library value %d\n", lib_value());
    return 0;
}
