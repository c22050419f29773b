#!/usr/bin/env bash
# The long run of the structure-aware crafted-trace fuzzer (rdb_runtime::trace::fuzz): valid
# checksums and chain digests around mutated payloads, swapped files between traces, special
# files. Prints executions, crashes, hangs and peak RSS; exits 1 on a crash or hang.
#   bash fuzz/crafted.sh [SECONDS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p rdb-runtime --example fuzz_crafted
exec ./target/release/examples/fuzz_crafted "${1:-300}" "${2:-1}"
