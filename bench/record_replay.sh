#!/usr/bin/env bash
# Record/replay overhead, measured in one run on this machine. Prints ratios.
#
#   bash bench/record_replay.sh            # uses target/release/rdb (built if missing)
#   DD_COUNT=200000 CPU_ITERS=600000000 bash bench/record_replay.sh
#
# 1. CPU-bound C program: record and replay time vs native.
# 2. Syscall-heavy `dd bs=64`: record (pinned to one CPU, and unpinned on a smaller count)
#    vs native vs `taskset -c 0 strace -f -o /dev/null`; replay vs native. Record and strace
#    run alternately, ROUNDS_DD rounds (default 3), both started on CPU 0 (rdb pins itself to
#    the CPU it starts on), so both meet the same neighbours; best of the rounds, and the
#    spread of the per-round ratios. Also their CPU time (user+sys of rdb or strace and dd),
#    which a neighbour on the same CPU does not inflate.
# 3. Trace bytes per syscall.
set -euo pipefail
cd "$(dirname "$0")/.."
DD_COUNT=${DD_COUNT:-200000}
CPU_ITERS=${CPU_ITERS:-600000000}
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli >&2
work=$(mktemp -d /tmp/rdb-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
# secs CMD... : wall-clock seconds, best of $REPEAT runs (the machine is shared: the minimum is
# the least disturbed run), output discarded
REPEAT=${REPEAT:-3}
secs() {
  local best="" t0 t1 d i
  for ((i = 0; i < REPEAT; i++)); do
    t0=$(now); "$@" >/dev/null 2>&1 </dev/null || true; t1=$(now)
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
  done
  echo "$best"
}
# rec [--no-pin] DIR PROG ARGS... : record into a fresh DIR
rec() { local pin=(); if [ "$1" = --no-pin ]; then pin=(--no-pin); shift; fi
  local dir=$1; shift; rm -rf "$dir"; "$RDB" record "${pin[@]}" -o "$dir" -- "$@"; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
fmt() { printf '%.3f' "$1"; }

cat > "$work/cpu.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    unsigned long n = strtoul(argv[1], 0, 10), h = 1469598103934665603UL;
    for (unsigned long i = 0; i < n; i++) h = (h ^ i) * 1099511628211UL;
    printf("%lx\n", h);
    return 0;
}
C
clang-14 -O2 "$work/cpu.c" -o "$work/cpu"

echo "== $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "== CPU-bound ($CPU_ITERS iterations)"
native=$(secs "$work/cpu" "$CPU_ITERS")
rec=$(secs rec "$work/t-cpu" "$work/cpu" "$CPU_ITERS")
rep=$(secs "$RDB" replay "$work/t-cpu")
rec_np=$(secs rec --no-pin "$work/t-cpu-np" "$work/cpu" "$CPU_ITERS")
echo "native $(fmt "$native") s, record $(fmt "$rec") s, replay $(fmt "$rep") s, record --no-pin $(fmt "$rec_np") s"
echo "record/native $(ratio "$rec" "$native")x   replay/native $(ratio "$rep" "$native")x   record --no-pin/native $(ratio "$rec_np" "$native")x"

echo "== dd if=/dev/zero of=/dev/null bs=64 count=$DD_COUNT"
dd_args=(if=/dev/zero of=/dev/null bs=64 count="$DD_COUNT")
native=$(secs dd "${dd_args[@]}")
REPEAT=1
# timed CMD... : "wall cpu" seconds of one run (cpu = user + sys of CMD and its children)
timed() { /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1 </dev/null || true
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$work/time"; }
min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc -l)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
rec="" strace_t="" rec_cpu="" strace_cpu="" round_ratios=()
for ((round = 0; round < ${ROUNDS_DD:-3}; round++)); do
  read -r r rc < <(timed taskset -c 0 "$RDB" record -o "$work/t-dd-$round" -- dd "${dd_args[@]}")
  read -r s sc < <(timed taskset -c 0 strace -f -o /dev/null dd "${dd_args[@]}")
  round_ratios+=("$(ratio "$r" "$s")")
  if [ -z "$rec" ] || [ "$(echo "$r < $rec" | bc -l)" = 1 ]; then rec=$r; rm -rf "$work/t-dd.best"; mv "$work/t-dd-$round" "$work/t-dd.best"; fi
  strace_t=$(min "$strace_t" "$s"); rec_cpu=$(min "$rec_cpu" "$rc"); strace_cpu=$(min "$strace_cpu" "$sc")
  rm -rf "$work/t-dd-$round"
done
rm -rf "$work/t-dd"; mv "$work/t-dd.best" "$work/t-dd"
rep=$(secs "$RDB" replay "$work/t-dd")
small=$((DD_COUNT / 10))
rec_small=$(secs rec "$work/t-dd-small" dd if=/dev/zero of=/dev/null bs=64 count="$small")
rec_unpinned=$(secs rec --no-pin "$work/t-dd-unpinned" dd if=/dev/zero of=/dev/null bs=64 count="$small")
syscalls=$("$RDB" info "$work/t-dd" | sed -n 's/^events: *[0-9]* (\([0-9]*\) syscalls.*/\1/p')
bytes=$("$RDB" info "$work/t-dd" | sed -n 's/^size: *\([0-9]*\) bytes.*/\1/p')
echo "native $(fmt "$native") s, rdb record $(fmt "$rec") s, rdb replay $(fmt "$rep") s, pinned strace $(fmt "$strace_t") s"
echo "record/native $(ratio "$rec" "$native")x   record/strace $(ratio "$rec" "$strace_t")x (best of ${ROUNDS_DD:-3}; per round: ${round_ratios[*]})   replay/native $(ratio "$rep" "$native")x"
echo "per syscall: record $(echo "scale=2; $rec * 1000000 / $syscalls" | bc -l) us, strace $(echo "scale=2; $strace_t * 1000000 / $syscalls" | bc -l) us"
echo "CPU time (best of ${ROUNDS_DD:-3}): record $(fmt "$rec_cpu") s, strace $(fmt "$strace_cpu") s, record/strace $(ratio "$rec_cpu" "$strace_cpu")x"
HERMIT=${HERMIT:-$(command -v hermit || true)}
if [ -n "$HERMIT" ] && [ -x "$HERMIT" ]; then
  hdata="$work/hermit-data"
  # Hermit needs CPUID faulting; where the hypervisor lacks it, it refuses to record.
  if herr=$(HERMIT_DATA_DIR="$hdata-probe" "$HERMIT" record -- true 2>&1 >/dev/null </dev/null); then
    hermit_t=$(secs env HERMIT_DATA_DIR="$hdata" "$HERMIT" record -- dd "${dd_args[@]}")
    echo "hermit record $(fmt "$hermit_t") s: hermit/rdb $(ratio "$hermit_t" "$rec")x, $(echo "scale=2; $hermit_t * 1000000 / $syscalls" | bc -l) us/syscall"
  else
    echo "hermit: cannot record on this machine: $(printf '%s\n' "$herr" | grep -m1 '^Error:' || printf '%s\n' "$herr" | tail -n 1)"
  fi
else
  echo "hermit: not installed (cargo install hermit-run; needs libunwind-dev), skipped"
fi
echo "unpinned vs pinned record (count=$small): $(fmt "$rec_unpinned") s vs $(fmt "$rec_small") s = $(ratio "$rec_unpinned" "$rec_small")x"
echo "trace: $bytes bytes for $syscalls syscalls = $(echo "scale=2; $bytes / $syscalls" | bc -l) bytes/syscall (dd moves zeros)"
rec "$work/t-cc" clang-14 -O1 -c "$work/cpu.c" -o "$work/cpu.o" >/dev/null 2>&1
syscalls=$("$RDB" info "$work/t-cc" | sed -n 's/^events: *[0-9]* (\([0-9]*\) syscalls.*/\1/p')
bytes=$("$RDB" info "$work/t-cc" | sed -n 's/^size: *\([0-9]*\) bytes.*/\1/p')
echo "trace: $bytes bytes for $syscalls syscalls = $(echo "scale=2; $bytes / $syscalls" | bc -l) bytes/syscall (clang-14 -c)"
