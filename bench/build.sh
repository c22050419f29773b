#!/usr/bin/env bash
# Wall time of `cargo rdb build` vs plain `cargo build` (dev profile), clean
# and after editing one region, on the minibc sample app and on a real crate
# of the registry (regex-syntax, ~58k lines) with regions inserted; checks
# that the main binaries are identical to the plain builds.
#
# Usage: bench/build.sh [WORKDIR]   (default: a fresh temporary directory)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/rdb-bench.XXXXXX)}"
mkdir -p "$work"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR
export CARGO_TERM_QUIET=true

echo "building cargo-rdb (release)..." >&2
cargo build -q --release -p cargo-rdb --manifest-path "$repo/Cargo.toml"
export PATH="$repo/target/release:$PATH"

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

# time_build DIR CMD... -> seconds
time_build() {
  local dir="$1"; shift
  local t0 t1
  t0=$(now)
  (cd "$dir" && "$@" >/dev/null 2>"$work/last.err") || { cat "$work/last.err" >&2; exit 1; }
  t1=$(now)
  elapsed "$t0" "$t1"
}

# --- minibc: plain and instrumented copies at the same path -------------------
# (identity needs the same path: build plain first, then overlay in place)
setup_minibc() {
  rm -rf "$work/minibc"
  mkdir -p "$work/minibc"
  (cd "$repo/sample-apps/minibc" && cp -r Cargo.toml src examples "$work/minibc/")
}
setup_minibc
cp -r "$work/minibc" "$work/minibc.plain"
cp -r "$repo/sample-apps/minibc/rdb/." "$work/minibc/"
sed -i "s#\"../../rdb-macros\"#\"$repo/rdb-macros\"#" "$work/minibc/Cargo.toml"

# --- regex-syntax from the registry, with a driver binary ----------------------
make_regex_ws() { # DIR INSTRUMENTED
  local dir="$1" instrumented="$2"
  rm -rf "$dir"
  mkdir -p "$dir/rxdump/src"
  cat > "$dir/Cargo.toml" <<'TOML'
[workspace]
resolver = "2"
members = ["rxdump", "regex-syntax"]
TOML
  cat > "$dir/rxdump/Cargo.toml" <<'TOML'
[package]
name = "rxdump"
version = "0.1.0"
edition = "2021"

[dependencies]
regex-syntax = { path = "../regex-syntax" }
TOML
  cat > "$dir/rxdump/src/main.rs" <<'RS'
fn main() {
    for pattern in std::env::args().skip(1) {
        match regex_syntax::Parser::new().parse(&pattern) {
            Ok(hir) => println!("{hir:?}"),
            Err(e) => eprintln!("{e}"),
        }
    }
}
RS
  cp -r "$src" "$dir/regex-syntax"
  chmod -R u+w "$dir/regex-syntax"
  if [ "$instrumented" = 1 ]; then
    printf '\n[dependencies.rdb-macros]\npath = "%s"\n' "$repo/rdb-macros" >> "$dir/regex-syntax/Cargo.toml"
    python3 - "$dir/regex-syntax/src/hir/mod.rs" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
for sig, body in [
    ("    pub fn concat(subs: Vec<Hir>) -> Hir {\n", 'std::eprintln!("concat of {} subexpressions", subs.len());'),
    ("    pub fn alternation(subs: Vec<Hir>) -> Hir {\n", 'std::eprintln!("alternation of {} branches", subs.len());'),
    ("    pub fn class(class: Class) -> Hir {\n", 'std::eprintln!("class {:?}", class);'),
]:
    assert sig in s, sig
    s = s.replace(sig, sig + "        rdb_macros::rdb_begin!();\n        " + body + "\n        rdb_macros::rdb_end!();\n", 1)
open(p, "w").write(s)
PY
  fi
}
fetch_dir="$work/fetch"
mkdir -p "$fetch_dir/src"
printf '[package]\nname = "fetch"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nregex-syntax = "=0.8.12"\n' > "$fetch_dir/Cargo.toml"
echo 'fn main() {}' > "$fetch_dir/src/main.rs"
(cd "$fetch_dir" && cargo fetch -q)
src=$(cd "$fetch_dir" && cargo metadata --format-version=1 -q | python3 -c 'import json,sys; m=json.load(sys.stdin); print([p for p in m["packages"] if p["name"]=="regex-syntax"][0]["manifest_path"].rsplit("/",1)[0])')
lines=$(find "$src/src" -name '*.rs' | xargs cat | wc -l)
echo "regex-syntax: $src ($lines lines of Rust)" >&2

