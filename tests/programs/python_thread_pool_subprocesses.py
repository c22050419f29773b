# A thread pool whose workers run subprocesses: each child's SIGCHLD (queued even though
# ignored, because the process is traced) may wake a thread blocked in `poll` on a pipe while
# another thread takes the signal; the kernel then resumes that poll with `restart_syscall`,
# whose `revents` must be replayed like poll's own. This happened in about one recording of
# seven, so several recordings are made, each replayed twice (threads_restart.c makes it certain).
# rdb-recordings: 5
# rdb-replays: 2
# rdb-stdout-contains: "(5, b'5\\n', 'ThreadPoolExecutor-0_"
import concurrent.futures, subprocess, threading
def job(i):
    out = subprocess.run(['echo', str(i)], capture_output=True).stdout
    return (i, out, threading.current_thread().name)
with concurrent.futures.ThreadPoolExecutor(3) as ex:
    print(list(ex.map(job, range(6))))
