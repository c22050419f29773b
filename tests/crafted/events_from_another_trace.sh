# The event stream of another trace.
# expect-exit: 1
# expect-stderr: corrupt trace
cp "$OTHER/events" "$TRACE/events"