# Identity needs the same path for plain and rdb builds: the plain build runs
# in the same directory first (bench() removes target/ between them).
make_regex_ws "$work/regex" 0
rm -rf "$work/regex/target"
rx_plain_clean=$(time_build "$work/regex" cargo build)
rx_plain_hash=$(sha256sum "$work/regex/target/debug/rxdump" | cut -d' ' -f1)
mv "$work/regex/target" "$work/regex.plain-target"
make_regex_ws "$work/regex" 1

echo "== cargo rdb build vs cargo build (dev profile, wall seconds; this machine is shared) =="
# minibc: plain variant in its own directory gives the clean plain time; the
# identity check below builds the plain variant at the instrumented path.
bench_same_path() { # NAME DIR BIN PLAIN_CLEAN PLAIN_HASH FILE FROM TO
  local name="$1" dir="$2" bin="$3" plain_clean="$4" plain_hash="$5" file="$6" from="$7" to="$8"
  rm -rf "$dir/target"
  local rdb_clean; rdb_clean=$(time_build "$dir" cargo rdb build)
  local rdb_hash; rdb_hash=$(sha256sum "$dir/target/rdb/debug/$bin" | cut -d' ' -f1)
  time_build "$dir" cargo build >/dev/null
  sed -i "s/$from/$to/" "$dir/$file"
  local plain_incr; plain_incr=$(time_build "$dir" cargo build)
  sed -i "s/$to/$from/" "$dir/$file"
  time_build "$dir" cargo rdb build >/dev/null
  sed -i "s/$from/$to/" "$dir/$file"
  local rdb_incr; rdb_incr=$(time_build "$dir" cargo rdb build)
  sed -i "s/$to/$from/" "$dir/$file"
  local rdb_hash2; rdb_hash2=$(sha256sum "$dir/target/rdb/debug/$bin" | cut -d' ' -f1)
  local identical=no
  [ "$plain_hash" = "$rdb_hash" ] && [ "$plain_hash" = "$rdb_hash2" ] && identical=yes
  printf '%-14s clean: plain %6ss  rdb %6ss  ratio %5s | region edit: plain %6ss  rdb %6ss  ratio %5s | identical: %s\n' \
    "$name" "$plain_clean" "$rdb_clean" "$(ratio "$rdb_clean" "$plain_clean")" \
    "$plain_incr" "$rdb_incr" "$(ratio "$rdb_incr" "$plain_incr")" "$identical"
  [ "$identical" = yes ]
}

# minibc plain at the instrumented path:
mv "$work/minibc" "$work/minibc.rdb"
mv "$work/minibc.plain" "$work/minibc"
rm -rf "$work/minibc/target"
mb_plain_clean=$(time_build "$work/minibc" cargo build)
mb_plain_hash=$(sha256sum "$work/minibc/target/debug/minibc" | cut -d' ' -f1)
rm -rf "$work/minibc"
mv "$work/minibc.rdb" "$work/minibc"

status=0
bench_same_path minibc "$work/minibc" minibc "$mb_plain_clean" "$mb_plain_hash" \
  src/vm.rs 'stack={}' 'stack: {}' || status=1
bench_same_path regex-syntax "$work/regex" rxdump "$rx_plain_clean" "$rx_plain_hash" \
  regex-syntax/src/hir/mod.rs 'concat of {} subexpressions' 'concat: {} subexpressions' || status=1
exit $status
