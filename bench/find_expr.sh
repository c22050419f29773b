#!/usr/bin/env bash
# rdb find --expr: the statement that changed a static inside one long stretch of user code,
# against a plain replay of the same trace, in one run.
#
#   bash bench/find_expr.sh                       # uses target/release/rdb (built if missing)
#   ITERS="142857 142857142" bash bench/find_expr.sh   # 10^6 and 10^9 instructions
#
# bench/find/expr.c runs ITERS iterations of a 7-instruction loop (objdump of its -O1 build)
# between two system calls (getpid, then printf's write): one stretch of 7 x ITERS instructions
# with no event inside, in which `audited` and `ACCOUNT->audited` (behind a pointer) change
# once, at the middle. Measured on the same trace: `rdb replay` (the whole trace, plain),
# `rdb find --expr audited --first-change` (from the start to the statement, its line and
# backtrace), `rdb find --expr 'ACCOUNT->audited' --change 3` (the same for a place: two
# debug registers, the pointer and the value; changes 1 and 2 are the calloc'd pointer's store
# and the value's first store, before the stretch), `rdb find --expr audited --changes` (the whole
# replay, every change). Goal: the statement within 1 s for intervals of <= 10^6
# instructions.
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${ITERS:-"142857 14285714 142857142"}
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli -p rdb-host --bins >&2
work=$(mktemp -d /tmp/rdb-bench-find-expr.XXXXXX)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
secs() { echo "scale=3; $1 / 1" | bc -l; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
export RDB_NO_PROGRESS=1

clang-14 -O1 -g bench/find/expr.c -o "$work/expr"
line=$(grep -n 'the statement rdb find --expr audited must name' bench/find/expr.c | cut -d: -f1)
pline=$(grep -n "the statement rdb find --expr 'ACCOUNT->audited' must name" bench/find/expr.c | cut -d: -f1)
loop=$(objdump -d --no-show-raw-insn "$work/expr" | awk '/<main>:/,/ret/' | grep -c 'imul')
[ "$loop" = 1 ] || { echo "the loop is not the one this bench counts (objdump):" >&2; exit 1; }
echo "workload: one stretch of 7 x ITERS instructions, one change of 'audited' and 'ACCOUNT->audited' in its middle; load average $(cut -d' ' -f1 /proc/loadavg)"
printf '%14s %10s %10s %14s %10s %12s %14s %12s %14s\n' instructions "native s" "replay s" "statement s" "place s" "changes s" "stmt/replay" "place/replay" "changes/replay"
for iters in $ITERS; do
    trace="$work/t$iters"
    "$RDB" record -o "$trace" -- "$work/expr" "$iters" >/dev/null 2>"$work/rec.err"
    t0=$(now); "$work/expr" "$iters" >/dev/null; t1=$(now)
    native=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); "$RDB" replay -q "$trace" >/dev/null 2>&1; t1=$(now)
    replay=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); "$RDB" find "$trace" --debug "$work/expr" --expr audited --first-change >"$work/first.out" 2>"$work/first.err"; t1=$(now)
    first=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); "$RDB" find "$trace" --debug "$work/expr" --expr 'ACCOUNT->audited' --change 3 >"$work/place.out" 2>"$work/place.err"; t1=$(now)
    place=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); "$RDB" find "$trace" --debug "$work/expr" --expr audited --changes >"$work/all.out" 2>"$work/all.err"; t1=$(now)
    all=$(echo "$t1 - $t0" | bc -l)
    if ! head -1 "$work/first.out" | grep -q "expr.c:$line (0x[0-9a-f]* in main): 1 -> "; then
        echo "the statement found is not expr.c:$line:" >&2; cat "$work/first.out" "$work/first.err" >&2; exit 1
    fi
    if ! grep '^event ' "$work/place.out" | sed -n 3p | grep -q "expr.c:$pline (0x[0-9a-f]* in main): 1 -> "; then
        echo "the statement found for the place is not expr.c:$pline:" >&2; cat "$work/place.out" "$work/place.err" >&2; exit 1
    fi
    if [ "$(grep -c '^event ' "$work/all.out")" != 1 ] || [ "$(head -1 "$work/all.out")" != "$(head -1 "$work/first.out")" ]; then
        echo "--changes does not list that one change:" >&2; cat "$work/all.out" "$work/all.err" >&2; exit 1
    fi
    printf '%14s %10s %10s %14s %10s %12s %14s %12s %14s\n' "$((7 * iters))" "$(secs "$native")" "$(secs "$replay")" "$(secs "$first")" \
        "$(secs "$place")" "$(secs "$all")" "$(ratio "$first" "$replay")" "$(ratio "$place" "$replay")" "$(ratio "$all" "$replay")"
done
head -2 "$work/first.out"
grep -A1 '^event ' "$work/place.out" | tail -2
