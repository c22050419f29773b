// Two processes for gdb on replays (tests/gdb/fork.gdb): gdb debugs the child (`--pid`) while
// the parent replays alongside.
// rdb-build: -O0 -g
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int shared_before_fork = 1;

int child_work(int n) {
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += i * shared_before_fork;
    return sum;
}

int main(void) {
    shared_before_fork = 3;
    pid_t pid = fork();
    if (pid == 0) {
        printf("child: %d\n", child_work(4));
        return 7;
    }
    int status;
    waitpid(pid, &status, 0);
    printf("parent: child exited with %d\n", WEXITSTATUS(status));
    return 0;
}
