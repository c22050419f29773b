#!/usr/bin/env bash
# Multithreaded record/replay overhead, measured in one run on this machine. Prints ratios.
#
#   bash bench/threads.sh                  # uses target/release/rdb (built if missing)
#   CPU_ITERS=400000000 OPS=10000 REPEAT=3 bash bench/threads.sh
#
# 1. 2 threads, CPU-bound (no syscalls while computing): serialization makes ~2x native the
#    floor on 2 cores, since rdb runs one thread of a process at a time.
# 2. 4 threads taking a mutex and writing a log line per operation (OPS each): futex
#    contention plus one write per op. Goal: recording <= 50x native, exact replay.
# Every replay's stdout is compared with the recording's (the program prints a checksum).
set -euo pipefail
cd "$(dirname "$0")/.."
CPU_ITERS=${CPU_ITERS:-400000000}
OPS=${OPS:-10000}
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli >&2
work=$(mktemp -d /tmp/rdb-bench-thr.XXXXXX)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
REPEAT=${REPEAT:-1}
# secs CMD... : wall-clock seconds, best of $REPEAT runs, output discarded
secs() {
  local best="" t0 t1 d i
  for ((i = 0; i < REPEAT; i++)); do
    t0=$(now); "$@" >/dev/null 2>&1 </dev/null || true; t1=$(now)
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
  done
  echo "$best"
}
rec() { local dir=$1; shift; rm -rf "$dir"; "$RDB" record -o "$dir" -- "$@"; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
fmt() { printf '%.3f' "$1"; }
# check NAME TRACE: the replay prints what the recording printed
check() {
  "$RDB" record -o "$work/chk-$1" -- "${@:3}" >"$work/rec-$1.out" 2>/dev/null </dev/null
  "$RDB" replay "$work/chk-$1" >"$work/rep-$1.out" 2>/dev/null </dev/null
  if cmp -s "$work/rec-$1.out" "$work/rep-$1.out"; then echo "replay exact: $(head -c 60 "$work/rec-$1.out")";
  else echo "REPLAY DIFFERS"; exit 1; fi
}

cat > "$work/cpu2.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static unsigned long n;
static void *work(void *arg) {
    unsigned long h = 1469598103934665603UL ^ (unsigned long)arg;
    for (unsigned long i = 0; i < n; i++) h = (h ^ i) * 1099511628211UL;
    return (void *)h;
}
int main(int argc, char **argv) {
    n = strtoul(argv[1], 0, 10) / 2;
    pthread_t t[2]; void *r[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], &r[i]);
    printf("%lx %lx\n", (unsigned long)r[0], (unsigned long)r[1]);
    return 0;
}
C
cat > "$work/lock4.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter, sum;
static int ops, logfd;
static void *work(void *arg) {
    char line[96];
    for (int i = 0; i < ops; i++) {
        pthread_mutex_lock(&m);
        counter++;
        sum = sum * 31 + (unsigned long)arg * 1000003 + i;
        int len = snprintf(line, sizeof line, "thread %ld op %d counter %lu\n", (long)arg, i, counter);
        write(logfd, line, len);
        pthread_mutex_unlock(&m);
    }
    return 0;
}
int main(int argc, char **argv) {
    ops = atoi(argv[1]);
    logfd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("counter %lu order-checksum %lx\n", counter, sum);
    return 0;
}
C
clang-14 -O2 "$work/cpu2.c" -o "$work/cpu2" -lpthread
clang-14 -O2 "$work/lock4.c" -o "$work/lock4" -lpthread

echo "== $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "== 2 threads, CPU-bound ($CPU_ITERS iterations in all)"
native=$(secs "$work/cpu2" "$CPU_ITERS")
rec=$(secs rec "$work/t-cpu" "$work/cpu2" "$CPU_ITERS")
rep=$(secs "$RDB" replay "$work/t-cpu")
echo "native $(fmt "$native") s, record $(fmt "$rec") s, replay $(fmt "$rep") s"
echo "record/native $(ratio "$rec" "$native")x   replay/native $(ratio "$rep" "$native")x   (floor ~2x: one thread at a time)"
check cpu "$work/t-cpu" "$work/cpu2" "$CPU_ITERS"

echo "== 4 threads, mutex + one log line per op ($OPS ops each, $((4 * OPS)) in all)"
native=$(secs "$work/lock4" "$OPS" "$work/log")
rec=$(secs rec "$work/t-lock" "$work/lock4" "$OPS" "$work/log")
rep=$(secs "$RDB" replay "$work/t-lock")
echo "native $(fmt "$native") s, record $(fmt "$rec") s, replay $(fmt "$rep") s"
echo "record/native $(ratio "$rec" "$native")x   replay/native $(ratio "$rep" "$native")x   (goal: record <= 50x)"
"$RDB" info "$work/t-lock" | grep -E "^(processes|events|size):"
check lock "$work/t-lock" "$work/lock4" "$OPS" "$work/log"
