# gdb's inferior calls run in a disposable copy of the process (a diversion): results come
# back, what the calls change shows in the copy until the program is resumed, a string argument
# (a nested call to malloc) works, a system call abandons the call with a message, and the
# replay then goes on exactly as recorded (counter is 8 again, the output is the recorded one).
# rdb-program: gdb_basics.c
python
def attempt(command):
    try:
        gdb.execute(command)
    except gdb.error as e:
        print("error: %s" % e)
end
break scale
continue
delete
print add(10, 20)
print counter
print factorial(6)
print scale(p, 3)
print *p
print p->x + by
print (int) strlen(greeting)
python attempt("call (int) puts(\"from gdb\")")
python attempt("print (int) getpid()")
print counter
print *p
print add(1, 2)
finish
print counter
continue
