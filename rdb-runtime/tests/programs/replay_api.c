#include <stdio.h>
#include <unistd.h>
int counter;
__attribute__((noinline)) int work(int x) {
    counter += x;
    return counter * 2;
}
int main(void) {
    int total = 0;
    for (int i = 1; i <= 3; i++) total += work(i);
    printf("total %d\n", total);
    write(1, "bye\n", 4);
    return 0;
}
