"""Trap TERM/HUP/INT/QUIT: print `GOT SIGxxx`, then exit 100+N (or keep running with --ignore).

Prints `READY pid=P pgid=G` once the handlers are installed. With --ignore
the process survives every trapped signal, so only SIGKILL ends it. With
--modes it first turns terminal modes on as a TUI does (alternate screen,
mouse, bracketed paste, hidden cursor, kitty keyboard flags) and never off.
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
if "--modes" in sys.argv[1:]:
    os.write(1, b"\x1b[?1049h\x1b[?1000;1006h\x1b[?2004h\x1b[?25l\x1b[>1u")
os.write(1, f"READY pid={os.getpid()} pgid={os.getpgrp()}\n".encode())
while True:
    signal.pause()
