#!/usr/bin/env bash
# Share of region arguments available at the region's code locations in
# release builds of cargo's DEFAULT release profile (no debug information:
# descriptors come from the twin build proven to have the same code), over
# the instrumented sample apps and a real crate of the registry
# (regex-syntax, with regions in its HIR constructors and its parser
# driven by a small binary).
#
# Counts, over every (region, code location, argument), the locations whose
# whole value is available ("after recovery": no `optimized_out` or
# `unavailable` part), and the same without the locations recovered as
# `computed` (register + constant) or `entry_value` (the value on entry to
# the call: DW_OP_entry_value, or a parameter bound without `mut` whose
# location the optimizer dropped) or `indirect`/`stack` in a region of an
# `async` body (a local held across an `.await`, read in the future's state
# object through the poll function's pointer to it) ("before"; a local the
# DWARF loses where paths join, served in the register holding it on every
# path, is a plain `register` location and counts in both). Also:
# regions without any code location, the twin proof (functions proven
# identical), and whether the main binary is byte-identical to a plain
# `cargo build --release` of the source without regions.
#
# Usage: bench/arguments.sh [WORKDIR]   (default: a fresh temporary directory)
# RDB_TOOLS=dev uses the dev build of cargo-rdb and rdb (same logic, faster to build).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/rdb-args.XXXXXX)}"
mkdir -p "$work"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR
if [ "${RDB_TOOLS:-release}" = dev ]; then
  cargo build -q -p cargo-rdb -p rdb-cli --manifest-path "$repo/Cargo.toml"
  export PATH="$repo/target/debug:$PATH"
else
  cargo build -q --release -p cargo-rdb -p rdb-cli --manifest-path "$repo/Cargo.toml"
  export PATH="$repo/target/release:$PATH"
fi

default_profile() { # MANIFEST: drop [profile.release] (cargo's defaults apply)
  python3 - "$1" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r'\n\[profile\.release\]\n(?:[^\[\n][^\n]*\n?)*', '\n', s)
open(p, "w").write(s)
PY
}

count() { # BASE NAME ERRFILE
  python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
base, app, err = sys.argv[1], sys.argv[2], sys.argv[3]
functions = json.load(open(base + ".rdb-functions.json"))["functions"]
arguments = json.load(open(base + ".rdb-arguments.json"))["arguments"]
placed = sum(len(a["locations"]) for a in arguments)
def classes(l):
    yield l["class"]
    for p in l.get("pieces", []):
        yield from classes(p["location"])
    for k in ("pointer", "value"):
        if k in l:
            yield from classes(l[k])
# Regions in an `async` body: an `indirect` location there, or a `stack` one (the future in
# the executor's own frame), is read in the future's state (a release build's DWARF gives the
# variables of those bodies no such location of its own: checked on the apps below).
in_async = {f["region"] for f in functions if "{async_" in f["function"]["name"]}
def available(l, recovered, state=False):
    missing = {"optimized_out", "unavailable"} | (set() if recovered else {"computed", "entry_value"})
    if state and not recovered:
        missing |= {"indirect", "stack"}
    return not missing & set(classes(l))
after = sum(1 for a in arguments for p in a["locations"] if available(p["location"], True))
before = sum(1 for a in arguments for p in a["locations"] if available(p["location"], False, a["region"] in in_async))
unplaced = sum(1 for f in functions if not f["locations"])
proof = next((l.split("Proved", 1)[1].strip() for l in open(err) if "Proved" in l), "-")
m = re.search(r"(\d+) of (\d+) functions", proof)
proof = f"{m.group(1)}/{m.group(2)} functions" if m else ("identical" if "identical" in proof else proof)
pct = lambda n: f"{100 * n / placed:.0f}%" if placed else "-"
print(f"{app:<13} {len(functions):>7} {sum(len(f['locations']) for f in functions):>9} "
      f"{before:>4}/{placed:<4} {pct(before):>5}  {after:>4}/{placed:<4} {pct(after):>5}  {unplaced:>9}  {proof}", end="")
PY
}

