"""Every byte for the child passes here: the user's keys, and what the interceptor releases.

The ordering invariant, enforced in this file only:

    The child receives bytes in the order they were queued, and the user's
    keys in the order they were typed, behind everything the interceptor
    released before them.

How:
- The input thread is the master's only writer (`user_bytes`, `flush`). The
  master stays blocking for the output thread's reads; a key or a short
  burst (SMALL_WRITE bytes, nothing queued) is one plain write, anything
  bigger is written with the master non-blocking for that write (`_write`),
  so a child that reads nothing makes a paste queue here instead of stopping
  the thread. (A key written while 64 KiB the child has not read fill its
  input waits in the kernel until it reads or exits; the keys after it wait
  in the user's terminal, in order.)
- Another thread with bytes for the child (an interceptor's `poll` run by
  the supervisor at a deadline, or by the output thread after `on_output`)
  appends them to `pending` under `lock` and pokes the input thread.
- The input thread writes bytes of its own straight to the master only when
  `pending` is empty; otherwise they go behind it. A short write puts the
  rest at the head of `pending` (it was queued before anything there now).
- Without the lock: when `interceptor` is None AND `pending` is empty. Both
  are read in that order: an interceptor is dropped under the lock after
  what its last `poll` returned was appended, and once it is dropped no
  other thread appends. (Reading only `interceptor` let a key read while the
  interceptor finished overtake the keys it had just released: typed
  `a b c`, the child got `c a b`.)

The interceptor contract (v2), for the calls made from here:

    `done` true -> dropped for good. `watch_output` is read per output
    chunk: true -> `on_output(bytes copy, now)`; false (the steady state) ->
    the loop only stores `last_output = time.monotonic()`: no call, no
    copy, no lock, and nobody is woken, so `watch_output` must be true
    whenever output can move `deadline()` EARLIER (the supervisor sleeps on
    the deadline it read last; only a call makes it read again). `poll`
    runs right after every on_input and on_output, when `deadline()` has
    passed and when `wake_fd()` is readable; what it returns goes to the
    child after anything already queued. Output is handed over at most every
    OUTPUT_POLL_SECS (chunks within a period are joined, in order, and
    handed over before a key, a resize or by the supervisor at the period's end). `deadline()` and `wake_fd()` may change
    after any call. Calls are never concurrent (`lock`); the `last_output`
    store is the only thing that may happen concurrently. An interceptor
    never blocks. Optional: `on_resize(rows, cols)`.
"""

import _thread
import errno
import os
import time

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent.proxy.loop_state import poke

if TYPE_CHECKING:
    from typing import Callable, Protocol

    from wrapagent.proxy.loop_state import LoopState

    class Interceptor(Protocol):
        """Sees the user's input and the child's output until it says it is done (see module docstring)."""

        done: bool
        watch_output: bool
        last_output: float

        def on_input(self, data: bytes, now: float) -> bytes:
            """Bytes to forward to the child now (the rest may be held)."""

        def on_output(self, data: bytes, now: float) -> None:
            """The child wrote `data` (already copied to the user)."""

        def poll(self, now: float) -> bytes:
            """Bytes due to the child now (timed deliveries, released keys)."""

        def deadline(self) -> "float | None":
            """Monotonic time at which `poll` must run next, or None."""

        def wake_fd(self) -> "int | None":
            """A readable fd that signals "call poll" (a background job finished)."""

SMALL_WRITE = 256
"""Up to this many bytes (keys, a short burst) go in one plain write: no flag changes around it."""

QUEUE_WRITE_SIZE = 64 * 1024
"""At most this much of the queue per write to the (non-blocking) master."""

OUTPUT_POLL_SECS = 0.005
"""The interceptor is handed output (`on_output`, then `poll`, `deadline`, `wake_fd`) at most this
often. A pty hands a flood over in reads of ~2.5 KB: these calls after each one took the
interpreter lock from the copy for ~0.85 s per 120 MB (a `cat` with everything on at 0.75x the
floor). The first chunk after a quiet spell is handed over at once by the output thread, which
opens a period; within it the output thread only appends its chunks to a list and notes the time
(no lock), and the supervisor hands them over at the period's end (`plan`, `poll`), opening the
next one while output flows. A key or a resize takes them first (before itself). The interceptor
sees every byte, in order, with the time the last of them came, at most a period late, or
OVERDUE_SECS later when the supervisor is busy (see below)."""

OVERDUE_SECS = 0.005
"""A period this far past its end with its output not handed over (the supervisor busy with the
session's start, or slow to wake on a loaded machine): the output thread hands it over itself, as
it does after a quiet spell. The interceptor is never further behind than that, and a slow one
slows the output thread (which waits for the lock) instead of letting the kept output grow."""


