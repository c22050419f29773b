# What a program sends to /dev/null or to a file is not shown again on replay (only what it
# wrote to rdb's own stdout and stderr is); the replay writes no file.
# rdb-stdout: "shown\n"
echo shown
echo hidden > /dev/null
echo "to a file" > "${TMPDIR:-/tmp}/rdb-test-output-$$"
rm -f "${TMPDIR:-/tmp}/rdb-test-output-$$"
