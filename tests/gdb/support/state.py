# Helpers for gdb scripts that go backwards (tests/gdb/reverse*.gdb).
#
# `record-forward LOCATION` single-steps the selected thread forwards until its pc is at
# LOCATION, keeping the state at every instruction: registers, the stack around the stack
# pointer and the values of the expressions given to `track-state` (`save-point` keeps the
# state where the replay is). After a reverse command,
# `check-forward` says which of those forward points the replay is at now: the state must be
# exactly one seen going forwards, and, command after command, an earlier one.
import gdb

REGISTERS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
             "r13", "r14", "r15", "rip", "eflags", "fs_base", "gs_base"]
EXPRESSIONS = []
FORWARD = []
LAST = [None]


def state():
    regs = tuple(int(gdb.parse_and_eval("$" + r)) & 0xffffffffffffffff for r in REGISTERS)
    sp = regs[REGISTERS.index("rsp")]
    stack = bytes(gdb.selected_inferior().read_memory(sp - 256, 512))
    values = tuple(str(gdb.parse_and_eval(e)) for e in EXPRESSIONS)
    return regs, stack, values


def where():
    sal = gdb.selected_frame().find_sal()
    name = gdb.selected_frame().name() or "??"
    line = "%s:%d" % (sal.symtab.filename.split("/")[-1], sal.line) if sal.symtab else "no line"
    return "%s (%s)" % (name, line)


class Track(gdb.Command):
    """track-state EXPR...: also compare these expressions."""

    def __init__(self):
        super().__init__("track-state", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        EXPRESSIONS.extend(arg.split())


class Record(gdb.Command):
    """record-forward LOCATION: stepi to LOCATION (a function, an address expression, or
    `caller`: where the selected frame returns to), keeping every state on the way."""

    def __init__(self):
        super().__init__("record-forward", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        name = arg.strip()
        symbols = [gdb.lookup_global_symbol(name), gdb.lookup_static_symbol(name)] + gdb.lookup_static_symbols(name)
        symbol = next((s for s in symbols if s is not None and s.is_function), None)
        if name == "caller":
            target = gdb.selected_frame().older().pc()
        elif symbol is not None:
            target = int(symbol.value().address)
        else:
            target = int(gdb.parse_and_eval(arg))
        FORWARD.append(state())
        # Quietly: gdb prints every stop otherwise.
        gdb.execute("set suppress-cli-notifications on")
        try:
            while int(gdb.parse_and_eval("$pc")) != target:
                gdb.execute("stepi", to_string=True)
                FORWARD.append(state())
        finally:
            gdb.execute("set suppress-cli-notifications off")
        LAST[0] = len(FORWARD) - 1
        print("recorded %d forward points up to %s" % (len(FORWARD), where()))


class Check(gdb.Command):
    """check-forward: which forward point the replay is at."""

    def __init__(self):
        super().__init__("check-forward", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        now = state()
        matches = [i for i, s in enumerate(FORWARD) if s == now]
        if not matches:
            same_pc = [i for i, s in enumerate(FORWARD) if s[0][16] == now[0][16]]
            print("DIFFERENT from every forward point at %s (pc seen forwards at points %s)" % (where(), same_pc))
            for i in same_pc:
                regs, stack, values = FORWARD[i]
                diff = [REGISTERS[k] for k in range(len(REGISTERS)) if regs[k] != now[0][k]]
                print("  point %d: registers %s%s%s" % (i, diff, ", stack" if stack != now[1] else "",
                                                        ", values" if values != now[2] else ""))
            return
        earlier = [i for i in matches if LAST[0] is None or i < LAST[0]]
        i = max(earlier) if earlier else max(matches)
        order = "earlier" if earlier else "NOT EARLIER"
        print("forward point %d at %s, %s than the last" % (i, where(), order))
        LAST[0] = i


class SavePoint(gdb.Command):
    """save-point: keep the state here as a forward point."""

    def __init__(self):
        super().__init__("save-point", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        FORWARD.append(state())
        LAST[0] = len(FORWARD) - 1
        print("saved forward point %d at %s" % (LAST[0], where()))


class Forwards(gdb.Command):
    """moved-forward: the next check may find a later point (the replay went forwards)."""

    def __init__(self):
        super().__init__("moved-forward", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        LAST[0] = None


Track()
Record()
Check()
Forwards()
SavePoint()
