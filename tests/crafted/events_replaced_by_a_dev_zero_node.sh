# The event file replaced by a /dev/zero device node (root can make one; others get a FIFO).
# expect-exit: 1
# expect-stderr: not a regular file
rm "$TRACE/events"
mknod "$TRACE/events" c 1 5 2>/dev/null || mkfifo "$TRACE/events"
