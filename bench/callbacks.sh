#!/usr/bin/env bash
# Cost of an event callback under replay, per event, against gdb doing the same on a live run,
# measured in the same invocation: a C program makes N system calls (`write`), N calls of a
# function, N writes to a global, or N writes to a page-sized global; rdb replays its recording
# with a callback that counts them (RDB_ON_SYSCALL(write), RDB_ON_CALL(step),
# RDB_ON_WRITE(counter) with a debug register, RDB_ON_WRITE(big) with page protection: 8
# registers would be needed); gdb runs it live with `catch syscall write`, `break step`,
# `watch -l counter` and `watch -l big` (gdb's software watchpoint: more than its debug
# registers cover), each with `commands silent; continue; end`. Per event: (time with N events
# - time with 1 event) / (N - 1), so that start-up costs cancel out; rdb's also less its plain
# replay of the same traces.
#   bench/callbacks.sh            # RDB_EVENTS=20000 by default
#   RDB_BENCH_MODES="page" bench/callbacks.sh   # some of: syscall call write page
#   RDB_BASELINE=/tmp/old bench/callbacks.sh    # also an older build's rdb (its rdb,
#     rdb-debug-host, rdb-call-region copied there) replaying the same traces: before/after
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
N=${RDB_EVENTS:-20000}
CPU=${RDB_BENCH_CPU:-0}
MODES=${RDB_BENCH_MODES:-syscall call write page}
BASE=${RDB_BASELINE:-}
(cd "$root" && cargo build -q --release --workspace --bins)
export PATH="$root/target/release:$PATH"
tmp=$(mktemp -d)
[ -n "${RDB_KEEP:-}" ] && echo "keeping $tmp" >&2 || trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cat > events.c <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long counter;
/* Alone in its page (page protection stops every write to the page, not only the range's). */
struct page { long v[8]; char rest[4096 - 64]; } big __attribute__((aligned(4096)));

__attribute__((noinline)) long step(long v) {
    return v * 3 + 1;
}

int main(int argc, char **argv) {
    const char *mode = argv[1];
    long n = atol(argv[2]), acc = 0;
    int fd = open("/dev/null", O_WRONLY);
    for (long i = 0; i < n; i++) {
        if (strcmp(mode, "syscall") == 0)
            write(fd, "x", 1);
        else if (strcmp(mode, "call") == 0)
            acc += step(i);
        else if (strcmp(mode, "page") == 0)
            big.v[i & 7] = i + 1;
        else
            counter = i + 1;
    }
    return acc == 42; /* never: keeps acc alive */
}
C
cat > events.rdb.c <<'C'
#include "rdb.h"
static long writes, calls, changes;
RDB_ON_SYSCALL(write, after) void wrote(const rdb_syscall *call) { writes += (long)call->data_len; }
RDB_ON_CALL(step) void stepped(long v) { calls += v; }
RDB_ON_WRITE(counter) void changed(long old, long new) { changes += new - old; }
RDB_ON_WRITE(big) void big_changed(void) { changes++; }
C
clang-14 -O0 -g events.c -o events
for mode in $MODES; do
  rdb record -o "$tmp/$mode-N" -- ./events "$mode" "$N" >/dev/null 2>&1
  rdb record -o "$tmp/$mode-1" -- ./events "$mode" 1 >/dev/null 2>&1
done
rdb-clang -O0 -g events.c events.rdb.c -o events

now() { date +%s.%N; }
elapsed() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); echo "$t1 - $t0" | bc; }
best() { # best of 3 runs of a command, seconds
  local b="" t
  for _ in 1 2 3; do t=$(elapsed "$@"); if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi; done
  echo "$b"
}
# The callbacks really ran: a replay of each trace reports no problem and no callback left out.
for mode in $MODES; do
  out=$(rdb replay "$tmp/$mode-N" --debug ./events 2>&1 >/dev/null || true)
  if echo "$out" | grep -q "did not complete\|cannot"; then echo "rdb: $mode callbacks failed: $out" >&2; exit 1; fi
done

gdb_script() { # $1: mode: a gdb script counting the events in $hits
  local setup
  case "$1" in
    syscall) setup="catch syscall write" ;;
    call) setup="break step" ;;
    write) setup="watch -l counter" ;;
    page) setup="watch -l big" ;;
  esac
  cat <<GDB
set pagination off
set startup-with-shell off
break main
run
$setup
commands
silent
set \$hits = \$hits + 1
continue
end
set \$hits = 0
continue
printf "hits %d\\n", \$hits
GDB
}
for mode in $MODES; do gdb_script "$mode" > "$tmp/$mode.gdb"; done
gdb_run() { # $1: mode, $2: events
  gdb -batch -nx -x "$tmp/$1.gdb" --args ./events "$1" "$2"
}
# gdb sees every event: `catch syscall` stops at each call's entry and exit.
for mode in $MODES; do
  hits=$(gdb_run "$mode" 100 2>&1 | sed -n 's/^hits //p')
  want=100; [ "$mode" = syscall ] && want=200
  [ "$hits" = "$want" ] || { echo "gdb counted $hits $mode events, expected $want" >&2; exit 1; }
done
printf 'one C program, %d events each, best of 3 runs (rdb: its replay; gdb: a live run, pinned to CPU %s); load average %s\n' \
  "$N" "$CPU" "$(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$BASE" ]; then
  printf '  %-9s %12s %12s %12s %10s %10s\n' event "rdb us/event" "base us/ev" "gdb us/event" "gdb / rdb" "gdb / base"
else
  printf '  %-9s %12s %12s %10s\n' event "rdb us/event" "gdb us/event" "gdb / rdb"
fi
per_event() { # $1: the rdb executable, $2: mode: its cost per callback, µs
  local plainN plain1 withN with1
  plainN=$(best "$1" replay -q "$tmp/$2-N")
  plain1=$(best "$1" replay -q "$tmp/$2-1")
  withN=$(best "$1" replay -q "$tmp/$2-N" --debug ./events)
  with1=$(best "$1" replay -q "$tmp/$2-1" --debug ./events)
  echo "scale=2; (($withN - $plainN) - ($with1 - $plain1)) * 1000000 / ($N - 1)" | bc
}
for mode in $MODES; do
  rdb_us=$(per_event rdb "$mode")
  [ -n "$BASE" ] && base_us=$(per_event "$BASE/rdb" "$mode")
  gdbN=$(best taskset -c "$CPU" bash -c "tmp=$tmp; $(declare -f gdb_run); gdb_run $mode $N")
  gdb1=$(best taskset -c "$CPU" bash -c "tmp=$tmp; $(declare -f gdb_run); gdb_run $mode 1")
  gdb_us=$(echo "scale=2; ($gdbN - $gdb1) * 1000000 / ($N - 1)" | bc)
  if [ -n "$BASE" ]; then
    printf '  %-9s %12.2f %12.2f %12.2f %9.1fx %9.1fx\n' "$mode" "$rdb_us" "$base_us" "$gdb_us" \
      "$(echo "$gdb_us / $rdb_us" | bc -l)" "$(echo "$gdb_us / $base_us" | bc -l)"
  else
    printf '  %-9s %12.2f %12.2f %9.1fx\n' "$mode" "$rdb_us" "$gdb_us" "$(echo "$gdb_us / $rdb_us" | bc -l)"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
