# One hex digit of a file hash in the summary changed.
# expect-exit: 1
# expect-stderr: summary.json
python3 - "$TRACE/summary.json" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
m = re.search(r'"[0-9a-f]{64}"', s)
i = m.start() + 5
s = s[:i] + ('0' if s[i] != '0' else '1') + s[i + 1:]
open(p, 'w').write(s)
PY
