#!/usr/bin/python3
# Threads handing work through a queue.Queue (futex waits between threads).
import queue, threading
q, out = queue.Queue(), queue.Queue()
def worker():
    while (item := q.get()) is not None:
        out.put(item * item)
ts = [threading.Thread(target=worker) for _ in range(3)]
for t in ts: t.start()
for i in range(300): q.put(i)
for _ in ts: q.put(None)
for t in ts: t.join()
print(sum(out.get() for _ in range(300)))
