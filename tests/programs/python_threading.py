# Four Python threads taking one lock, with short sleeps.
# rdb-replays: 2
# rdb-stdout-starts-with: "800 "
import threading, time
lock = threading.Lock()
log = []
def work(n):
    for i in range(200):
        with lock:
            log.append((n, i, time.monotonic_ns() % 1000))
        if i % 50 == 0:
            time.sleep(0.001)
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(len(log), log[:8], log[-4:])
