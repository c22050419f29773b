# A kept copy that no longer matches its recorded hash is refused, never used.
# expect-exit: 1
# expect-stderr: changed since it was recorded
f=$(ls -S "$TRACE/files" | head -1)
printf 'x' >> "$TRACE/files/$f"
