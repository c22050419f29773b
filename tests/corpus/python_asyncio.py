#!/usr/bin/python3
# asyncio: tasks, sleeps and a subprocess, with an event loop on epoll.
import asyncio
async def tick(name, n):
    for i in range(n):
        await asyncio.sleep(0.001)
    return f"{name}:{n}"
async def main():
    results = await asyncio.gather(*(tick(f"t{k}", k + 2) for k in range(5)))
    proc = await asyncio.create_subprocess_exec("echo", "from child", stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    print(results, out)
asyncio.run(main())
