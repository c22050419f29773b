# A shell script forking 50 children, replayed 10 times: every replay must print the same as
# the recording (the children write concurrently: their output calls enter the kernel one at a
# time, so the trace's order of their writes is the kernel's).
# rdb-replays: 10
# rdb-timeout: 20
i=0
while [ $i -lt 50 ]; do
  ( echo "child $i" ) &
  i=$((i + 1))
done
wait
echo "all 50 children done"
