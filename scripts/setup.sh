#!/usr/bin/env bash
# Installs what rdb's build and tests need on a fresh Debian 12 machine (idempotent).
set -euo pipefail
need=()
command -v clang-14 >/dev/null || need+=(clang-14)
command -v llvm-config-14 >/dev/null || need+=(llvm-14-dev)
# libclang: bindgen loads it to build userfaultfd-sys (under the userfaultfd crate).
[ -e /usr/lib/llvm-14/lib/libclang.so.1 ] || need+=(libclang1-14)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v gdb >/dev/null || need+=(gdb)
# gdb on replays (tests/gdb/): backtraces through libc have its symbols and lines.
dpkg -s libc6-dbg >/dev/null 2>&1 || need+=(libc6-dbg)
# rdb attach --remote is tested against gdbserver and QEMU user mode; rr is run to learn
# whether it can record here (it needs performance counters: the test says why it skips).
command -v gdbserver >/dev/null || need+=(gdbserver)
command -v qemu-x86_64 >/dev/null || need+=(qemu-user)
command -v rr >/dev/null || need+=(rr)
command -v pigz >/dev/null || need+=(pigz)
command -v pbzip2 >/dev/null || need+=(pbzip2)
# The corpus of real programs (tests/corpus/) records these.
for pair in node:nodejs ps:procps openssl:openssl xz:xz-utils zstd:zstd lz4:lz4 bc:bc make:make gcc:gcc \
    strace:strace git:git bzip2:bzip2 zip:zip unzip:unzip file:file jq:jq perl:perl python3:python3; do
  command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
