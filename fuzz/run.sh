#!/usr/bin/env bash
# Build and run the trace-reader fuzz target without cargo-fuzz: the same instrumentation
# flags cargo-fuzz passes (coverage counters, compare tracing), on the stable toolchain with
# RUSTC_BOOTSTRAP=1. `cargo fuzz run trace_reader` works too where cargo-fuzz is installed.
#   bash fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# --target keeps the instrumentation flags away from build scripts and proc macros.
cargo build --release --bin trace_reader --target x86_64-unknown-linux-gnu
mkdir -p corpus/trace_reader
./target/x86_64-unknown-linux-gnu/release/trace_reader corpus/trace_reader seeds -max_total_time="$secs" -rss_limit_mb=2048 2>&1 | tail -5
