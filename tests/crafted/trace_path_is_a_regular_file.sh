# A trace path that is a regular file is said to be one (not "no such directory").
# expect-exit: 1
# expect-stderr: it is a file, not a trace directory or a packed trace
rm -rf "$TRACE"
echo hello > "$TRACE"
