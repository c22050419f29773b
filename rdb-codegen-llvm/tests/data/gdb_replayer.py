# Runs a program under gdb and invokes its debug regions the way a replayer
# does, from the descriptors alone: a breakpoint at each region's code
# location; there, argv[i] = the address of argument i (stack: base register
# + offset; symbol: load bias + module-relative address), then a call of the
# region's `__rdb_entry_<id>(argv)` in the debug module. (A real replay runs
# the module in a separate debug host; loading it into the program, as here,
# is only for this test.)
#
#   gdb -batch -x gdb_replayer.py --args PROG ARGS...   with RDB_PROG=PROG
import gdb
import json
import os

prog = os.environ["RDB_PROG"]
funcs = json.load(open(prog + ".rdb-functions.json"))
args = json.load(open(prog + ".rdb-arguments.json"))
module = os.path.join(os.path.dirname(os.path.abspath(prog)), funcs["debug_module"])

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("starti", to_string=True)
# Load bias of the (position-independent) executable: its lowest mapping.
maps = gdb.execute("info proc mappings", to_string=True)
exe = os.path.realpath(prog)
bias = min(int(line.split()[0], 16) for line in maps.splitlines() if line.strip().endswith(exe))
gdb.execute("break main", to_string=True)
gdb.execute("continue", to_string=True)
handle = gdb.parse_and_eval('((void *(*)(const char *, int))dlopen)("%s", 2)' % module)
if int(handle) == 0:
    raise SystemExit("dlopen failed")
argv_page = int(gdb.parse_and_eval("((void *(*)(void *, unsigned long, int, int, int, long))mmap)(0, 4096, 3, 0x22, -1, 0)"))

sites = {}
for f in funcs["functions"]:
    entry = int(gdb.parse_and_eval('((void *(*)(void *, const char *))dlsym)((void *)%d, "%s")' % (int(handle), f["entry"]["name"])))
    for loc in f["locations"]:
        sites.setdefault(loc["address"], []).append((f["region"], entry))
        gdb.execute("break *%d" % (bias + loc["address"]), to_string=True)

def address_of(location):
    cls = location["class"]
    if cls == "stack":
        return int(gdb.parse_and_eval("$" + location["base"]["name"])) + location["offset"]
    if cls == "symbol":
        return bias + location["address"]
    raise SystemExit("argument class %s not emulated" % cls)

while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    frame = gdb.selected_frame() if gdb.selected_thread() else None
    if frame is None:
        break
    pc = int(frame.pc()) - bias
    for region, entry in sorted(sites.get(pc, [])):
        argv = [a for a in args["arguments"] if a["region"] == region]
        argv.sort(key=lambda a: a["position"])
        for i, a in enumerate(argv):
            loc = next(l["location"] for l in a["locations"] if l["address"] == pc)
            gdb.execute("set *(void **)%d = (void *)%d" % (argv_page + 8 * i, address_of(loc)))
        gdb.parse_and_eval("((void (*)(void **))%d)((void **)%d)" % (entry, argv_page))
        # The program shares the stdout buffer here: flush before it may crash.
        gdb.parse_and_eval("((int (*)(void *))fflush)(0)")
