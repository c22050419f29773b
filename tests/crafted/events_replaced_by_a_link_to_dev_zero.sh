# The event file replaced by a symlink to /dev/zero: refused at once (no endless read).
# expect-exit: 1
# expect-stderr: symbolic link
rm "$TRACE/events"
ln -s /dev/zero "$TRACE/events"
