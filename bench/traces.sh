#!/usr/bin/env bash
# Self-contained traces, measured in one run on this machine: for a few real programs, record
# time and trace size with file keeping off, with hard links and with copies, against the
# native run; then packing: pack time, pack size, and replay from the pack against replay
# from the trace directory.
#
#   bash bench/traces.sh            # uses target/release/rdb (built if missing); REPEAT=3
#
# Sizes: `events` is the event file; `kept` the files in files/ (apparent size: with hard
# links they use no new disk space while the originals exist; with copies they do, once per
# trace root when traces share its store). Times are the best of $REPEAT runs.
set -euo pipefail
cd "$(dirname "$0")/.."
RDB=${RDB:-target/release/rdb}
[ -x "$RDB" ] || cargo build --release -p rdb-cli >&2
work=$(mktemp -d /tmp/rdb-bench-traces.XXXXXX)
trap 'rm -rf "$work"' EXIT
export RDB_NO_PROGRESS=1

now() { date +%s.%N; }
REPEAT=${REPEAT:-3}
# secs SETUP CMD... : best wall-clock seconds of CMD over $REPEAT runs, SETUP (a shell
# snippet) run before each, untimed
secs() {
  local setup=$1; shift
  local best="" t0 t1 d i
  for ((i = 0; i < REPEAT; i++)); do
    bash -c "$setup"
    t0=$(now); "$@" >/dev/null 2>&1 </dev/null || true; t1=$(now)
    d=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$d < $best" | bc -l)" = 1 ]; then best=$d; fi
  done
  echo "$best"
}
ratio() { echo "scale=2; $1 / $2" | bc -l; }
fmt() { printf '%.3f' "$1"; }
kib() { echo $(( ($1 + 1023) / 1024 )); }
size_of() { stat -c %s "$1"; }
kept_bytes() { local t=0 f; for f in "$1"/files/*; do [ -f "$f" ] && t=$((t + $(size_of "$f"))); done; echo $t; }
kept_count() { ls "$1/files" 2>/dev/null | wc -l; }

cat > "$work/hello.c" <<'C'
#include <stdio.h>
int main(void) { puts("hello"); return 0; }
C
clang-14 -O2 "$work/hello.c" -o "$work/hello"
printf 'int f(int x) { return x * 2; }\n' > "$work/f.c"

# program NAME: set `cmd` to the command line of NAME
program() {
  case $1 in
    hello) cmd=("$work/hello") ;;
    python) cmd=(/usr/bin/python3 -c 'import json, sqlite3, decimal, hashlib, ssl; print(1)') ;;
    clang) cmd=(clang-14 -O2 -c "$work/f.c" -o "$work/f.o") ;;
  esac
}

echo "== $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for name in hello python clang; do
  program "$name"
  native=$(secs true "${cmd[@]}")
  echo "== $name: ${cmd[*]}"
  echo "   native                  $(fmt "$native") s"
  for keep in off link copy; do
    t="$work/t-$name-$keep"
    rt=$(secs "rm -rf $t" "$RDB" record --keep-files "$keep" -o "$t" -- "${cmd[@]}")
    ev=$(size_of "$t/events")
    echo "   record, keep $keep: $(printf '%-5s' '') $(fmt "$rt") s ($(ratio "$rt" "$native")x native); events $(kib "$ev") KiB, kept $(kept_count "$t") files, $(kib "$(kept_bytes "$t")") KiB"
  done
  # Copies into a trace root whose store already holds the files (the second trace of a program).
  root="$work/root-$name"
  RDB_TRACE_DIR=$root "$RDB" record --keep-files copy -- "${cmd[@]}" >/dev/null 2>&1 </dev/null
  rt=$(secs "rm -rf $root/${name}-x" env RDB_TRACE_DIR="$root" "$RDB" record --keep-files copy -- "${cmd[@]}")
  echo "   record, copy, store already filled: $(fmt "$rt") s ($(ratio "$rt" "$native")x native)"
  for keep in off link copy; do
    t="$work/t-$name-$keep"
    rp=$(secs true "$RDB" replay -q "$t")
    echo "   replay, keep $keep:       $(fmt "$rp") s ($(ratio "$rp" "$native")x native)"
  done
  t="$work/t-$name-link"
  pk=$(secs "rm -f $work/$name.tar.zst" "$RDB" pack "$t" -o "$work/$name.tar.zst")
  psize=$(size_of "$work/$name.tar.zst")
  dir_rp=$(secs true "$RDB" replay -q "$t")
  pack_rp=$(secs true "$RDB" replay -q "$work/$name.tar.zst")
  echo "   pack: $(fmt "$pk") s, $(kib "$psize") KiB (trace: events $(kib "$(size_of "$t/events")") KiB + kept $(kib "$(kept_bytes "$t")") KiB)"
  echo "   replay from the pack: $(fmt "$pack_rp") s vs from the directory $(fmt "$dir_rp") s ($(ratio "$pack_rp" "$dir_rp")x)"
done
