#!/usr/bin/python3
# subprocess: a pipeline of two children, and one with a timeout.
import subprocess
p1 = subprocess.Popen(["seq", "1", "1000"], stdout=subprocess.PIPE)
p2 = subprocess.Popen(["wc", "-l"], stdin=p1.stdout, stdout=subprocess.PIPE)
p1.stdout.close()
print(p2.communicate()[0].decode().strip(), p1.wait())
print(subprocess.run(["sh", "-c", "echo inner; exit 3"], capture_output=True, timeout=30))
