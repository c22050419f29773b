# A recording cut short inside its first chunk: nothing replays, and it says so (exit 4).
# expect-exit: 4
# expect-stderr: ends early after 0 events
rm "$TRACE/summary.json"
truncate -s 100 "$TRACE/events"
