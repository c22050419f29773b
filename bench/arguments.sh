#!/usr/bin/env bash
# Share of region arguments available at the region's code locations in
# release builds: builds the instrumented sample apps with
# `cargo rdb build --release` (profile with `debug = "full"`, which the
# recorded release binary needs, see the README) and counts, over every
# (region, code location, argument), the locations that are not
# `optimized_out`. Also counts regions without any code location.
#
# Usage: bench/arguments.sh [WORKDIR]   (default: a fresh temporary directory)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/rdb-args.XXXXXX)}"
mkdir -p "$work"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR
cargo build -q --release -p cargo-rdb -p rdb-cli --manifest-path "$repo/Cargo.toml"
export PATH="$repo/target/release:$PATH"

printf '%-8s %8s %10s %10s %8s\n' app regions locations available share
for app in minibc jobq race bank; do
  dir="$work/$app"
  rm -rf "$dir" && cp -r "$repo/sample-apps/$app" "$dir" && cp -r "$repo/sample-apps/$app/rdb/." "$dir/"
  sed -i "s#../../rdb-macros#$repo/rdb-macros#" "$dir/Cargo.toml"
  grep -q '^\[profile.release\]' "$dir/Cargo.toml" || printf '\n[profile.release]\ndebug = "full"\n' >>"$dir/Cargo.toml"
  (cd "$dir" && cargo rdb build --release -q >/dev/null 2>"$work/$app.err") || { cat "$work/$app.err" >&2; exit 1; }
  python3 - "$dir/target/rdb/release/$app" "$app" <<'PY'
import json, sys
base, app = sys.argv[1], sys.argv[2]
functions = json.load(open(base + ".rdb-functions.json"))["functions"]
arguments = json.load(open(base + ".rdb-arguments.json"))["arguments"]
placed = sum(len(a["locations"]) for a in arguments)
available = sum(1 for a in arguments for p in a["locations"] if p["location"]["class"] != "optimized_out")
unplaced = sum(1 for f in functions if not f["locations"])
share = f"{100 * available / placed:.0f}%" if placed else "-"
print(f"{app:<8} {len(functions):>8} {sum(len(f['locations']) for f in functions):>10} {available:>4}/{placed:<5} {share:>8}   ({unplaced} regions without a location)")
PY
done
