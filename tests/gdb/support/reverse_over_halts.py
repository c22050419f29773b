# Going back over halts of several threads (rdb's tests, gdb_halts.rs): forward with an access
# watchpoint (breakpoint 1) and a syscall catchpoint (2) until a stop of one thread at a caught
# syscall is followed by another thread's watchpoint stop, a few stops more, then back with
# reverse-continue to just before that watchpoint stop, and forward again: the same stops must
# come again, in the same order.
import gdb

WATCH, CATCH = 1, 2
log = []


def on_stop(ev):
    bps = getattr(ev, "breakpoints", None) or []
    value = int(gdb.parse_and_eval("race::COUNTER.v.value"))
    log.append((bps[0].number if bps else 0, gdb.selected_thread().num, int(gdb.parse_and_eval("$pc")), value))


gdb.events.stop.connect(on_stop)


def run(cmd):
    gdb.execute(cmd, to_string=True)


at = None
while at is None and len(log) < 1000:
    run("continue")
    if len(log) >= 2 and log[-2][0] == CATCH and log[-1][0] == WATCH and log[-2][1] != log[-1][1]:
        at = len(log) - 1
if at is None:
    print("no syscall stop followed by another thread's watchpoint stop")
else:
    for _ in range(6):
        run("continue")
    forward = list(log)
    for _ in range(sum(1 for s in forward[at:] if s[0] == WATCH)):
        run("reverse-continue")
    del log[:]
    for _ in range(len(forward) - at):
        run("continue")
    print(f"again after stop {at}: " + ("the same stops" if log == forward[at:] else f"{log}\ninstead of\n{forward[at:]}"))
