# A shell script forking 50 children, replayed 10 times: every replay must print the same.
# Replays are deterministic now (they exit 0 and print the same as each other), but children
# write concurrently and the trace orders their writes by the recorder's syscall-exit stops, not
# by the order the kernel performed them: the replayed lines differ in order from the recording's.
# rdb-expect: fails "issue 17: output of concurrent processes is replayed in the trace's order of their writes, not the order they were written"
# rdb-replays: 10
# rdb-timeout: 20
i=0
while [ $i -lt 50 ]; do
  ( echo "child $i" ) &
  i=$((i + 1))
done
wait
echo "all 50 children done"