class ToChild:
    """The queue of bytes for the child and the gate to the interceptor (module docstring).

    `lock` serialises every call into the interceptor and every change of
    `pending` by a thread other than the input thread; it is never held
    across I/O.
    """

    def __init__(self, st: "LoopState", interceptor: "Interceptor | None") -> None:

        self.st = st
        self.master = st.master
        self.interceptor = interceptor
        self.lock = _thread.allocate_lock()
        self.pending = bytearray()
        # What the supervisor sleeps on (read under the lock before every sleep):
        # a call from a copy thread that moves either pokes it.
        self.main_deadline: "float | None" = None
        self.main_wake: "int | None" = None
        self._output_poll_due = 0.0
        """The end of the open period (`_holding`): when the supervisor hands its output over."""
        self._holding = False
        """A period is open: the output thread appends its chunks to `_held_output` and goes on;
        the supervisor, which plans a look at `_output_poll_due`, hands them over. Set under the
        lock; read by the output thread without it (see `output` for why nothing is stranded)."""
        self._held_at = 0.0
        """When the last chunk kept came: the time the interceptor is given with them."""
        self._held_output: list[bytes] = []
        """Output chunks kept within a period, in order: joined once, at the hand-over (one copy).
        Appended by the output thread without the lock; taken (a copy of the list, then `del` of
        as many) under it: both are single operations of the list, so an append in between stays.
        That rests on the interpreter lock: a free-threaded Python would need a lock here."""
        self._fcntl: "Callable[..., int] | None" = None  # with the flags below, by `_load_flags`
        self._setfl = 0
        self._blocking_flags = self._nonblocking_flags = 0
        self._flags_lock = _thread.allocate_lock()
        self._nonblocking_for_good = False

    def master_nonblocking_for_good(self) -> None:
        """The child was reaped: no more writes, and the output thread's drain reads must not block."""
        with self._flags_lock:
            self._nonblocking_for_good = True
            fcntl = self._fcntl or self._load_flags()
            fcntl(self.master, self._setfl, self._nonblocking_flags)

    def _load_flags(self) -> "Callable[..., int]":
        """`fcntl` and the master's flags, on the first switch (under `_flags_lock`; nothing else
        changes them): the copy loop's start, before the tool's first byte, does not load it."""
        import fcntl

        self._setfl = fcntl.F_SETFL
        self._blocking_flags = fcntl.fcntl(self.master, fcntl.F_GETFL) & ~os.O_NONBLOCK
        self._nonblocking_flags = self._blocking_flags | os.O_NONBLOCK
        self._fcntl = fcntl.fcntl
        return fcntl.fcntl

    def _write(self, data: "bytes | bytearray") -> int:
        """One write to the master that never blocks (raises BlockingIOError when it takes nothing).

        O_NONBLOCK belongs to the open file, shared with the output thread,
        which reads the master blocking: it is set for this write only. A
        read that wakes up meanwhile with nothing to read gets EAGAIN and
        waits in poll instead (output_thread).
        """
        if len(data) <= SMALL_WRITE and not self.pending:
            return os.write(self.master, data)  # (see the module docstring)
        with self._flags_lock:
            if self._nonblocking_for_good:
                return os.write(self.master, data)
            fcntl, fd = self._fcntl or self._load_flags(), self.master
            fcntl(fd, self._setfl, self._nonblocking_flags)
            try:
                return os.write(fd, data)
            finally:
                fcntl(fd, self._setfl, self._blocking_flags)

    # -- the input thread: the master's only writer ----------------------------------

    def user_bytes(self, data: bytes) -> None:
        """What the user typed: through the interceptor, then to the child now or behind the queue."""
        icpt = self.interceptor
        if icpt is None:
            if not self.pending:  # in this order: see the module docstring
                self._write_now(data)
                return
            with self.lock:
                self.pending += data
            self.flush()
            return
        with self.lock:
            icpt = self.interceptor
            if icpt is None:  # dropped meanwhile: behind what it released
                self.pending += data
                direct = False
            else:
                now = time.monotonic()
                self._hand_over_output(icpt)  # the output before this key, first
                data = icpt.on_input(data, now) + icpt.poll(now)  # poll's bytes follow
                # Nothing queued: write at once, before the bookkeeping below
                # (the key's latency). Bytes queued later by other threads
                # are behind these: this thread is the master's only writer.
                direct = not self.pending
                if not direct:
                    self.pending += data
        if not direct:
            self.flush()
        elif data:
            self._write_now(data)
        if icpt is not None:
            with self.lock:
                if self.interceptor is icpt:
                    self._after_effects(icpt, "input")

    def _write_now(self, data: bytes) -> None:
        """Write `data` to the child now; what it does not take goes first in the queue."""
        try:
            n = self._write(data)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF):
                raise
            return  # the child is gone
        if n < len(data):
            with self.lock:
                self.pending[0:0] = data[n:]

    def flush(self) -> None:
        """Write what is queued, as much as the child takes now (the master is non-blocking)."""
        with self.lock:
            chunk = bytes(self.pending[:QUEUE_WRITE_SIZE])
        if not chunk:
            return
        try:
            n = self._write(chunk)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF):
                raise
            with self.lock:
                self.pending.clear()  # the child is gone: nobody will read these
            return
        with self.lock:
            del self.pending[:n]

    # -- the output thread ------------------------------------------------------------

    def output(self, icpt: "Interceptor", data: bytes) -> None:
        """The child wrote `data` and `icpt` watches output (`watch_output` true).

        Within an open period: one append, one clock read, one attribute read. The chunk is
        appended before `_holding` is read, and the supervisor clears `_holding` before it looks at
        the list a last time (`poll`): a chunk appended after that look sees the period closed and
        is handed over here, so none is left behind when output stops.
        """
        now = time.monotonic()
        held = self._held_output
        held.append(data)
        self._held_at = now
        if self._holding and now < self._output_poll_due + OVERDUE_SECS:
            return
        with self.lock:
            if self.interceptor is not icpt:
                del held[:]  # dropped: nobody will read them
                return
            self._hand_over_output(icpt)  # this chunk, behind any the supervisor did not take
            self._open_period(now)
            self._after_call(icpt, now, "output")

    def _open_period(self, now: float) -> None:
        """(Under `lock`.) Keep output until `now + OUTPUT_POLL_SECS`; the supervisor, asleep on a
        later deadline, is told to plan again (once per period opened from the output thread)."""
        self._output_poll_due = now + OUTPUT_POLL_SECS
        if not self._holding:
            self._holding = True
            planned = self.main_deadline
            if planned is None or planned > self._output_poll_due:
                poke(self.st.main_w)

    def _hand_over_output(self, icpt: "Interceptor") -> bool:
        """(Under `lock`.) Output kept so far goes to the interceptor now, with the time the last of
        it came: before a key, a resize or a poll, which come after it. False if there was none."""
        held = self._held_output
        chunks = held[:]
        if not chunks:
            return False
        del held[:len(chunks)]
        icpt.on_output(chunks[0] if len(chunks) == 1 else b"".join(chunks), self._held_at)
        return True

    # -- the supervisor ------------------------------------------------------------------

    def plan(self) -> "tuple[float | None, int | None]":
        """The interceptor's deadline and wake fd, read under the lock (they are calls), and kept."""
        with self.lock:
            icpt = self.interceptor
            if icpt is None:
                self.main_deadline = self.main_wake = None
            else:
                deadline = icpt.deadline()
                if self._holding and (deadline is None or self._output_poll_due < deadline):
                    deadline = self._output_poll_due
                self.main_deadline, self.main_wake = deadline, icpt.wake_fd()
            return self.main_deadline, self.main_wake

    def poll(self, now: float, woken: bool = True) -> None:
        """A deadline passed or (`woken`) the wake fd fired.

        At an open period's end the output kept in it is handed over and the next period opened
        (output flows; no poke needed); a period in which nothing came is closed, and a look that
        then has nothing else due calls nothing."""
        with self.lock:
            icpt = self.interceptor
            if icpt is None:
                return
            if self._holding and now >= self._output_poll_due:
                if self._hand_over_output(icpt):
                    self._output_poll_due = now + OUTPUT_POLL_SECS
                else:
                    self._holding = False
                    if self._hand_over_output(icpt):  # appended as it closed (see `output`)
                        self._open_period(now)
                    elif not woken:
                        own = icpt.deadline()
                        if own is None or now < own:
                            return
            self._after_call(icpt, now, "main")

    def resized(self, rows: int, cols: int) -> None:
        with self.lock:
            resize = getattr(self.interceptor, "on_resize", None)
            if resize is not None:
                self._hand_over_output(self.interceptor)  # drawn at the old size
                resize(rows, cols)  # its screen emulator redraws at the new size too

    def wants_size(self) -> bool:
        return getattr(self.interceptor, "on_resize", None) is not None

    # -- after a call (always under `lock`) ---------------------------------------------

    def _after_call(self, icpt: "Interceptor", now: float, caller: str) -> None:
        """Take what is due, drop a done interceptor, wake who must act.

        `caller` is the thread ("output" or "main"). Bytes due go to `pending`
        and the input thread, the master's only writer, is poked to send them.
        """
        due = icpt.poll(now)
        if due:
            self.pending += due
            poke(self.st.in_w)
        self._after_effects(icpt, caller)

    def _after_effects(self, icpt: "Interceptor", caller: str) -> None:
        """Drop a done interceptor; wake the supervisor if its deadline or wake fd moved.

        A call from a copy thread may have set an earlier deadline or a new
        wake fd than the supervisor sleeps on (both are re-read under the
        lock before every sleep, so comparing here is race-free).
        """
        if icpt.done:
            self.interceptor = None  # after its last bytes were queued: see the module docstring
            self._holding = False
            del self._held_output[:]
            if caller != "main":
                poke(self.st.main_w)
            return
        if caller != "main":
            deadline, wake = icpt.deadline(), icpt.wake_fd()
            if wake != self.main_wake or (deadline is not None and (
                    self.main_deadline is None or deadline < self.main_deadline)):
                poke(self.st.main_w)
