"""Trap TERM/HUP/INT/QUIT: print `GOT SIGxxx`, then exit 100+N (or keep running with --ignore).

Prints `READY pid=P pgid=G` once the handlers are installed. With --ignore
the process survives every trapped signal, so only SIGKILL ends it.
"""

import os
import signal
import sys

ignore = "--ignore" in sys.argv[1:]


def handler(signum: int, frame: object) -> None:
    os.write(1, f"GOT {signal.Signals(signum).name}\n".encode())
    if not ignore:
        os._exit(100 + signum)


for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
    signal.signal(sig, handler)
os.write(1, f"READY pid={os.getpid()} pgid={os.getpgrp()}\n".encode())
while True:
    signal.pause()
