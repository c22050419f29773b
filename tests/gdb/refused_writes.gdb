# Writes to the replay are refused with what to do instead, and change nothing: the replay
# ends as recorded.
# rdb-program: gdb_basics.c
python
def attempt(command):
    try:
        gdb.execute(command)
    except gdb.error as e:
        print("error: %s" % e)
end
break add
continue
python attempt("set var counter = 99")
print counter
python attempt("set var $rax = 1")
print $rax == 1
python attempt("set var a = 1000")
print a
python attempt("jump factorial")
print $pc
delete
continue
