# A shell script that forks and execs a few programs: recordings of it cut right after each
# exec are replayed by cut_after_exec.rs.
for i in 1 2 3; do
    /bin/true
    echo "round $i" > /dev/null
done
/bin/echo done
