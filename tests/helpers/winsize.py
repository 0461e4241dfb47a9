"""Print the terminal size at start (`SIZE rows cols`) and on every SIGWINCH (`WINCH rows cols`).

`READY` means the SIGWINCH handler is installed. Exits on `q` or end of input.
"""

import os
import signal
import sys


def size() -> str:
    cols, rows = os.get_terminal_size(0)
    return f"{rows} {cols}"


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


signal.signal(signal.SIGWINCH, lambda *_: say(f"WINCH {size()}"))
say(f"SIZE {size()}")
say("READY")
while True:
    data = os.read(0, 1024)  # the handler runs while we wait here (PEP 475 retries)
    if not data or b"q" in data:
        break
sys.exit(0)
