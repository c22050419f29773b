# One hex digit of the program's hash in the header changed.
# expect-exit: 1
# expect-stderr: does not belong to this header
python3 - "$TRACE/rdb-trace.json" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
m = re.search(r'"program_blake3": "([0-9a-f])', s)
i = m.start(1)
s = s[:i] + ('0' if s[i] != '0' else '1') + s[i + 1:]
open(p, 'w').write(s)
PY
