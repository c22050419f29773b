#!/usr/bin/env bash
# Prepares the real-program test and benchmark of rdb-clang: Lua 5.4 (about
# 31k lines of C), taken unmodified from the `lupa` source package on PyPI,
# with one debug region added in the interpreter's hot loop (OP_CALL in
# luaV_execute, lvm.c).
#
#   bash bench/lua-setup.sh OUT
#     OUT/src/       the Lua sources, lvm.c instrumented
#     OUT/plain-lvm.c  the original lvm.c (= the instrumented one, stripped)
# The package is downloaded once (pip) into target/third-party/.
set -euo pipefail
out="${1:?usage: lua-setup.sh OUT}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/target/third-party"
tarball="$cache/lupa-2.6.tar.gz"
sha=9a770a6e89576be3447668d7ced312cd6fd41d3c13c2462c9dc2c2ab570e45d9
if [ ! -f "$tarball" ]; then
  mkdir -p "$cache"
  echo "lua-setup: downloading lupa 2.6 (Lua sources) from PyPI" >&2
  pip download --quiet --no-deps --no-binary lupa lupa==2.6 -d "$cache" >&2
fi
echo "$sha  $tarball" | sha256sum --check --quiet || { rm -f "$tarball"; echo "lua-setup: $tarball is not lupa 2.6 (bad download?); removed it, run again" >&2; exit 1; }
lua="$cache/lupa-2.6/third-party/lua54"
[ -f "$lua/lvm.c" ] || tar -xzf "$tarball" -C "$cache" lupa-2.6/third-party/lua54
mkdir -p "$out/src"
cp "$lua"/*.c "$lua"/*.h "$out/src/"
rm -f "$out/src/ltests.c" "$out/src/onelua.c"   # Lua's internal test build
cp "$lua/lvm.c" "$out/plain-lvm.c"
python3 - "$out/src/lvm.c" <<'PY'
import sys
path = sys.argv[1]
s = open(path).read()
s = s.replace('#include "lvm.h"\n', '#include "lvm.h"\n#include "rdb.h"\nstatic long __rdb_calls;\n', 1)
anchor = "        int nresults = GETARG_C(i) - 1;\n"
at = s.index(anchor, s.index("vmcase(OP_CALL)")) + len(anchor)
region = """        rdb_begin
        __rdb_calls++;
        if (__rdb_calls % 100000 == 0)
          printf("rdb: %ld Lua calls, this one with %d arguments\\n", __rdb_calls, b - 1);
        rdb_end
"""
open(path, "w").write(s[:at] + region + s[at:])
PY
