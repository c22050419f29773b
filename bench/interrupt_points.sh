#!/usr/bin/env bash
# Interruption points (asynchronous signals and thread switches in user code, see
# docs/ARCHITECTURE.md): how often the recorder finds a point ambiguous, and what replaying
# points costs, over several programs. Each program is recorded ROUNDS times with
# RDB_INTERRUPT_STATS set; each recording is replayed (unless marked record-only, whose replay
# runs to its points with a ptrace stop per arrival: millions) and its output compared with
# the recording's.
#
#   bash bench/interrupt_points.sh              # uses target/release/rdb (built if missing)
#   ROUNDS=10 RDB=target/debug/rdb bash bench/interrupt_points.sh
#
# Prints one line per program (points, fixed points, ambiguous searches, searches given up,
# replays identical, median record / replay / native seconds) and the totals: the ambiguity
# rate is ambiguous searches / (points + ambiguous searches), i.e. of all the searches that
# reached a verdict, the share that found the state repeating with other memory.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli >&2
RDB=$(realpath "$RDB")
work=$(mktemp -d /tmp/rdb-bench-int.XXXXXX)
trap 'rm -rf "$work"' EXIT

gcc -O1 -g -o "$work/sigalrm_cpu_loop" tests/programs/sigalrm_cpu_loop.c
gcc -O0 -g -o "$work/spin_flag_preempt" tests/programs/spin_flag_preempt.c -lpthread
# A spin that counts: its state never comes back, so it is taken for a computation and not
# switched out; the watchdog ends the recording (as before interruption points).
cat >"$work/spin_count.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static volatile int flag;
static volatile unsigned long spins;
static void *setter(void *a) { usleep(1000); for (volatile long i = 0; i < 50000000; i++) {} flag = 1; return a; }
int main(void) {
  pthread_t t;
  pthread_create(&t, 0, setter, 0);
  while (!flag) spins++;
  pthread_join(t, 0);
  printf("flag seen\n");
  return 0;
}
C
gcc -O0 -g -o "$work/spin_count" "$work/spin_count.c" -lpthread
# Two threads computing without syscalls: no switch point (they do not wait for each other).
cat >"$work/compute2.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static unsigned long r[2];
static void *work(void *a) { long i = (long)a; unsigned long x = i + 1; for (long k = 0; k < 100000000; k++) x = x * 6364136223846793005UL + 1; r[i] = x; return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, work, (void *)1); work(0); pthread_join(t, 0); printf("%lx %lx\n", r[0], r[1]); return 0; }
C
gcc -O1 -o "$work/compute2" "$work/compute2.c" -lpthread
cat >"$work/alarm.pl" <<'PL'
use Time::HiRes qw(ualarm);
for my $round (1 .. 3) { my ($stop, $n) = (0, 0); local $SIG{ALRM} = sub { $stop = 1 }; ualarm(20000); $n++ until $stop; print "round $round: $n\n"; }
PL
cat >"$work/alarm.py" <<'PY'
import signal
stop = False
def on_alarm(*_):
    global stop
    stop = True
signal.signal(signal.SIGALRM, on_alarm)
for r in range(3):
    stop, n = False, 0
    signal.setitimer(signal.ITIMER_REAL, 0.02)
    while not stop:
        n += 1
    print("round", r, n)
PY

# name|mode|record flags|command  (mode: replay = replay and compare; record-only)
programs=(
  "C SIGALRM loop (tests/programs)|replay||$work/sigalrm_cpu_loop"
  "C two threads spinning on a flag (tests/programs)|replay||$work/spin_flag_preempt"
  "C spin counting (not switched: the watchdog ends it)|record-only|--watchdog 1|$work/spin_count"
  "C two computing threads|replay||$work/compute2"
  "openssl speed -seconds 1 -bytes 16384 md5|replay||openssl speed -seconds 1 -bytes 16384 md5"
  "openssl speed -seconds 1 -bytes 16384 sha256|replay||openssl speed -seconds 1 -bytes 16384 sha256"
  "openssl speed -seconds 1 md5 (6 block sizes)|replay||openssl speed -seconds 1 md5"
  "perl ualarm loop|record-only||perl $work/alarm.pl"
  "python3 setitimer loop|replay||python3 $work/alarm.py"
)

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
tot_points=0 tot_fixed=0 tot_amb=0 tot_given=0
printf '| program | points | fixed | stub fits | ambiguous | given up | replays identical | native s | record | replay |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for entry in "${programs[@]}"; do
  IFS='|' read -r name mode flags cmd <<<"$entry"
  points=0 fixed=0 amb=0 given=0 stubs=0 same=0 replays=0
  : >"$work/rec.t"; : >"$work/rep.t"; : >"$work/nat.t"
  for ((r = 0; r < ROUNDS; r++)); do
    t0=$(now); (cd "$work" && $cmd >/dev/null 2>&1 </dev/null) || true; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$work/nat.t"
    rm -rf "$work/trace"
    t0=$(now)
    (cd "$work" && RDB_INTERRUPT_STATS=1 "$RDB" record $flags -o "$work/trace" -- $cmd >"$work/rec.out" 2>"$work/rec.err" </dev/null) || true
    t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$work/rec.t"
    line=$(grep 'interruption points:' "$work/rec.err" || true)
    read -r p f a g st < <(echo "$line" | sed -E 's/.*points: ([0-9]+) recorded \(([0-9]+) fixed points, [0-9]+ keyed with memory pages, ([0-9]+) where a stub fits\), ([0-9]+) ambiguous searches, ([0-9]+) given up.*/\1 \2 \4 \5 \3/')
    points=$((points + ${p:-0})) fixed=$((fixed + ${f:-0})) amb=$((amb + ${a:-0})) given=$((given + ${g:-0})) stubs=$((stubs + ${st:-0}))
    if [ "$mode" = replay ]; then
      t0=$(now)
      (cd "$work" && timeout 600 "$RDB" replay "$work/trace" >"$work/rep.out" 2>/dev/null </dev/null) || true
      t1=$(now)
      echo "$t1 - $t0" | bc -l >>"$work/rep.t"
      replays=$((replays + 1))
      if cmp -s "$work/rec.out" "$work/rep.out"; then same=$((same + 1)); fi
    fi
  done
  nat=$(median <"$work/nat.t")
  ratio() { printf '%.2f s (%.1f×)' "$1" "$(echo "$1 / $nat" | bc -l)"; }
  rep="—"; ident="record only"
  if [ "$mode" = replay ]; then rep=$(ratio "$(median <"$work/rep.t")"); ident="$same/$replays"; fi
  printf '| %s | %d | %d | %d | %d | %d | %s | %.2f | %s | %s |\n' "$name" "$points" "$fixed" "$stubs" "$amb" "$given" "$ident" \
    "$nat" "$(ratio "$(median <"$work/rec.t")")" "$rep"
  tot_points=$((tot_points + points)) tot_fixed=$((tot_fixed + fixed)) tot_amb=$((tot_amb + amb)) tot_given=$((tot_given + given))
done
searches=$((tot_points + tot_amb))
rate=$(echo "scale=2; 100 * $tot_amb / ($searches + ($searches == 0))" | bc -l)
echo
echo "total over ${#programs[@]} programs x $ROUNDS rounds: $tot_points points ($tot_fixed fixed points), $tot_amb ambiguous searches of $searches ($rate%), $tot_given given up"
