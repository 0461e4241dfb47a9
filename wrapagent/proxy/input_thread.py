"""The input thread: the user's keys -> the interceptor -> the child.

It is the master's only writer; every byte goes through `to_child`, which
holds the ordering invariant (read its docstring first). This file only
decides when to read the user's terminal and when to write the queue.

A key typed with no interceptor costs one wait, one read and one write, and
a few bytecodes between them (`copy_keys`): the Python run between the
system calls, not the calls, was what a key cost over a minimal loop
(bench/keycost.py). The wait before each read stays: it is what lets the
thread be stopped without taking a key it must not (keys typed after the
child exited belong to whoever reads the terminal next).
"""

import errno
import os

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent import portable
from wrapagent.proxy.loop_state import block_signals_in_this_thread, drain_pipe, poke
from wrapagent.proxy.to_child import SMALL_WRITE

if TYPE_CHECKING:
    from wrapagent.proxy.loop_state import LoopState
    from wrapagent.proxy.to_child import ToChild

STDIN_READ_SIZE = 16 * 1024
"""Keys and pastes: a terminal hands a paste over in pieces of a few KiB at most."""

MAX_PENDING_INPUT = 1024 * 1024
"""Stop reading the user's keys while this much is queued for a child that does not read."""


class InputCopier:
    """user -> child, in a thread of its own (`run`)."""

    def __init__(self, st: "LoopState", to_child: "ToChild") -> None:
        self.st = st
        self.to_child = to_child

    def run(self) -> None:
        st, to_child = self.st, self.to_child
        try:
            block_signals_in_this_thread()
            waiter = portable.Waiter()
            in_r, stdin_fd, master = st.in_r, st.stdin_fd, st.master
            while not st.stop_input:
                if not to_child.pending and st.stdin_open and st.master_open and not st.paused:
                    self.copy_keys(waiter)  # until a poke, a queue, or the end of stdin
                pending = to_child.pending
                keys = st.stdin_open and not st.paused and len(pending) < MAX_PENDING_INPUT
                waiter.watch((in_r, stdin_fd) if keys else (in_r,),
                             (master,) if pending and st.master_open else ())
                readable, writable = waiter.wait(None)
                if in_r in readable:
                    drain_pipe(in_r)
                if st.stop_input:
                    break  # keys typed from now on belong to whoever reads the terminal next
                if writable or (to_child.pending and in_r in readable):
                    to_child.flush()
                if stdin_fd in readable and not st.paused:  # paused: the shell's keys (job control)
                    self.read_stdin()
        except BaseException as exc:
            st.error = exc
            poke(st.main_w)

    def copy_keys(self, waiter: "portable.Waiter") -> None:
        """The keystroke path, while nothing is queued: one wait, one read, one write per key.

        Returns, leaving the wake-up pipe undrained for the general loop
        above, as soon as anything else happens: a poke (stop, SIGHUP, the
        master closed, bytes queued by another thread), the end of stdin, or
        bytes queued (a write the child did not take whole, keys the
        interceptor holds back): the general loop waits for the master to
        become writable. With an interceptor attached, or bytes it released
        still queued, a read goes through `to_child.user_bytes`.
        """
        st, to_child = self.st, self.to_child
        stdin_fd = st.stdin_fd
        waiter.watch((st.in_r, stdin_fd))
        ready_fd, read, write, master = waiter.ready_fd, os.read, os.write, st.master
        user_bytes, write_now = to_child.user_bytes, to_child._write_now
        while True:
            fd = ready_fd()
            if st.stop_input or st.paused or fd != stdin_fd:
                return  # keys typed after the stop (or while the shell has the terminal) stay unread
            try:
                data = read(stdin_fd, STDIN_READ_SIZE)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                st.stdin_open = False  # the user's terminal is gone (hang-up) or stdin closed
                return
            if to_child.interceptor is not None or to_child.pending:  # the order: see to_child
                user_bytes(data)
            elif len(data) <= SMALL_WRITE:  # a key: one plain write (to_child._write)
                try:
                    n = write(master, data)
                except OSError as exc:
                    if exc.errno not in (errno.EIO, errno.EBADF):
                        raise
                    continue  # the child is gone; the output thread sees EIO and pokes
                if n != len(data):
                    with to_child.lock:
                        to_child.pending[0:0] = data[n:]
            else:
                write_now(data)
            if to_child.pending:
                return

    def read_stdin(self) -> None:
        st = self.st
        try:
            data = os.read(st.stdin_fd, STDIN_READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            # The user's terminal is gone (hang-up) or stdin closed.
            st.stdin_open = False
            return
        self.to_child.user_bytes(data)
