#!/usr/bin/python3
# python multiprocessing.shared_memory: a child writes 42 into a POSIX shared memory block
# (/dev/shm) that the parent then reads.
# rdb-timeout: 30
import multiprocessing as mp
from multiprocessing import shared_memory
def child(name):
    shm = shared_memory.SharedMemory(name=name)
    shm.buf[0] = 42
    shm.close()
if __name__ == "__main__":
    shm = shared_memory.SharedMemory(create=True, size=16)
    p = mp.Process(target=child, args=(shm.name,))
    p.start()
    p.join()
    print("parent reads", shm.buf[0])
    shm.close()
    shm.unlink()
