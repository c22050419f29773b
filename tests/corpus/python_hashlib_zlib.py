#!/usr/bin/python3
# hashlib and zlib on a few megabytes (pure computation between syscalls).
import hashlib, zlib
data = bytes(range(256)) * 20000
print(hashlib.sha256(data).hexdigest(), len(zlib.compress(data, 9)))
