"""The output thread: what the child writes to its terminal, copied to the user's.

The shape of the floor of a Python proxy (bench/loop_shapes.py `threads`):
one blocking read of the master into a reused buffer (no allocation per
read), one write of what it returned. No wait before the read, no read that
comes back empty, no accumulation across reads: each chunk goes out while
the child writes the next one (measured by bench/ptybench.py, docs/performance.md).

Output ends when the master reports EIO: the last holder of the terminal
closed it (every byte of a fast-exiting child is read first), never on
"child exited" alone. Once the supervisor has reaped the child, the master is
non-blocking for good (`to_child.master_nonblocking_for_good`) and the drain
is bounded (DRAIN_QUIET_SECS, DRAIN_MAX_SECS): a leftover process holding the
terminal must not keep wrapagent alive. A read already asleep at the reap is
woken, if nothing else comes, by a byte written to the terminal side
(`wake`, from the supervisor): a NUL, not shown.

EAGAIN before the reap means a read woke while the input thread had the
master non-blocking for one of its writes: the thread then waits in poll.

With an interceptor attached, an output chunk costs one `time.monotonic()`
and one attribute store in the steady state (`watch_output` false); while it
watches output, a copy of the chunk goes to it through `to_child.output`: an
append to a list while output flows (the supervisor hands it over).

The output observer (`on_output`: the session's recording) gets a copy of
each chunk, bytes or a `bytearray` it may keep (the interceptor's copy when
there is one: one copy per chunk). It may return another observer, which
takes its place from the next chunk on: the stand-in that keeps a tool's
first output until its recorder exists hands over that way, so a chunk costs
one Python call, not two, for the rest of the session.
"""

import _thread
import errno
import os
import time
from time import monotonic

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent.proxy.loop_state import block_signals_in_this_thread, drain_pipe, poke, write_all
from wrapagent.proxy.terminal_modes import ModeTracker

if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.portable import Waiter
    from wrapagent.proxy.loop_state import LoopState
    from wrapagent.proxy.to_child import ToChild

READ_SIZE = 64 * 1024
"""16-64 KiB: bigger reads cost more in Python than they save (docs/performance.md)."""

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

