#!/usr/bin/env bash
# The whole test suite: installs what it needs, checks formatting and lints, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Fast checks first: a formatting or lint failure needs no test run to be found.
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo build --workspace --all-targets
cargo test --workspace -- --test-threads=2
