#!/usr/bin/env bash
# The rdb demo (the rdB paper's §6 story, in Rust): a bc-like interpreter fails on a program
# with an empty `for` condition. Record the failing run once with a plain build, then add debug
# regions to the source and replay the exact same run with them printing the VM's state.
# Works in a temporary copy of sample-apps/minibc; nothing in the repository is modified.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "building rdb"
(cd "$root" && cargo build --workspace --bins --quiet)
export PATH="$root/target/debug:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/rdb-demo.XXXXXX")
app="$work/minibc"
mkdir -p "$app"
cp -r "$root/sample-apps/minibc/Cargo.toml" "$root/sample-apps/minibc/src" "$root/sample-apps/minibc/examples" "$app/"
cd "$app"

say "1. plain build of minibc (no rdb involved): cargo build"
cargo build --quiet
cat examples/loops.bc

say "2. the bug happens once, recorded: rdb record -o $work/trace -- target/debug/minibc examples/loops.bc"
status=0
rdb record -o "$work/trace" -- target/debug/minibc examples/loops.bc || status=$?
echo "(program exit status: $status)"

say "3. add debug regions: the instrumented variant (sample-apps/minibc/rdb/) over the source"
cp -r "$root/sample-apps/minibc/rdb/src/." src/
sed "s|path = \"../../rdb-macros\"|path = \"$root/rdb-macros\"|" "$root/sample-apps/minibc/rdb/Cargo.toml" > Cargo.toml
grep -n -A9 'rdb_begin!' src/vm.rs | head -12

say "4. cargo rdb replay $work/trace: rebuild with regions, replay the same run with them printing the VM's state"
cargo rdb replay "$work/trace"

say "done: the last lines show BranchIfFalse popping an empty operand stack (stack=[]),"
echo "   the empty 'for (;;)' condition never pushed 'true'. Work directory: $work"
