#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --workspace --all-targets
cargo test --workspace -- --test-threads=2
