"""Put the terminal in raw mode and print every byte read as `GOT xx` (hex); exits on `q`.

Whatever reaches us is what wrapagent passed through: with the outer
terminal raw and this one raw too, Ctrl-C/Ctrl-Z/Ctrl-\\ arrive as bytes.
"""

import os
import tty

tty.setraw(0)
os.write(1, b"READY\r\n")
while True:
    data = os.read(0, 1024)
    if not data:
        break
    for byte in data:
        os.write(1, b"GOT %02x\r\n" % byte)
    if b"q" in data:
        break
