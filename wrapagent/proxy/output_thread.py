"""The output thread: what the child writes to its terminal, copied to the user's.

Reads go into one reused buffer (no allocation per read) and are repeated
while the PTY hands out full chunks, then written at once: fewer passes
through Python per byte (bench/ptybench.py). A short first read (a key's
echo) takes the shortest way: one read into the whole buffer, one write.

Output ends when the master reports EIO (every byte of a fast-exiting child
is drained), never on "child exited" alone. Once the supervisor has reaped
the child, the drain is bounded (DRAIN_QUIET_SECS, DRAIN_MAX_SECS): a
leftover process holding the terminal must not keep wrapagent alive.

With an interceptor attached, an output chunk costs one `time.monotonic()`
and one attribute store in the steady state (`watch_output` false); while it
watches output, a copy of the chunk goes to it through `to_child.output`.
"""

import errno
import os
import time
from time import monotonic

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent import portable
from wrapagent.proxy.loop_state import block_signals_in_this_thread, drain_pipe, poke, write_all
from wrapagent.proxy.terminal_modes import ModeTracker

if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.proxy.loop_state import LoopState
    from wrapagent.proxy.to_child import ToChild

PTY_CHUNK = 4095
"""A PTY master hands out at most about this much per read; a shorter read means "drained"."""

READ_SIZE = 64 * 1024
"""16-64 KiB: bigger reads cost more in Python than they save (../shared/PERF.md)."""

DRAIN_QUIET_SECS = 0.2
"""After the child was reaped, stop draining once the master has been quiet this long.

Normally the master reports EIO as soon as the last holder of the slave
exits; a background process the child left holding the terminal must not
keep wrapagent alive.
"""

DRAIN_MAX_SECS = 1.0
"""After the child was reaped, stop draining after reading this long even if output keeps coming.

Counted while the thread reads, not while its writes wait for a slow terminal:
the last buffer of a fast tool on a slow link (a serial console, ssh over a
bad network) is the tool's, and is shown whole.

The child's own tail is bounded by the kernel's PTY buffer (tens of KiB),
read in milliseconds; output that keeps coming is a leftover process (a
server the agent started in the background, ignoring SIGHUP) writing to
the terminal, and used to keep wrapagent running forever after the tool
exited. Leftovers in the child's session are then terminated.
"""

CLOSED, DRAINED, MORE, IDLE = 0, 1, 2, 3
"""What `read_master` saw: the master is gone, it has nothing more now, it may have more,
or it had nothing at all (the wait that came before was a poke, not output)."""


class OutputCopier:
    """master -> user, in a thread of its own (`run`)."""

    def __init__(self, st: "LoopState", to_child: "ToChild",
                 on_output: "Callable[[bytes], None] | None") -> None:
        self.st = st
        self.to_child = to_child
        self.on_output = on_output
        self.master = st.master
        self.stdout_fd = st.stdout_fd
        self.buf = bytearray(READ_SIZE)
        self.mv = memoryview(self.buf)
        self.whole = (self.mv,)  # readv's argument for a first read, built once
        self.modes = ModeTracker()
        """The modes the child turned on, undone by the proxy if it was killed."""
        self.drain_write_secs = 0.0
        """Time spent writing to the user since the reap: not counted in DRAIN_MAX_SECS."""

    def drain_secs(self, now: float) -> float:
        """How long the drain has been reading (the reap was seen)."""
        reaped = self.st.reaped_at
        assert reaped is not None
        return now - reaped - self.drain_write_secs

    def run(self) -> None:
        st = self.st
        try:
            block_signals_in_this_thread()
            waiter = portable.Waiter()
            waiter.watch((self.master, st.out_r))
            ready_fd = waiter.ready_fd
            read_master = self.read_master
            while True:
                seen = read_master()
                if seen == DRAINED and st.reaped_at is None:
                    # The child runs: one wait, then a read, per key. A poke
                    # instead of output is seen by the read (IDLE).
                    ready_fd()
                    if st.stop_output:
                        break
                    continue
                if seen == CLOSED:
                    break
                if seen == MORE:
                    continue
                if not self._wait_master(waiter):  # poked, or draining after the reap
                    break
        except BaseException as exc:  # re-raised by the supervisor
            st.error = exc
        finally:
            st.master_open = False
            poke(st.main_w)
            poke(st.in_w)

    def _wait_master(self, waiter: "portable.Waiter") -> bool:
        """Sleep until the master is readable; False when output must stop.

        Once the child was reaped, stop after DRAIN_QUIET_SECS of quiet or
        DRAIN_MAX_SECS in all (a leftover holding the terminal).
        """
        st = self.st
        while True:
            timeout = None
            if st.reaped_at is not None:
                left = DRAIN_MAX_SECS - self.drain_secs(time.monotonic())
                if left <= 0:
                    return False
                timeout = min(DRAIN_QUIET_SECS, left)
            readable, _ = waiter.wait(timeout)
            if st.stop_output:
                return False
            if self.master in readable:
                return True
            if not readable:
                return False  # quiet since the reap (the only case with a timeout)
            drain_pipe(st.out_r)  # poked: the child was reaped; wait again with a timeout

    def read_master(self) -> int:
        """Copy what the child wrote to the user; returns CLOSED, DRAINED, MORE or IDLE."""
        try:
            got = os.readv(self.master, self.whole)
        except BlockingIOError:
            return IDLE
        except OSError as exc:
            # Linux reports the departed child (all slave fds closed) as
            # EIO rather than as end of file.
            if exc.errno != errno.EIO:
                raise
            return CLOSED
        if not got:
            return CLOSED
        seen = DRAINED
        if got >= PTY_CHUNK:
            got, seen = self._read_more(got)
        mv = self.mv
        st = self.st
        if st.stdout_ok:
            self.modes.feed(self.buf, got)
            view = mv[:got]
            began = monotonic()  # a write may block on a slow terminal across the reap
            try:
                n = os.write(self.stdout_fd, view)
            except OSError:  # write_all below waits, or tells a gone terminal
                n = 0
            if n != got:
                st.stdout_ok = write_all(self.stdout_fd, view[n:])
            reaped = st.reaped_at
            if reaped is not None:
                self.drain_write_secs += max(0.0, monotonic() - max(began, reaped))
        icpt = self.to_child.interceptor
        if icpt is not None:
            if icpt.watch_output:
                self.to_child.output(icpt, bytes(mv[:got]))
            else:
                icpt.last_output = time.monotonic()  # the steady state: nothing more
        if self.on_output is not None:
            self.on_output(bytes(mv[:got]))
        if st.reaped_at is not None and self.drain_secs(time.monotonic()) >= DRAIN_MAX_SECS:
            return CLOSED  # a leftover that keeps writing
        return seen

    def _read_more(self, got: int) -> "tuple[int, int]":
        """After a full first chunk: keep reading behind it while the PTY hands out full chunks.

        Returns (bytes in the buffer, what was seen: CLOSED, DRAINED or MORE).
        """
        mv = self.mv
        while got < READ_SIZE:
            try:
                n = os.readv(self.master, (mv[got:],))
            except BlockingIOError:
                return got, DRAINED
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                return got, CLOSED
            if n == 0:
                return got, CLOSED
            got += n
            if n < PTY_CHUNK:
                return got, DRAINED
        return got, MORE
