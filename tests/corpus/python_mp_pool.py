#!/usr/bin/python3
# python multiprocessing: a Pool of worker processes (pipes, and a semaphore in shared memory).
# rdb-timeout: 30
import multiprocessing as mp
def square(x):
    return x * x
if __name__ == "__main__":
    with mp.Pool(3) as pool:
        print(pool.map(square, range(20)))
