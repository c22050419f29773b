# A kept file replaced by a FIFO: not used (and never blocked on); replay falls back to the
# original, which is unchanged, so the replay still completes.
# expect-exit: 0
f=$(ls -S "$TRACE/files" | head -1)
rm "$TRACE/files/$f"
mkfifo "$TRACE/files/$f"
