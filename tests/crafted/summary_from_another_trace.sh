# The summary of another trace.
# expect-exit: 1
# expect-stderr: summary.json: it does not belong to this event stream
cp "$OTHER/summary.json" "$TRACE/summary.json"
