#!/usr/bin/env bash
# Cost of a region hit under replay, end to end: a Rust program with a trivial region in a hot
# loop is recorded once (plain build), then replayed with and without its regions; the extra
# time per hit is compared with gdb `dprintf` at the same line on a live run of the same
# program, measured in the same invocation.
#   bench/replay_regions.sh            # RDB_HITS=20000 by default
#   RDB_BASELINE=/tmp/old bench/replay_regions.sh   # also an older build's rdb (its rdb,
#     rdb-debug-host, rdb-call-region copied there) replaying the same traces, one CPU
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
N=${RDB_HITS:-20000}
CPU=${RDB_BENCH_CPU:-0}
BASE=${RDB_BASELINE:-}
(cd "$root" && cargo build -q --release --workspace --bins)
export PATH="$root/target/release:$PATH"
tmp=$(mktemp -d)
[ -n "${RDB_KEEP:-}" ] && echo "keeping $tmp" >&2 || trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/hot/src"
cd "$tmp/hot"
cat > Cargo.toml <<'TOML'
[package]
name = "hot"
version = "0.1.0"
edition = "2021"
[dependencies]
TOML
cat > src/main.rs <<'RS'
fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let mut acc: u64 = 1;
    for i in 0..n {
        acc = acc.wrapping_mul(6364136223846793005).wrapping_add(i);
        std::hint::black_box(acc);
    }
    println!("{acc}");
}
RS
cargo build -q
line=$(grep -n "black_box(acc)" src/main.rs | cut -d: -f1)
export line

now() { date +%s.%N; }
elapsed() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); echo "$t1 - $t0" | bc; }
best() { # best of 3 runs of a command, seconds
  local b="" t
  for _ in 1 2 3; do t=$(elapsed "$@"); if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi; done
  echo "$b"
}

rdb record -o "$tmp/trace" -- target/debug/hot "$N" >/dev/null 2>&1
rdb record -o "$tmp/trace1" -- target/debug/hot 1 >/dev/null 2>&1

# The same source plus a trivial region (a debug-only counter) before the black_box line.
cat > Cargo.toml <<TOML
[package]
name = "hot"
version = "0.1.0"
edition = "2021"
[dependencies]
rdb-macros = { path = "$root/rdb-macros" }
TOML
python3 - "$line" <<'PY'
import sys
line = int(sys.argv[1])
src = open("src/main.rs").read().split("\n")
region = ["        rdb_macros::rdb_begin!();", "        HITS.fetch_add(i as usize & 1, std::sync::atomic::Ordering::Relaxed);", "        rdb_macros::rdb_end!();"]
src[line - 1:line - 1] = region
src.insert(0, "#[rdb_macros::debug_only]\nstatic HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);")
open("src/main.rs", "w").write("\n".join(src))
PY
cargo rdb build -q >/dev/null 2>&1
bin=target/rdb/debug/hot

native=$(best target/debug/hot "$N")
replay=$(best rdb replay "$tmp/trace")
# The debug host on another CPU, busy-waiting there (RDB_HOST_OWN_CPU=1; by default it shares
# the replay's CPU, as below).
regions=$(RDB_HOST_OWN_CPU=1 best rdb replay "$tmp/trace" --debug "$bin")
regions1=$(RDB_HOST_OWN_CPU=1 best rdb replay "$tmp/trace1" --debug "$bin")
replay1=$(best rdb replay "$tmp/trace1")
# The default: the host shares the replay's CPU (also what taskset -c gives).
regions_one=$(best taskset -c "$CPU" rdb replay "$tmp/trace" --debug "$bin")
regions1_one=$(best taskset -c "$CPU" rdb replay "$tmp/trace1" --debug "$bin")
# Per hit: extra time of the replay with regions over the plain replay, less the fixed cost of
# starting the debug host (measured with a 1-hit trace).
per_hit=$(echo "scale=2; (($regions - $replay) - ($regions1 - $replay1)) * 1000000 / ($N - 1)" | bc)
per_hit_one=$(echo "scale=2; (($regions_one - $replay) - ($regions1_one - $replay1)) * 1000000 / ($N - 1)" | bc)
if [ -n "$BASE" ]; then
  b_replay=$(best "$BASE/rdb" replay "$tmp/trace")
  b_replay1=$(best "$BASE/rdb" replay "$tmp/trace1")
  b_regions=$(best taskset -c "$CPU" "$BASE/rdb" replay "$tmp/trace" --debug "$bin")
  b_regions1=$(best taskset -c "$CPU" "$BASE/rdb" replay "$tmp/trace1" --debug "$bin")
  base_one=$(echo "scale=2; (($b_regions - $b_replay) - ($b_regions1 - $b_replay1)) * 1000000 / ($N - 1)" | bc)
fi

gdb_run() { # $1: iterations
  gdb -batch -nx -ex 'set pagination off' -ex 'set startup-with-shell off' \
    -ex "dprintf src/main.rs:$line,\"hit\\n\"" -ex run --args target/debug/hot "$1"
}
gdbN=$(best taskset -c "$CPU" bash -c "$(declare -f gdb_run); gdb_run $N")
gdb1=$(best taskset -c "$CPU" bash -c "$(declare -f gdb_run); gdb_run 1")
gdb_hits=$(gdb_run 3 2>&1 | grep -c '^hit' || true)
[ "$gdb_hits" = 3 ] || { echo "gdb dprintf did not hit (saw $gdb_hits hits for 3 iterations)" >&2; exit 1; }
gdb_per_hit=$(echo "scale=2; ($gdbN - $gdb1) * 1000000 / ($N - 1)" | bc)

printf 'hot loop, %d iterations, one trivial region per iteration (best of 3 runs each); load average %s\n' "$N" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '  native run                      %8.3f s\n' "$native"
printf '  rdb replay (no regions)         %8.3f s   (%.2fx native)\n' "$replay" "$(echo "$replay / $native" | bc -l)"
printf '  rdb replay --debug (regions)    %8.3f s   (%.2fx plain replay)\n' "$regions" "$(echo "$regions / $replay" | bc -l)"
printf '  per region hit                  %8.2f us   (RDB_HOST_OWN_CPU=1: host on another CPU, spinning)\n' "$per_hit"
printf '  per region hit, one CPU         %8.2f us   (default, taskset -c %s: host shares the CPU)\n' "$per_hit_one" "$CPU"
printf '  gdb dprintf per hit (pinned)    %8.2f us\n' "$gdb_per_hit"
printf '  rdb per hit vs gdb dprintf      %8.2fx cheaper (one CPU: %.2fx)\n' "$(echo "$gdb_per_hit / $per_hit" | bc -l)" "$(echo "$gdb_per_hit / $per_hit_one" | bc -l)"
if [ -n "$BASE" ]; then
  printf '  baseline per hit, one CPU       %8.2f us   (%s; vs gdb dprintf: %.2fx cheaper)\n' "$base_one" "$BASE" "$(echo "$gdb_per_hit / $base_one" | bc -l)"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
