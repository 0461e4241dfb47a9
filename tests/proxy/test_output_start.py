"""The output thread's start: the supervisor waits for its first read and its first copy, never forever."""

from __future__ import annotations

import os

from wrapagent.proxy.loop_state import CopyThread, LoopState
from wrapagent.proxy.output_thread import OutputCopier
from wrapagent.proxy.to_child import ToChild

LONG = 30.0  # generous: the machine is loaded; a return by timeout is told apart below, never by the clock


def _copier() -> tuple[OutputCopier, int, int, int]:
    """An output copier between a PTY (the tool's side: its slave) and a pipe (the user's terminal)."""
    master, slave = os.openpty()
    user_r, user_w = os.pipe()
    st = LoopState(0, master, -1, user_w)
    return OutputCopier(st, ToChild(st, None), None), slave, user_r, user_w


def test_the_wait_returns_once_what_the_tool_wrote_first_is_copied() -> None:
    copier, slave, user_r, user_w = _copier()
    os.write(slave, b"first screen")  # written before the thread runs, as a fast tool's is
    thread = CopyThread(copier.run)
    thread.start()
    copier.wait_started(LONG, LONG)
    os.set_blocking(user_r, False)
    assert os.read(user_r, 100) == b"first screen"  # copied before the wait returned
    copier.st.stop_output = True
    os.close(slave)  # EIO: the thread ends
    assert thread.join(LONG)
    for fd in (copier.master, user_r, user_w):
        os.close(fd)


def test_a_thread_that_ends_without_output_releases_the_wait() -> None:
    copier, slave, user_r, user_w = _copier()
    os.close(slave)  # no output ever: the first read reports EIO
    thread = CopyThread(copier.run)
    thread.start()
    assert thread.join(LONG)
    assert not copier.reading.locked() and not copier.copied.locked()
    copier.wait_started(LONG, LONG)  # returns at once: nobody holds them
    for fd in (copier.master, user_r, user_w):
        os.close(fd)
