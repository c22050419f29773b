#!/usr/bin/env bash
# What describing the recorded executable costs `rdb record` (the header's `program_build`:
# compilers, build directories, debug information, a digest per section, the Cargo project;
# see rdb_locate::build): for a few executables, the best time of `describe` alone (the
# rdb-locate example doing exactly what `rdb record` does) against the best time of a whole
# `rdb record` of a short run of the same program, and the header's size.
#
#   bash bench/build_facts.sh       # release builds; REPEAT=5
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p rdb-cli -p rdb-host --bins
cargo build -q --release -p rdb-locate --example describe
RDB=target/release/rdb
DESCRIBE=target/release/examples/describe
REPEAT=${REPEAT:-5}
work=$(mktemp -d /tmp/rdb-bench-facts.XXXXXX)
trap 'rm -rf "$work"' EXIT
export RDB_NO_PROGRESS=1

# A Rust program of this repository, dev (full DWARF) and release (none) builds.
cp -r sample-apps/minibc "$work/minibc"
rm -rf "$work/minibc/rdb"
(cd "$work/minibc" && cargo build -q && cargo build -q --release)
loops=$work/minibc/examples/loops.bc

now() { date +%s.%N; }
best_record() {
  local best="" t0 t1 d i
  for ((i = 0; i < REPEAT; i++)); do
    rm -rf "$work/trace"
    t0=$(now); "$RDB" record --keep-files off -o "$work/trace" -- "$@" >/dev/null 2>&1 </dev/null || true; t1=$(now)
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
  done
  echo "$best"
}

printf '%-28s %10s %12s %12s %8s %14s\n' program size describe record share "header (facts)"
run() {
  local name=$1; shift
  local exe=$1
  local size described record share header
  size=$(( $(stat -c %s "$exe") / 1024 ))
  described=$("$DESCRIBE" "$exe" --time "$REPEAT" 2>&1 >/dev/null | sed -n 's/.*: \([0-9.]*\) ms.*/\1/p')
  record=$(best_record "$@")
  header=$(stat -c %s "$work/trace/rdb-trace.json")
  facts=$(python3 -c 'import json,sys; print(len(json.dumps(json.load(open(sys.argv[1]))["program_build"])))' "$work/trace/rdb-trace.json")
  share=$(echo "scale=1; 100 * $described / ($record * 1000)" | bc -l)
  printf '%-28s %8s KiB %9s ms %9.1f ms %7s%% %6s (%5s) B\n' "$name" "$size" "$described" "$(echo "$record * 1000" | bc -l)" "$share" "$header" "$facts"
}
run "python3 -c pass" /usr/bin/python3.11 -c pass
run "node -e 0" /usr/bin/node -e 0
run "clang-14 --version" /usr/lib/llvm-14/bin/clang --version
run "git --version" "$(command -v git)" --version
run "minibc (Rust, dev)" "$work/minibc/target/debug/minibc" "$loops"
run "minibc (Rust, release)" "$work/minibc/target/release/minibc" "$loops"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
