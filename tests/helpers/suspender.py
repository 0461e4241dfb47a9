"""A raw-mode TUI that suspends itself on `z`, as vim, claude and codex do on Ctrl-Z.

Turns modes on (alternate screen, mouse, bracketed paste) and raw mode, prints
READY; then for every key: `z` puts the terminal back (modes off, saved
settings) and sends SIGTSTP to its own group, `q` does the same and exits 5,
any other key prints `GOT:<hex>`. On SIGCONT it takes the terminal again and
prints BACK.
"""

import errno
import os
import signal
import termios
import tty

MODES_ON = b"\x1b[?1049h\x1b[?1000h\x1b[?2004h"
MODES_OFF = b"\x1b[?2004l\x1b[?1000l\x1b[?1049l"
saved = termios.tcgetattr(0)


def take_terminal() -> None:
    # As libuv does: TCSADRAIN (keys typed ahead are kept), again after EINTR. A tool that
    # touches its terminal before it is the foreground group is stopped (SIGTTOU) and then
    # continued; Python's SIGCONT handler makes the interrupted call fail with EINTR.
    while True:
        try:
            tty.setraw(0, termios.TCSADRAIN)
            break
        except termios.error as exc:
            if exc.args[0] != errno.EINTR:
                raise
    os.write(1, MODES_ON)


def give_back() -> None:
    os.write(1, MODES_OFF)
    termios.tcsetattr(0, termios.TCSADRAIN, saved)


def on_continue(signum: int, frame: object) -> None:
    take_terminal()
    os.write(1, b"BACK\r\n")


signal.signal(signal.SIGCONT, on_continue)
take_terminal()
os.write(1, b"READY\r\n")
while True:
    key = os.read(0, 1)
    if not key:
        raise SystemExit(3)
    if key == b"z":
        give_back()
        os.write(1, b"SUSPENDING\r\n")
        os.kill(0, signal.SIGTSTP)
    elif key == b"q":
        give_back()
        raise SystemExit(5)
    else:
        os.write(1, b"GOT:%s\r\n" % key.hex().encode())
