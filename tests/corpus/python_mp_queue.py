#!/usr/bin/python3
# python multiprocessing: a Queue between a parent and two child processes.
# rdb-timeout: 30
import multiprocessing as mp
def produce(q, k):
    for i in range(5):
        q.put((k, i))
if __name__ == "__main__":
    q = mp.Queue()
    ps = [mp.Process(target=produce, args=(q, k)) for k in range(2)]
    for p in ps: p.start()
    got = sorted(q.get() for _ in range(10))
    for p in ps: p.join()
    print(got)
