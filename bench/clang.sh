#!/usr/bin/env bash
# rdb-clang vs clang-14 compile time on a real program: Lua 5.4 (about 30k
# lines of C, from PyPI's lupa) with one debug region in luaV_execute.
# Builds both ways from scratch, object by object, then links; prints wall
# times and the ratio, for the whole build and for the instrumented lvm.c
# alone (the only file where rdb-clang does extra work). Goal: <= 3x.
#
#   bash bench/clang.sh [OPT...]       default OPT: -O2
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
opt=("${@:--O2}")
cargo build --quiet --release -p rdb-codegen-llvm --bin rdb-clang --manifest-path "$root/Cargo.toml"
rdb_clang="$root/target/release/rdb-clang"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bash "$root/bench/lua-setup.sh" "$work" >/dev/null
cd "$work/src"
sources=(*.c)
now() { date +%s.%N; }
build() { # compiler -> prints "total lvm" seconds
  local cc="$1" t0 t1 l0 l1
  rm -f ./*.o ./*.o.rdb* lua lua.rdb*
  t0=$(now)
  for s in "${sources[@]}"; do
    if [ "$s" = lvm.c ]; then l0=$(now); fi
    "$cc" "${opt[@]}" -std=gnu99 -DLUA_USE_LINUX -c "$s" -o "${s%.c}.o"
    if [ "$s" = lvm.c ]; then l1=$(now); fi
  done
  "$cc" ./*.o -lm -ldl -o lua
  t1=$(now)
  awk -v a="$t0" -v b="$t1" -v c="$l0" -v d="$l1" 'BEGIN { print b - a, d - c }'
}
read -r rdb_total rdb_lvm < <(build "$rdb_clang")
cp "$work/plain-lvm.c" lvm.c.plain
mv lvm.c lvm.c.instrumented && cp lvm.c.plain lvm.c
read -r cc_total cc_lvm < <(build clang-14)
lines=$(cat ./*.c ./*.h | wc -l)
printf 'program: Lua 5.4 (%s lines of C, %s files), flags: %s\n' "$lines" "${#sources[@]}" "${opt[*]}"
printf 'whole build: clang-14 %.2fs  rdb-clang %.2fs  ratio %.2fx\n' "$cc_total" "$rdb_total" "$(awk -v a="$rdb_total" -v b="$cc_total" 'BEGIN { print a / b }')"
printf 'lvm.c only:  clang-14 %.2fs  rdb-clang %.2fs  ratio %.2fx\n' "$cc_lvm" "$rdb_lvm" "$(awk -v a="$rdb_lvm" -v b="$cc_lvm" 'BEGIN { print a / b }')"
