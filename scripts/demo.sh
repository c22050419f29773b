#!/usr/bin/env bash
# The rdb demo, for someone who has never seen rdb (the rdB paper's story, in Rust): a small
# bc-like interpreter crashes on a program with an empty `for (;;)` condition. We record the
# crashing run once, from an ordinary build. Then we add debug code to the interpreter's
# source, inline, and replay that exact run with the debug code running at its places: it
# prints the interpreter's state at every step, up to the crash.
# Works in a temporary copy of sample-apps/minibc; nothing in the repository is modified.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
say() { printf '\033[1m== %s\033[0m\n' "$*"; }
indent() { sed 's/^/   /'; }

say "0. building rdb's tools (a few minutes the first time)"
(cd "$root" && cargo build -q -p rdb-cli -p rdb-host -p cargo-rdb --bins)
export PATH="$root/target/debug:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/rdb-demo.XXXXXX")
app="$work/minibc"
mkdir -p "$app"
cp -r "$root/sample-apps/minibc/Cargo.toml" "$root/sample-apps/minibc/src" "$root/sample-apps/minibc/examples" "$app/"
cd "$app"
trace="$work/trace"

say "1. an ordinary build; the crash happens once and is recorded:"
echo "   \$ cargo build && rdb record -o trace -- target/debug/minibc examples/loops.bc"
cargo build -q
status=0
rdb record -o "$trace" -- target/debug/minibc examples/loops.bc 2>&1 | indent || status=$?

say "2. afterwards, debug code is added to the source, e.g. in the VM's loop (src/vm.rs):"
cp -r "$root/sample-apps/minibc/rdb/src/." src/
sed "s|path = \"../../rdb-macros\"|path = \"$root/rdb-macros\"|" "$root/sample-apps/minibc/rdb/Cargo.toml" > Cargo.toml
# The region of the VM loop, its println! arguments elided (3 smaller regions elsewhere).
grep -A9 'rdb_begin!' src/vm.rs | sed -e 's/^            //' -e '5,8c\    ...' | indent

say "3. cargo rdb build: the program without the debug code is the recorded one, byte for byte:"
cargo rdb build -q > /dev/null
sha256sum target/debug/minibc target/rdb/debug/minibc | sed -e 's|target/debug/minibc|& (recorded)|' \
    -e 's|target/rdb/debug/minibc|& (cargo rdb build, from the source with debug code)|' | indent
cmp -s target/debug/minibc target/rdb/debug/minibc || { echo "   they differ!"; exit 1; }

say "4. cargo rdb replay: the recorded run again, the debug code printing the VM's state:"
cargo rdb replay -q "$trace" > "$work/replay.out" 2>&1 || true
lines=$(wc -l < "$work/replay.out")
head -5 "$work/replay.out" | indent
echo "   ... $((lines - 8)) more lines: every step of the VM, and the program's own output (55) ..."
tail -3 "$work/replay.out" | indent

say "the punchline: the last step, BranchIfFalse at pc 21, pops an EMPTY stack (stack=[]):"
echo "   the empty 'for (;;)' condition compiled to a branch with nothing pushed for it."
echo "   (work directory: $work; replay it again: cd $app && cargo rdb replay $trace)"
