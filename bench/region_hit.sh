#!/usr/bin/env bash
# Cost of one region hit: the debug host running a trivial region at each
# breakpoint stop of a live program (rdb-host's measure test), against gdb
# `dprintf` at the same function of the same program, unpinned and with
# everything pinned to one CPU.
#   bench/region_hit.sh            # RDB_STOPS=5000 by default
set -euo pipefail
cd "$(dirname "$0")/.."
N=${RDB_STOPS:-5000}
CPU=${RDB_BENCH_CPU:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clang-14 -O0 -g -o "$tmp/program" rdb-host/tests/fixtures/program.c

now() { date +%s.%N; }

gdb_time() { # $1: hits; rest: prefix (e.g. taskset); prints seconds
  local n=$1 t0 t1 hits
  shift
  t0=$(now)
  "$@" gdb -batch -nx -ex 'set pagination off' -ex 'set startup-with-shell off' \
    -ex 'dprintf checkpoint,"hit %ld\n",i' -ex run --args "$tmp/program" "$n" >"$tmp/gdb.out" 2>&1
  t1=$(now)
  hits=$(grep -c '^hit ' "$tmp/gdb.out" || true)
  [ "$hits" = "$n" ] || { echo "gdb printed $hits hits, expected $n" >&2; exit 1; }
  echo "$t1 - $t0" | bc
}
# Per hit: (time with N hits - time with 1 hit) / (N - 1), so gdb's start-up does not count.
gdb_per_hit() { echo "scale=1; ($(gdb_time "$N" "$@") - $(gdb_time 1 "$@")) * 1000000 / ($N - 1)" | bc; }
gdb_unpinned=$(gdb_per_hit)
gdb_pinned=$(gdb_per_hit taskset -c "$CPU")

cargo test -q -p rdb-host --release --test host --no-run 2>/dev/null
measure() {
  RDB_STOPS=$N "$@" cargo test -q -p rdb-host --release --test host -- --ignored --nocapture measure_invoke_cost 2>/dev/null |
    grep -E '^(stops=|trivial|region|fault)' | sed 's/^/    /'
}

echo "gdb dprintf at checkpoint:  $gdb_unpinned us per hit unpinned, $gdb_pinned us per hit pinned to CPU $CPU"
for faults in uffd signal; do
  echo "rdb-host ($faults), unpinned:"
  measure env RDB_FAULTS=$faults
  echo "rdb-host ($faults), tracer, program and host pinned to CPU $CPU:"
  measure env RDB_FAULTS=$faults RDB_CPU="$CPU"
done
OTHER=$(( CPU == 0 ? 1 : 0 ))
echo "rdb-host (auto), tracer and program on CPU $OTHER, host on CPU $CPU, no busy-wait:"
measure env RDB_CPU="$OTHER" RDB_HOST_CPU="$CPU"
echo "rdb-host (auto), tracer and program on CPU $OTHER, host on CPU $CPU, busy-wait 200 us:"
measure env RDB_CPU="$OTHER" RDB_HOST_CPU="$CPU" RDB_SPIN_US=200
echo "(stops come from the test's own ptrace loop: cont, trap, step, re-insert; the replayer's differ)"
