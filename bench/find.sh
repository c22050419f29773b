#!/usr/bin/env bash
# rdb find: a bisection over a region's hits against one plain replay and against the linear
# scan (the check run at every hit, `rdb find --scan`), on the same trace, in one run.
#
#   bash bench/find.sh                      # uses target/release/rdb (built if missing)
#   ROUNDS=1000000 STRIDES="100 10 1" bash bench/find.sh
#   SCAN=0 ROUNDS=1000000 STRIDES=1 bash bench/find.sh   # without the linear scan
#
# bench/find/check.c: ROUNDS rounds of one system call each (one replay event); every STRIDE-th
# round runs a region whose rdb_check fails from 95% of the rounds on, so the region has
# ROUNDS/STRIDE hits and the answer is near the end. Goal: at most 2 + ceil(log2(N-1)) probes and
# the whole search <= 2x one plain replay. `counted` is the hits the counting replay counted
# before it stopped at a checkpoint whose check failed, `checks` the checks run at its
# checkpoints (besides the probes). `stops s` is the same search with a stop at every hit
# (`RDB_FIND_BREAKPOINTS=1`, the counting replay before counting stubs), `how` says how the
# default search counted.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1000000}
STRIDES=${STRIDES:-"100 10 1"}
RDB=${RDB:-target/release/rdb}
RDB_CLANG=${RDB_CLANG:-target/release/rdb-clang}
[ -x "$RDB" ] || cargo build --release -p rdb-cli -p rdb-host --bins >&2
[ -x "$RDB_CLANG" ] || RDB_CLANG=target/debug/rdb-clang
[ -x "$RDB_CLANG" ] || cargo build -p rdb-codegen-llvm --bins >&2
work=$(mktemp -d /tmp/rdb-bench-find.XXXXXX)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
secs() { echo "scale=2; $1 / 1" | bc -l; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
export RDB_NO_PROGRESS=1

cp bench/find/check.c "$work/"
(cd "$work" && "$OLDPWD/$RDB_CLANG" -O0 -g check.c -o check)
brk=$(( ROUNDS * 95 / 100 ))
echo "workload: $ROUNDS rounds (one syscall each), check fails from round $brk; load average $(cut -d' ' -f1 /proc/loadavg)"
printf '%9s %9s %9s %7s %6s %7s %10s %10s %10s %10s %10s %12s %12s %10s %s\n' hits events counted probes bound checks "replay s" "find s" "counting s" "stops s" "scan s" "find/replay" "stops/replay" "find/scan" how
for stride in $STRIDES; do
    trace="$work/t$stride"
    "$RDB" record -o "$trace" -- "$work/check" "$ROUNDS" "$stride" "$brk" >/dev/null 2>"$work/rec.err"
    events=$(grep -o 'recorded [0-9]* events' "$work/rec.err" | grep -o '[0-9]*')
    t0=$(now); "$RDB" replay -q "$trace" >/dev/null 2>&1; t1=$(now)
    replay=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); "$RDB" find "$trace" --debug "$work/check" >"$work/find.out" 2>"$work/find.err"; t1=$(now)
    find=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); RDB_FIND_BREAKPOINTS=1 "$RDB" find "$trace" --debug "$work/check" >"$work/stops.out" 2>"$work/stops.err"; t1=$(now)
    stops=$(echo "$t1 - $t0" | bc -l)
    if [ "$(head -1 "$work/find.out")" != "$(head -1 "$work/stops.out")" ]; then
        echo "counting stubs and breakpoints disagree:" >&2; cat "$work/find.out" "$work/stops.out" >&2; exit 1
    fi
    if [ "${SCAN:-1}" = 0 ]; then
        # SCAN=0: no linear scan (the longest run); the answer is checked against `stops`.
        cp "$work/stops.out" "$work/scan.out"; cp "$work/stops.err" "$work/scan.err"; scan=0
    else
        t0=$(now); "$RDB" find "$trace" --debug "$work/check" --scan >"$work/scan.out" 2>"$work/scan.err"; t1=$(now)
        scan=$(echo "$t1 - $t0" | bc -l)
    fi
    if [ "$(head -1 "$work/find.out")" != "$(head -1 "$work/scan.out")" ]; then
        echo "bisection and scan disagree:" >&2; cat "$work/find.out" "$work/scan.out" >&2; exit 1
    fi
    summary=$(grep ' probes' "$work/find.err")
    probes=$(echo "$summary" | grep -o '[0-9]* probes' | head -1 | grep -o '[0-9]*')
    bound=$(echo "$summary" | grep -o '= [0-9]* for' | grep -o '[0-9]*')
    counted=$(echo "$summary" | grep -o '[0-9]* hits' | head -1 | grep -o '[0-9]*')
    hits=$(grep -o '[0-9]* hits' "$work/scan.err" | head -1 | grep -o '[0-9]*')
    [ "${SCAN:-1}" = 0 ] && hits="-"
    checks=$(echo "$summary" | grep -o '[0-9]* checks at' | grep -o '[0-9]*')
    counting=$(echo "$summary" | grep -o 'counting replay [0-9.]*' | grep -o '[0-9.]*$')
    how=$(echo "$summary" | grep -o 'counted without a stop\|a stop at every hit' | head -1)
    printf '%9s %9s %9s %7s %6s %7s %10s %10s %10s %10s %10s %12s %12s %10s %s\n' "$hits" "$events" "$counted" "$probes" "$bound" "$checks" "$(secs "$replay")" \
        "$(secs "$find")" "$counting" "$(secs "$stops")" "$(secs "$scan")" "$(ratio "$find" "$replay")" "$(ratio "$stops" "$replay")" "$([ "${SCAN:-1}" = 0 ] && echo - || ratio "$find" "$scan")" "$how"
done