class OutputCopier:
    """master -> user, in a thread of its own (`run`)."""

    def __init__(self, st: "LoopState", to_child: "ToChild",
                 on_output: "Callable[[bytearray], object] | None") -> None:
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
        self.wake_dropped = False
        self.reading = _thread.allocate_lock()
        """Held until the thread is about to make its first read (`wait_started`)."""
        self.reading.acquire()
        self.copied = _thread.allocate_lock()
        """Held until the thread has copied the tool's first output, or ended (`wait_started`)."""
        self.copied.acquire()
        self._released: "list[_thread.LockType]" = []
        self.drain_write_secs = 0.0
        """Time spent writing to the user since the reap: not counted in DRAIN_MAX_SECS."""

    def wait_started(self, read_timeout: float, copy_timeout: float) -> None:
        """Wait, the interpreter lock released, until the thread is about to read the master (at most
        `read_timeout` s), then until it has copied the tool's first output (at most `copy_timeout` s).

        What the caller does next (loading the key copier: ~1 ms of imports
        holding the lock) would otherwise keep a new thread from its first
        read, and a first read that returned at once from its write.
        """
        if self.reading.acquire(timeout=read_timeout):
            self.reading.release()
            if self.copied.acquire(timeout=copy_timeout):
                self.copied.release()

    def _release(self, lock: "_thread.LockType") -> None:
        """Release `reading` or `copied`, once (a waiter may hold it for a moment afterwards)."""
        if lock not in self._released:
            self._released.append(lock)
            lock.release()

    def _release_waiters(self) -> None:
        self._release(self.reading)
        self._release(self.copied)

    def drain_secs(self, now: float) -> float:
        """How long the drain has been reading (the reap was seen)."""
        reaped = self.st.reaped_at
        assert reaped is not None
        return now - reaped - self.drain_write_secs

    def run(self) -> None:
        st = self.st
        try:
            block_signals_in_this_thread()
            waiter = None  # made on the first wait: the first bytes come before `portable` is needed
            master, whole, mv, buf = self.master, self.whole, self.mv, self.buf
            stdout_fd, to_child, modes = self.stdout_fd, self.to_child, self.modes
            readv, write, find, gate = os.readv, os.write, buf.find, st.out_gate
            first = True
            self._release(self.reading)  # the supervisor's `wait_started`
            while True:
                try:
                    got = readv(master, whole)
                except BlockingIOError:
                    if waiter is None:
                        waiter = self._waiter()
                    if not self._wait_master(waiter):
                        break
                    continue
                except OSError as exc:
                    # Linux reports the departed child (all slave fds closed) as
                    # EIO rather than as end of file.
                    if exc.errno != errno.EIO:
                        raise
                    break
                if not got or st.stop_output:
                    break
                if st.woken and buf[got - 1] == 0 and not self.wake_dropped:
                    self.wake_dropped = True  # the supervisor's wake-up byte, last (see `wake`)
                    got -= 1
                    if not got:
                        continue
                reaped = st.reaped_at
                if st.stdout_ok:
                    with gate:  # held by the supervisor while the terminal is the shell's
                        if modes.tail or find(b"\x1b", 0, got) >= 0:
                            modes.feed(buf, got)
                        if reaped is not None:
                            began = monotonic()
                        view = mv[:got]
                        try:
                            n = write(stdout_fd, view)
                        except OSError:  # write_all below waits, or tells a gone terminal
                            n = 0
                        if n != got:
                            st.stdout_ok = write_all(stdout_fd, view[n:])
                        if reaped is not None:
                            self.drain_write_secs += monotonic() - began
                if first:  # once: the supervisor's `after_start` waits for it
                    first = False
                    st.first_output = True
                    poke(st.main_w)
                    self._release(self.copied)
                icpt = to_child.interceptor
                copy = None
                if icpt is not None:
                    if icpt.watch_output:
                        copy = bytes(mv[:got])  # kept by both: the interceptor's, the observer's
                        to_child.output(icpt, copy)
                    else:
                        icpt.last_output = monotonic()  # the steady state: nothing more
                    notice = getattr(icpt, "screen_notice", b"")
                    if notice and st.stdout_ok:
                        # One line the interceptor has for the user (a delivery without a
                        # receipt): written here, between two of the tool's writes, never
                        # inside one of its escape sequences.
                        icpt.screen_notice = b""
                        st.stdout_ok = write_all(stdout_fd, notice)
                observer = self.on_output
                if observer is not None:
                    # A copy (the buffer is reused): the interceptor's, or a bytearray's slice,
                    # the cheapest one.
                    after = observer(buf[:got] if copy is None else copy)
                    if after is not None:  # it hands over (`on_output`)
                        self.on_output = after
                if st.reaped_at is not None:
                    if reaped is None:  # reaped during this chunk: in its write, not reading
                        self.drain_write_secs = monotonic() - st.reaped_at
                    st.drain_seen = True
                    if self.drain_secs(monotonic()) >= DRAIN_MAX_SECS:
                        break  # a leftover that keeps writing
        except BaseException as exc:  # re-raised by the supervisor
            st.error = exc
        finally:
            st.master_open = False
            self._release_waiters()  # (ended before its first read or output: nobody waits any longer)
            poke(st.main_w)
            poke(st.in_w)

    def _waiter(self) -> "Waiter":
        """The wait on the master and this thread's wake-up pipe (`portable`: poll, or select on macOS)."""
        from wrapagent import portable

        waiter = portable.Waiter()
        waiter.watch((self.master, self.st.out_r))
        return waiter

    def _wait_master(self, waiter: "Waiter") -> bool:
        """The master had nothing (non-blocking): sleep until it is readable; False when output must stop.

        Once the child was reaped, stop after DRAIN_QUIET_SECS of quiet or
        DRAIN_MAX_SECS of reading in all (a leftover holding the terminal).
        """
        st = self.st
        while True:
            timeout = None
            if st.reaped_at is not None:
                st.drain_seen = True
                left = DRAIN_MAX_SECS - self.drain_secs(monotonic())
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


def wake(master: int) -> bool:
    """Wake an output thread asleep in a read of `master`: one NUL written to the terminal side.

    For a read that nothing else will end (the child was reaped, a quiet
    leftover still holds the terminal, or the proxy stops). The thread drops
    one NUL at the end of a read once `LoopState.woken` is set. False if the terminal side
    could not be opened or took nothing.
    """
    from wrapagent import portable

    peer = portable.open_pty_peer(master)
    if peer is None:
        return False
    try:
        return os.write(peer, b"\0") == 1
    except OSError:
        return False
    finally:
        os.close(peer)
