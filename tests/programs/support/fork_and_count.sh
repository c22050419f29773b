# Forks and execs a program, then prints a count, 1500 times: a recording of it killed at any
# moment is cut short in the middle of process creations, execs and exits
# (record_replay::killed_recorder_of_a_forking_script_replays_to_its_end).
i=0
while [ $i -lt 1500 ]; do
  /bin/true
  echo "$i"
  i=$((i + 1))
done