printf '%-13s %7s %9s %16s %16s %9s  %s\n' app regions locations "before recovery" "after recovery" unplaced "twin proof / identical"
for app in minibc jobq race bank; do
  dir="$work/$app"
  rm -rf "$dir" && cp -r "$repo/sample-apps/$app" "$dir" && rm -rf "$dir/rdb" "$dir/target"
  default_profile "$dir/Cargo.toml"
  (cd "$dir" && cargo build -q --release) || exit 1
  plain=$(sha256sum "$dir/target/release/$app" | cut -d' ' -f1)
  cp -r "$repo/sample-apps/$app/rdb/." "$dir/"
  sed -i "s#\"../../rdb-macros\"#\"$repo/rdb-macros\"#" "$dir/Cargo.toml"
  default_profile "$dir/Cargo.toml"
  (cd "$dir" && cargo rdb build --release >/dev/null 2>"$work/$app.err") || { cat "$work/$app.err" >&2; exit 1; }
  count "$dir/target/rdb/release/$app" "$app" "$work/$app.err"
  ours=$(sha256sum "$dir/target/rdb/release/$app" | cut -d' ' -f1)
  [ "$plain" = "$ours" ] && echo " / identical" || echo " / BINARY DIFFERS"
done

# regex-syntax from the registry, regions in three HIR constructors.
fetch_dir="$work/fetch"
mkdir -p "$fetch_dir/src"
printf '[package]\nname = "fetch"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nregex-syntax = "=0.8.12"\n' > "$fetch_dir/Cargo.toml"
echo 'fn main() {}' > "$fetch_dir/src/main.rs"
(cd "$fetch_dir" && cargo fetch -q)
src=$(cd "$fetch_dir" && cargo metadata --format-version=1 -q | python3 -c 'import json,sys; m=json.load(sys.stdin); print([p for p in m["packages"] if p["name"]=="regex-syntax"][0]["manifest_path"].rsplit("/",1)[0])')
dir="$work/regex"
rm -rf "$dir" && mkdir -p "$dir/rxdump/src"
printf '[workspace]\nresolver = "2"\nmembers = ["rxdump", "regex-syntax"]\n' > "$dir/Cargo.toml"
printf '[package]\nname = "rxdump"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nregex-syntax = { path = "../regex-syntax" }\n' > "$dir/rxdump/Cargo.toml"
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
cp -r "$src" "$dir/regex-syntax" && chmod -R u+w "$dir/regex-syntax"
(cd "$dir" && cargo build -q --release) || exit 1
plain=$(sha256sum "$dir/target/release/rxdump" | cut -d' ' -f1)
rm -rf "$dir/target"
printf '\n[dependencies.rdb-macros]\npath = "%s"\n' "$repo/rdb-macros" >> "$dir/regex-syntax/Cargo.toml"
python3 - "$dir/regex-syntax/src/hir/mod.rs" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
for sig, body in [
    ("    pub fn concat(subs: Vec<Hir>) -> Hir {\n", 'std::eprintln!("concat of {} subexpressions", subs.len());'),
    ("    pub fn alternation(subs: Vec<Hir>) -> Hir {\n", 'std::eprintln!("alternation of {} branches", subs.len());'),
    ("    pub fn class(class: Class) -> Hir {\n", 'std::eprintln!("class {:?}", class);'),
    ("    pub fn repetition(mut rep: Repetition) -> Hir {\n", 'std::eprintln!("repetition {:?}", rep.min);'),
]:
    assert sig in s, sig
    s = s.replace(sig, sig + "        rdb_macros::rdb_begin!();\n        " + body + "\n        rdb_macros::rdb_end!();\n", 1)
open(p, "w").write(s)
PY
if ! (cd "$dir" && cargo rdb build --release >/dev/null 2>"$work/regex.err"); then
  # A twin whose layout differs is refused: say why.
  printf '%-13s refused: %s\n' regex-syntax "$(grep -A1 '^Caused by' "$work/regex.err" | tail -1 | sed 's/^ *//')"
  exit 0
fi
count "$dir/target/rdb/release/rxdump" "regex-syntax" "$work/regex.err"
ours=$(sha256sum "$dir/target/rdb/release/rxdump" | cut -d' ' -f1)
[ "$plain" = "$ours" ] && echo " / identical" || echo " / BINARY DIFFERS"
echo "warnings per app: $work/*.err" >&2
