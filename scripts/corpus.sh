#!/usr/bin/env bash
# Runs the corpus of real programs (tests/corpus/, one test case each) ROUNDS times and prints
# one line per case: its expectation and how many rounds passed or failed. A case may be marked
# `expect: identical` only once it passes 10 rounds in a row.
#
#   bash scripts/corpus.sh [ROUNDS] [FILTER]     (defaults: 10, corpus::)
#
# Result words (from RDB_CASE_LOG, see tests/src/cases.rs): pass; fail = a known failure
# (`expect: fails`) showed; FAIL = the case failed against its expectation.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
filter=${2:-corpus::}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo build -q -p rdb-tests --tests
for round in $(seq 1 "$rounds"); do
  start=$(date +%s)
  RDB_CASE_LOG=$log cargo test -q -p rdb-tests --test e2e -- "$filter" --test-threads=2 >/dev/null 2>&1 || true
  echo "round $round of $rounds: $(( $(date +%s) - start )) s" >&2
done
python3 - "$log" "$rounds" <<'PY'
import sys, collections
log, rounds = sys.argv[1], int(sys.argv[2])
cases = collections.OrderedDict()
for line in open(log):
    name, expect, result, secs, detail = line.rstrip("\n").split("\t", 4)
    c = cases.setdefault(name, {"expect": expect, "pass": 0, "fail": 0, "FAIL": 0, "secs": [], "detail": ""})
    c[result] += 1
    c["secs"].append(float(secs))
    if result != "pass" and detail and not c["detail"]:
        c["detail"] = detail
print("| case | expect | pass | known failure | FAIL | median s | first failure |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name in sorted(cases):
    c = cases[name]
    secs = sorted(c["secs"])[len(c["secs"]) // 2]
    print(f"| {name} | {c['expect']} | {c['pass']} | {c['fail']} | {c['FAIL']} | {secs:.1f} | {c['detail'][:140]} |")
bad = [n for n, c in cases.items() if c["FAIL"]]
print(f"\n{len(cases)} cases, {rounds} rounds; failing against their expectation: {', '.join(bad) or 'none'}")
PY
