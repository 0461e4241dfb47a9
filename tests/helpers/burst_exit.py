"""Write N bytes of numbered lines as fast as possible, then `TAIL-MARK`, and exit at once."""

import os
import sys

n = int(sys.argv[1])
line = b"0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789\n"
data = (line * (n // len(line) + 1))[:n] + b"TAIL-MARK"
view = memoryview(data)
while view:
    view = view[os.write(1, view):]
