#!/usr/bin/python3
# os.sendfile from a file to standard output.
# rdb-expect: identical
import os, sys, tempfile
with tempfile.TemporaryFile() as f:
    f.write(b"x" * 1000 + b"\n")
    f.flush()
    sys.stdout.write("sendfile:\n")
    sys.stdout.flush()
    os.sendfile(1, f.fileno(), 0, 1001)
    sys.stdout.write("done\n")
