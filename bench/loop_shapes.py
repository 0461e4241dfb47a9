#!/usr/bin/env python3
"""Minimal Python PTY copy loops, to measure what the *shape* of a loop costs.

Not a proxy to use: no signal forwarding, no SIGWINCH, no interceptor. Only
what the throughput and keystroke tests exercise, so that ptybench can put a
lean loop next to wrapagent's and show how much of the gap to `script` is the
loop and how much is Python itself:

    py=$(python -c 'import sys; print(sys.executable)')
    python bench/ptybench.py --tests throughput,latency --size-mb 100 \
        --extra "py-select=$py -S bench/loop_shapes.py select" \
        --extra "py-poll=$py -S bench/loop_shapes.py poll" \
        --extra "py-drain=$py -S bench/loop_shapes.py drain" \
        --extra "py-threads=$py bench/loop_shapes.py threads"

`threads` (two threads in blocking reads and writes, nothing else) is also
the start-up floor of any Python proxy that forks its child (run it with
`--tests startup`, with site: wrapagent's launcher loads site too).
`threads-rec` is `threads` with the simplest recorder beside it (a copy per
chunk, a queue, a writer thread appending to a file): the floor of recording
that `wrapagent-rec` is compared with.

`-S` skips site-packages: these loops need nothing from it, and it keeps the
machine's `.pth` start-up cost out of the "fixed CPU" column.
"""

from __future__ import annotations

import _thread
import contextlib
import fcntl
import os
import select
import sys
import termios
import tty
from collections.abc import Callable

BUF_SIZE = 64 * 1024
PTY_CHUNK = 4096  # n_tty's buffer: a full PTY read is about this much (N_TTY_BUF_SIZE)


def spawn(argv: list[str]) -> tuple[int, int]:
    """The child on a new PTY with our terminal's size; returns (pid, master)."""
    master, slave = os.openpty()
    with contextlib.suppress(OSError):  # not a terminal: keep the default size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.login_tty(slave)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.close(slave)
    os.set_blocking(master, False)
    return pid, master


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [])


def forward_keys(master: int) -> None:
    data = os.read(0, BUF_SIZE)
    if data:
        write_all(master, data)


def loop_select(master: int) -> None:
    """wrapagent's first shape: select() with fresh lists, one os.read(64 KiB) per wake-up."""
    while True:
        ready, _, _ = select.select([0, master], [], [], None)
        if master in ready:
            try:
                data = os.read(master, BUF_SIZE)
            except OSError:  # EIO: every slave fd closed
                return
            if not data:
                return
            write_all(1, data)
        if 0 in ready:
            forward_keys(master)


def loop_poll(master: int) -> None:
    """poll() registered once; readv into one reused buffer; one read per wake-up."""
    buf = bytearray(BUF_SIZE)
    view = memoryview(buf)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(master, select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd != master:
                forward_keys(master)
                continue
            try:
                n = os.readv(master, [buf])
            except BlockingIOError:
                continue
            except OSError:
                return
            if n == 0:
                return
            write_all(1, view[:n])


def loop_drain(master: int) -> None:
    """As `poll`, but keep reading while reads come back full, then write once."""
    buf = bytearray(BUF_SIZE)
    view = memoryview(buf)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(master, select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd != master:
                forward_keys(master)
                continue
            filled, eof = 0, False
            while filled <= BUF_SIZE - PTY_CHUNK:
                try:
                    n = os.readv(master, [view[filled:]])
                except BlockingIOError:
                    break
                except OSError:
                    n = 0
                if n == 0:
                    eof = True
                    break
                filled += n
                if n < PTY_CHUNK:  # a short read: the PTY is empty, don't pay for an EAGAIN
                    break
            if filled:
                write_all(1, view[:filled])
            if eof:
                return


def copy_keys(master: int) -> None:
    """The key thread of the threaded shapes: blocking reads of stdin, each written to the master."""
    while True:
        data = os.read(0, BUF_SIZE)
        if not data:
            return
        write_all(master, data)


def loop_threads(master: int) -> None:
    """Two threads in blocking os.read/os.write (keys: stdin -> master; output: master -> stdout).

    The floor of a Python proxy: no wait other than the reads themselves, so
    nothing can stop it early (no signals, no drain limits, no interceptor).
    """
    os.set_blocking(master, True)
    _thread.start_new_thread(copy_keys, (master,))
    while True:
        try:
            data = os.read(master, BUF_SIZE)
        except OSError:  # EIO: every slave fd closed
            return
        if not data:
            return
        write_all(1, data)


def loop_threads_rec(master: int) -> None:
    """`threads` plus the simplest recording: each chunk copied and queued with its time, a
    writer thread that takes what came every 50 ms and appends it to a file (one `writev`).

    What a recorder that never blocks the copy costs at the least, to put beside wrapagent
    with recording on (whose target is 0.90x of `threads`). The file is a temporary one,
    removed at the end.
    """
    import tempfile
    import time
    from _queue import Empty, SimpleQueue

    os.set_blocking(master, True)
    queue: SimpleQueue = SimpleQueue()
    fd, path = tempfile.mkstemp(prefix="loop-rec-")

    def writer() -> None:
        while True:
            first = queue.get()
            if first is None:
                return
            time.sleep(0.05)
            chunks = [first[1]]
            try:
                while True:
                    item = queue.get_nowait()
                    if item is None:
                        break
                    chunks.append(item[1])
            except Empty:
                pass
            for start in range(0, len(chunks), 512):
                os.writev(fd, chunks[start:start + 512])

    _thread.start_new_thread(writer, ())
    _thread.start_new_thread(copy_keys, (master,))
    buf = bytearray(BUF_SIZE)
    view = memoryview(buf)
    clock, put = time.monotonic, queue.put
    try:
        while True:
            try:
                got = os.readv(master, (view,))
            except OSError:  # EIO: every slave fd closed
                return
            if not got:
                return
            write_all(1, view[:got])
            put((clock(), buf[:got]))
    finally:
        os.close(fd)
        os.unlink(path)


LOOPS: dict[str, Callable[[int], None]] = {"select": loop_select, "poll": loop_poll, "drain": loop_drain,
                                           "threads": loop_threads, "threads-rec": loop_threads_rec}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in LOOPS:
        sys.stderr.write(f"usage: loop_shapes.py {{{','.join(LOOPS)}}} CMD [ARGS…]\n")
        return 2
    pid, master = spawn(argv[1:])
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    try:
        LOOPS[argv[0]](master)
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
    _, status, _ = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
