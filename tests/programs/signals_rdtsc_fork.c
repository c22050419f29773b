// rdtsc/rdtscp, alarm into pause, a signal to itself, SIGCHLD from a forked child, and an exit
// status passed through. Two runs read different TSC values.
// rdb-exit: 3
// rdb-stdout-contains: "child exit 7, signals 1"
// rdb-nondeterministic
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>
static volatile int got;
static void on_signal(int s) { (void)s; got++; }
int main(void) {
    unsigned aux;
    unsigned long long a = __rdtsc(), b = __rdtscp(&aux);
    printf("tsc %llu %llu\n", a, b);
    signal(SIGALRM, on_signal);
    signal(SIGUSR1, on_signal);
    signal(SIGCHLD, on_signal);
    alarm(1);
    pause();
    printf("after alarm: %d\n", got);
    kill(getpid(), SIGUSR1);
    printf("after kill: %d\n", got);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) { printf("child\n"); fflush(stdout); _exit(7); }
    int st;
    while (waitpid(c, &st, 0) < 0) {}
    printf("child exit %d, signals %d\n", WEXITSTATUS(st), got > 2);
    return 3;
}
