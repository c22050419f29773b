#!/usr/bin/env bash
# gdb on a replay: latencies of continue, stepi and reverse-continue in a long recording, with
# and without checkpoints; what checkpoints cost (time, memory) against their interval; gdb's
# own `record full` side by side on a workload it can handle. One run, ratios printed.
#
#   bash bench/gdb.sh                     # uses target/release/rdb (built if missing)
#   ROUNDS=600000 STRIDE=3000 WORK=300 INTERVALS="0 20 50 200" bash bench/gdb.sh
#
# bench/gdb/long.c: ROUNDS rounds, each WORK multiply-xors then a syscall (a replay stop);
# every STRIDE rounds it calls hit(). "between hits" is the plain replay's time divided by the
# number of hits: the forward replay time between two neighbouring breakpoint hits.
# Goal: reverse-continue to the previous hit <= 2 x between hits + 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-600000}
STRIDE=${STRIDE:-3000}
WORK=${WORK:-300}
INTERVALS=${INTERVALS:-"0 20 50 200"}
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli >&2
work=$(mktemp -d /tmp/rdb-bench-gdb.XXXXXX)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
ms() { echo "scale=1; $1 * 1000 / 1" | bc -l; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }

clang-14 -O1 -g bench/gdb/long.c -o "$work/long"
clang-14 -O0 -g bench/gdb/small.c -o "$work/small"
"$RDB" record -o "$work/long.trace" -- "$work/long" "$ROUNDS" "$STRIDE" "$WORK" >"$work/rec.out" 2>/dev/null
hits=$(( (ROUNDS + STRIDE - 1) / STRIDE ))
t0=$(now); "$RDB" replay -q "$work/long.trace" >/dev/null 2>&1; t1=$(now)
replay=$(echo "$t1 - $t0" | bc -l)
t0=$(now); "$work/long" "$ROUNDS" "$STRIDE" "$WORK" >/dev/null; t1=$(now)
native=$(echo "$t1 - $t0" | bc -l)
between=$(echo "$replay / $hits" | bc -l)
echo "workload: $ROUNDS rounds, $hits hits of hit(); native $(ms "$native") ms, replay $(ms "$replay") ms ($(ratio "$replay" "$native")x native)"
echo "forward replay time between two hits: $(ms "$between") ms"

# gdb script: go to the hit of round $1, then time continue, stepi, reverse-continue there.
cat > "$work/measure.py" <<'PY'
import gdb, time

def t(command, times=1):
    start = time.time()
    for _ in range(times):
        gdb.execute(command, to_string=True)
    return (time.time() - start) / times

def at(round_):
    gdb.execute("delete")
    gdb.execute("break hit if round == %d" % round_, to_string=True)
    gdb.execute("continue", to_string=True)
    gdb.execute("delete")
    gdb.execute("break hit", to_string=True)

def measure(name, round_):
    at(round_)
    cont = t("continue")
    stepi = t("stepi", 100)
    gdb.execute("continue", to_string=True)
    rc = t("reverse-continue")
    back = int(gdb.parse_and_eval("round"))
    print("RESULT %s continue %.4f stepi %.6f reverse-continue %.4f landed %d" % (name, cont, stepi, rc, back))

import os
rounds, stride = int(os.environ["ROUNDS"]), int(os.environ["STRIDE"])
start = time.time()
measure("middle", (rounds // stride // 2) * stride)
measure("end", (rounds // stride - 3) * stride)
print("RESULT session %.3f" % (time.time() - start))
out = gdb.execute("monitor checkpoints", to_string=True).strip().splitlines()[-1]
print("RESULT checkpoints " + out)
start = time.time()
gdb.execute("delete")
gdb.execute("continue", to_string=True)
print("RESULT to-end %.3f" % (time.time() - start))
PY

echo
printf '%-10s %12s %12s %14s %14s %10s %14s %s\n' interval "continue" "stepi" "rev-cont mid" "rev-cont end" "to end" "goal (ms)" "checkpoints"
for interval in $INTERVALS; do
  ROUNDS=$ROUNDS STRIDE=$STRIDE timeout 1200 "$RDB" gdb --checkpoint-interval "$interval" "$work/long.trace" -- \
    -batch -nx -x "$work/measure.py" >"$work/gdb-$interval.out" 2>&1 || true
  mid=$(grep "RESULT middle" "$work/gdb-$interval.out" || echo "RESULT middle failed")
  end=$(grep "RESULT end" "$work/gdb-$interval.out" || echo "RESULT end failed")
  [[ $mid == *failed* || $end == *failed* ]] && { echo "interval $interval: gdb session failed"; tail -5 "$work/gdb-$interval.out"; continue; }
  cont=$(echo "$mid" | awk '{print $4}'); stepi=$(echo "$mid" | awk '{print $6}')
  rcm=$(echo "$mid" | awk '{print $8}'); rce=$(echo "$end" | awk '{print $8}')
  toend=$(grep "RESULT to-end" "$work/gdb-$interval.out" | awk '{print $3}')
  cps=$(grep "RESULT checkpoints" "$work/gdb-$interval.out" | cut -d' ' -f3-)
  goal=$(echo "2 * $between + 0.05" | bc -l)
  label=$([ "$interval" = 0 ] && echo "none" || echo "${interval} ms")
  printf '%-10s %9s ms %9s ms %11s ms %11s ms %7s ms %11s ms  %s\n' "$label" "$(ms "$cont")" "$(echo "scale=3; $stepi * 1000 / 1" | bc -l)" \
    "$(ms "$rcm")" "$(ms "$rce")" "$(ms "$toend")" "$(ms "$goal")" "$cps"
  echo "$mid" | grep -q "landed $(( (ROUNDS / STRIDE / 2) * STRIDE + STRIDE ))" || echo "  reverse-continue (middle) landed elsewhere: $mid"
done
echo "(continue: to the next hit; to end: continue from the last measurement to the exit; checkpoint memory: pages the frozen copies hold of their own at the end)"

# gdb's record full on a small workload it can record, beside rdb on a recording of it.
cat > "$work/small.gdb" <<'GDB'
python import time
break hit if i == 100
run
record full
delete
break hit
continue
continue
python t = time.time(); gdb.execute("reverse-continue", to_string=True); print("RESULT record-full %.4f" % (time.time() - t))
print i
GDB
timeout 600 gdb -batch -nx -x "$work/small.gdb" "$work/small" >"$work/small-gdb.out" 2>&1 || true
"$RDB" record -o "$work/small.trace" -- "$work/small" >/dev/null 2>&1
cat > "$work/small-rdb.gdb" <<'GDB'
python import time
break hit if i == 100
continue
delete
break hit
continue
continue
python t = time.time(); gdb.execute("reverse-continue", to_string=True); print("RESULT rdb %.4f" % (time.time() - t))
print i
GDB
timeout 600 "$RDB" gdb "$work/small.trace" -- -batch -nx -x "$work/small-rdb.gdb" >"$work/small-rdb.out" 2>&1 || true
g=$(grep "RESULT record-full" "$work/small-gdb.out" | awk '{print $3}')
r=$(grep "RESULT rdb" "$work/small-rdb.out" | awk '{print $3}')
echo
if [ -n "$g" ] && [ -n "$r" ]; then
  echo "small workload, reverse-continue to the previous hit: gdb record full $(ms "$g") ms, rdb $(ms "$r") ms ($(ratio "$r" "$g")x)"
else
  echo "small workload: a measurement failed"; tail -3 "$work/small-gdb.out" "$work/small-rdb.out"
fi
