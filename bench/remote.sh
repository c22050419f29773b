#!/usr/bin/env bash
# Cost of a region hit over the GDB remote protocol (rdb attach --remote to gdbserver on a
# live run), against the same region under rdb replay --debug and gdb `dprintf` at the same
# line through the same gdbserver, all measured in this invocation. A Rust program with a
# trivial region in a hot loop runs N times and once; per hit = (time for N - time for 1) /
# (N - 1), so start-up costs cancel.
#   bench/remote.sh            # RDB_HITS=5000 by default
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
N=${RDB_HITS:-5000}
(cd "$root" && cargo build -q --release --workspace --bins)
export PATH="$root/target/release:$PATH"
command -v gdbserver >/dev/null || { echo "gdbserver is missing: bash scripts/setup.sh installs it" >&2; exit 1; }
tmp=$(mktemp -d)
[ -n "${RDB_KEEP:-}" ] && echo "keeping $tmp" >&2 || trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/hot/src"
cd "$tmp/hot"
cat > Cargo.toml <<TOML
[package]
name = "hot"
version = "0.1.0"
edition = "2021"
[dependencies]
rdb-macros = { path = "$root/rdb-macros" }
TOML
# The plain loop, then the same with a trivial region (a debug-only counter) before the
# black_box line: the main binary of `cargo rdb build` is the plain one, line numbers included.
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
line=$(grep -n "black_box(acc)" src/main.rs | cut -d: -f1)
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

now() { date +%s.%N; }
# Starts gdbserver on `$bin ARGS` and prints its port (its pid goes to $tmp/gs.pid).
serve() {
  rm -f "$tmp/gs.err"
  gdbserver --once 127.0.0.1:0 "$bin" "$@" >/dev/null 2>"$tmp/gs.err" &
  echo $! >"$tmp/gs.pid"
  until grep -q "Listening on port" "$tmp/gs.err" 2>/dev/null; do sleep 0.005; done
  grep -o 'port [0-9]*' "$tmp/gs.err" | cut -d' ' -f2
}
attach_run() { # $1: iterations; seconds for gdbserver + rdb attach
  local t0 t1 port
  t0=$(now)
  port=$(serve "$1")
  rdb attach --remote "127.0.0.1:$port" --debug "$bin" >/dev/null 2>"$tmp/attach.err" ||
    { echo "rdb attach failed:" >&2; cat "$tmp/attach.err" >&2; kill "$(cat "$tmp/gs.pid")"; exit 1; }
  while kill -0 "$(cat "$tmp/gs.pid")" 2>/dev/null; do sleep 0.005; done
  t1=$(now)
  echo "$t1 - $t0" | bc
}
dprintf_run() { # $1: iterations; seconds for gdbserver + gdb with a dprintf at the region's line
  local t0 t1 port
  t0=$(now)
  port=$(serve "$1")
  gdb -batch -nx -ex 'set pagination off' -ex "target remote 127.0.0.1:$port" \
    -ex "dprintf src/main.rs:$line,\"hit\\n\"" -ex continue "$bin" >"$tmp/gdb.out" 2>&1
  while kill -0 "$(cat "$tmp/gs.pid")" 2>/dev/null; do sleep 0.005; done
  t1=$(now)
  echo "$t1 - $t0" | bc
}
replay_run() { # $1: trace
  local t0 t1
  t0=$(now)
  rdb replay "$1" --debug "$bin" >/dev/null 2>&1
  t1=$(now)
  echo "$t1 - $t0" | bc
}
best() { # best of 3 runs of a function printing seconds
  local b="" t
  for _ in 1 2 3; do t=$("$@"); if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi; done
  echo "$b"
}

# The region really runs over the protocol (attach_run fails if rdb attach does), and dprintf
# really prints.
attach_run 3 >/dev/null
if grep -q "never reached" "$tmp/attach.err"; then echo "the region did not run over the protocol" >&2; exit 1; fi
dprintf_run 3 >/dev/null
[ "$(grep -c '^hit' "$tmp/gdb.out")" = 3 ] || { echo "gdb dprintf did not hit:" >&2; cat "$tmp/gdb.out" >&2; exit 1; }

rdb record -o "$tmp/trace" -- "$bin" "$N" >/dev/null 2>&1
rdb record -o "$tmp/trace1" -- "$bin" 1 >/dev/null 2>&1
remoteN=$(best attach_run "$N"); remote1=$(best attach_run 1)
gdbN=$(best dprintf_run "$N"); gdb1=$(best dprintf_run 1)
replayN=$(best replay_run "$tmp/trace"); replay1=$(best replay_run "$tmp/trace1")
per() { echo "scale=2; ($1 - $2) * 1000000 / ($N - 1)" | bc; }
remote=$(per "$remoteN" "$remote1"); gdb=$(per "$gdbN" "$gdb1"); replay=$(per "$replayN" "$replay1")

printf 'hot loop, %d iterations, one trivial region per iteration (best of 3 runs each)\n' "$N"
printf '  rdb attach --remote (gdbserver, live run)  %9.2f us per hit  (%.3f s for %d hits)\n' "$remote" "$remoteN" "$N"
printf '  rdb replay --debug                         %9.2f us per hit  (%.3f s)\n' "$replay" "$replayN"
printf '  gdb dprintf through the same gdbserver     %9.2f us per hit  (%.3f s)\n' "$gdb" "$gdbN"
printf '  remote vs replay: %.2fx the cost; remote vs dprintf: %.2fx cheaper\n' \
  "$(echo "$remote / $replay" | bc -l)" "$(echo "$gdb / $remote" | bc -l)"
