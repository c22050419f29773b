#!/usr/bin/python3
# python multiprocessing: a Semaphore and a Value shared by three processes.
# rdb-timeout: 30
import multiprocessing as mp
def work(sem, total):
    for _ in range(50):
        with sem:
            total.value += 1
if __name__ == "__main__":
    sem = mp.Semaphore(1)
    total = mp.Value("i", 0, lock=False)
    ps = [mp.Process(target=work, args=(sem, total)) for _ in range(3)]
    for p in ps: p.start()
    for p in ps: p.join()
    print("total", total.value)
