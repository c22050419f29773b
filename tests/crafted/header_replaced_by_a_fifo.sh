# The header replaced by a FIFO.
# expect-exit: 1
# expect-stderr: is a FIFO, not a regular file
rm "$TRACE/rdb-trace.json"
mkfifo "$TRACE/rdb-trace.json"
