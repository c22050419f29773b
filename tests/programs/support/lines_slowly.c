/* Prints a line a millisecond for over a second: the trace has several chunks (a chunk is
 * written at the latest every half second), so one cut short still holds most of the run. */
#include <stdio.h>
#include <unistd.h>

long printed;

int main(void) {
    for (int i = 0; i < 1500; i++) {
        printf("%d\n", i);
        printed++;
        fflush(stdout);
        usleep(1000);
    }
    return 0;
}
