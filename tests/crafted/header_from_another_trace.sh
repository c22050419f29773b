# A header from one trace with the events of another: refused, naming the event file.
# expect-exit: 1
# expect-stderr: does not belong to this header
cp "$OTHER/rdb-trace.json" "$TRACE/rdb-trace.json"
