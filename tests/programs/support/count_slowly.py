# Prints 0, 1, 2, ... with a short sleep between lines, for a long time: the recorder gets
# killed while it runs (record_replay::killed_recorder_leaves_a_trace_that_replays_to_its_end).
import time
for i in range(100000):
    print(i, flush=True)
    time.sleep(0.002)
