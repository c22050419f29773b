#!/usr/bin/env bash
# Cost of trapping cpuid (CPUID faulting) while recording, measured in one run on this machine.
#
#   bash bench/cpuid.sh                    # uses target/release/rdb (built if missing)
#   CALLS=100000 REPEAT=5 bash bench/cpuid.sh
#
# A C program executes cpuid CALLS times (leaves 0, 1, 4, 7 in turn, no syscalls in between)
# and prints a checksum. Timed, best of REPEAT: the program natively, `rdb record` with cpuid
# trapped (the default where the host has CPUID faulting) and `rdb record --no-cpuid-trap`;
# then `rdb replay` of each trace. Prints the per-cpuid cost of a trapped one and the ratios,
# then the same two recordings of `python3 -c pass`.
# Every replay's stdout is compared with its recording's.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=${CALLS:-100000}
REPEAT=${REPEAT:-3}
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli >&2
work=$(mktemp -d /tmp/rdb-bench-cpuid.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! grep -qw cpuid_fault /proc/cpuinfo; then
  echo "this host has no CPUID faulting (no cpuid_fault flag): nothing is trapped, nothing to measure"
  exit 0
fi

cat >"$work/loop.c" <<'C'
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  unsigned sum = 0, a, b, c, d, leaves[4] = {0, 1, 4, 7};
  for (long i = 0; i < n; i++) {
    __cpuid_count(leaves[i & 3], 0, a, b, c, d);
    sum += a ^ c ^ d ^ (leaves[i & 3] == 1 ? b & 0xffffff : b);
  }
  printf("%ld cpuid, checksum %u\n", n, sum);
  return 0;
}
C
cc -O2 -o "$work/loop" "$work/loop.c"

now() { date +%s.%N; }
# secs CMD...: wall-clock seconds, best of $REPEAT runs, output discarded
secs() {
  local best="" t0 t1 d i
  for ((i = 0; i < REPEAT; i++)); do
    t0=$(now); "$@" >/dev/null 2>&1 </dev/null; t1=$(now)
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
  done
  echo "$best"
}
rec() { local dir=$1; shift; rm -rf "$dir"; "$RDB" record "$@"; }
ratio() { printf "%.2f" "$(echo "$1 / $2" | bc -l)"; }

native=$(secs "$work/loop" "$CALLS")
trapped=$(secs rec "$work/t" -o "$work/t" -- "$work/loop" "$CALLS")
untrapped=$(secs rec "$work/u" --no-cpuid-trap -o "$work/u" -- "$work/loop" "$CALLS")
# The replays (and a check that they print what was recorded).
"$RDB" record -o "$work/tc" -- "$work/loop" "$CALLS" >"$work/rec-t.out" 2>/dev/null
"$RDB" record --no-cpuid-trap -o "$work/uc" -- "$work/loop" "$CALLS" >"$work/rec-u.out" 2>/dev/null
rep_trapped=$(secs "$RDB" replay "$work/tc")
rep_untrapped=$(secs "$RDB" replay "$work/uc")
"$RDB" replay "$work/tc" >"$work/rep-t.out" 2>/dev/null
"$RDB" replay "$work/uc" >"$work/rep-u.out" 2>/dev/null
cmp -s "$work/rec-t.out" "$work/rep-t.out" && cmp -s "$work/rec-u.out" "$work/rep-u.out" \
  || { echo "a replay printed something else than its recording"; exit 1; }
events=$("$RDB" info "$work/tc" | sed -n 's/^cpuid: *trapped (CPUID faulting): \([0-9]*\) .*/\1/p')

echo "cpuid loop, $CALLS calls ($events trapped in all, glibc's start-up included), best of $REPEAT, load $(cut -d' ' -f1 /proc/loadavg), rdb $RDB"
printf 'native                     %.3f s\n' "$native"
printf 'record, cpuid trapped      %.3f s  (%sx native)\n' "$trapped" "$(ratio "$trapped" "$native")"
printf 'record, --no-cpuid-trap    %.3f s  (%sx native)\n' "$untrapped" "$(ratio "$untrapped" "$native")"
printf 'trapped vs untrapped       %sx; per trapped cpuid %.1f us\n' "$(ratio "$trapped" "$untrapped")" \
  "$(echo "($trapped - $untrapped) * 1000000 / $CALLS" | bc -l)"
printf 'replay, trapped / untrapped %.3f s / %.3f s (%sx)\n' "$rep_trapped" "$rep_untrapped" \
  "$(ratio "$rep_trapped" "$rep_untrapped")"

# A real program: python3's start-up executes cpuid about 2,600 times here (its libraries'
# CPU feature detection), /bin/true about 70 (glibc's).
if command -v python3 >/dev/null; then
  py_t=$(secs rec "$work/pt" -o "$work/pt" -- python3 -c pass)
  py_u=$(secs rec "$work/pu" --no-cpuid-trap -o "$work/pu" -- python3 -c pass)
  py_n=$("$RDB" info "$work/pt" | sed -n 's/^cpuid: *trapped (CPUID faulting): \([0-9]*\) .*/\1/p')
  printf 'record python3 -c pass     trapped %.3f s (%s cpuid), untrapped %.3f s: %sx\n' "$py_t" "$py_n" "$py_u" \
    "$(ratio "$py_t" "$py_u")"
fi
