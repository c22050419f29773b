# A program killed by a signal: rdb record exits with 128 + the signal, the replay completes.
# rdb-exit: 143
kill -TERM $$
