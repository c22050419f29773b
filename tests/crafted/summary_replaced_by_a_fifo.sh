# The summary replaced by a FIFO.
# expect-exit: 1
# expect-stderr: is a FIFO, not a regular file
rm "$TRACE/summary.json"
mkfifo "$TRACE/summary.json"
