#!/usr/bin/python3
# os.splice from a pipe to standard output.
# rdb-expect: identical
import os, sys
r, w = os.pipe()
os.write(w, b"spliced bytes\n")
sys.stdout.write("splice:\n")
sys.stdout.flush()
os.splice(r, 1, 14)
sys.stdout.write("done\n")
