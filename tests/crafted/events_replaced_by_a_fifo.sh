# The event file replaced by a FIFO nobody writes to: refused at once, never blocks.
# expect-exit: 1
# expect-stderr: is a FIFO, not a regular file
rm "$TRACE/events"
mkfifo "$TRACE/events"
