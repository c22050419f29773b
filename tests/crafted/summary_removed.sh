# The summary removed from a finished trace: the stream says it ended, so it replays to its
# end and says the trace is incomplete.
# expect-exit: 4
# expect-stderr: ends early
rm "$TRACE/summary.json"
