"""Raw terminal; reads nothing until the file argv[1] exists, then reads argv[2] bytes and prints their digest.

Until then whatever is typed piles up: first in the PTY's own buffer, then in
wrapagent's queue once the master takes no more (the keystroke path's short
write). Prints `SUM <sha256> <count>` and exits.
"""

import hashlib
import os
import sys
import time
import tty

tty.setraw(0)
os.write(1, b"READY\r\n")
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
want, got = int(sys.argv[2]), bytearray()
while len(got) < want:
    data = os.read(0, 65536)
    if not data:
        break
    got += data
os.write(1, b"SUM %s %d\r\n" % (hashlib.sha256(got).hexdigest().encode(), len(got)))
