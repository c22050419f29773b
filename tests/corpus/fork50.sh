# A shell script forking 50 children, replayed 10 times: every replay must print the same.
# Replays diverge at a fork (`expected: new process N (clone flags 0x1200011) / actual: end of
# syscall clone`) or hang in wait4.
# rdb-expect: fails "issue 17: a script forking many children replays nondeterministically"
# rdb-replays: 10
# rdb-timeout: 20
i=0
while [ $i -lt 50 ]; do
  ( echo "child $i" ) &
  i=$((i + 1))
done
wait
echo "all 50 children done"
