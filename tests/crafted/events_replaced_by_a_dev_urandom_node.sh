# The event file replaced by a /dev/urandom device node.
# expect-exit: 1
# expect-stderr: not a regular file
rm "$TRACE/events"
mknod "$TRACE/events" c 1 9 2>/dev/null || mkfifo "$TRACE/events"
