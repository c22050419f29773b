#!/usr/bin/env bash
# Replay crafted traces: traces of real programs with one event changed in a way the codec
# accepts (valid framing and chain), replayed by `rdb replay` under a timeout. Every replay
# must end with a documented exit code (0, 1 error, 3 divergence, 4 ends early): a panic
# (101) or a hang (timeout, 124) is a finding. Prints the counts.
#   bash fuzz/replay-crafted.sh [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
seed=${2:-1}
cargo build -q --release -p rdb-runtime --example fuzz_crafted
cargo build -q --release -p rdb-cli
work=$(mktemp -d /tmp/rdb-replay-crafted.XXXXXX)
trap 'rm -rf "$work"' EXIT
findings=${FINDINGS:-/tmp/rdb-replay-findings}
RDB_FUZZ_WRITE_REPLAYABLE="$work" ./target/release/examples/fuzz_crafted "$n" "$seed"
declare -A codes
bad=0
for t in "$work"/crafted-*; do
  set +e
  timeout 20 ./target/release/rdb replay -q "$t" >/dev/null 2>"$work/stderr"
  code=$?
  set -e
  codes[$code]=$(( ${codes[$code]:-0} + 1 ))
  if [ "$code" != 0 ] && [ "$code" != 1 ] && [ "$code" != 3 ] && [ "$code" != 4 ]; then
    bad=$((bad + 1))
    mkdir -p "$findings"
    cp -a "$t" "$findings/"
    echo "exit $code: $t (kept in $findings)"; head -5 "$work/stderr"
  fi
done
echo "replays: $n; exit codes: $(for c in "${!codes[@]}"; do printf '%s:%s ' "$c" "${codes[$c]}"; done)"
echo "panics or hangs: $bad"
[ "$bad" = 0 ]
