# A bit flipped in the first chunk's event-count field: corruption, not a divergence.
# expect-exit: 1
# expect-stderr: chunk header checksum mismatch
printf '\x07' | dd of="$TRACE/events" bs=1 seek=12 conv=notrunc status=none
