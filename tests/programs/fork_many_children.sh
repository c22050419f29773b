# A shell forking 50 children that exit at once, replayed 10 times (issue 17). While recording,
# children exit as the shell forks the next one: a SIGCHLD pending as a fork begins makes the
# kernel give the fork up (-ERESTARTNOINTR) and redo it after the signal, and the replay's own
# children's SIGCHLDs (never shown to the program) do the same at other forks. Each replay must
# fail the recorded interrupted forks again, let its own interrupted ones restart, and print the
# same (about 15 interrupted forks per recording here).
# rdb-replays: 10
# rdb-stdout: "all 50 children done\n"
i=0
while [ $i -lt 50 ]; do
  ( : ) &
  i=$((i + 1))
done
wait
echo "all 50 children done"
