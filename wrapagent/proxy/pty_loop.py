"""The transparent PTY proxy: the child on a new pseudo-terminal, bytes copied both ways.

Each direction is copied by a thread of its own, sleeping in one wait
(`portable.Waiter`: poll() on Linux, select() on macOS, whose poll() does not
support ttys); the main thread handles signals, the child and the
interceptor's timers. A single loop that did all of it paid per pass for
checks the copy never needs (bench/ptybench.py: 0.7x the throughput of
`script`, 1.3x its CPU per byte), and the interceptor now stays attached for
the whole session. Properties kept from the asciinema-like loop before it:
- output ends when the master reports EIO (every byte of a fast-exiting
  child is drained), never on "child exited" alone;
- signals become bytes on a pipe (`signal.set_wakeup_fd`) and are handled in
  the main thread, so no work happens in a signal handler;
- keystrokes are queued and written to the non-blocking master, no sleeps;
- the window size is set on the slave before the child exists, and copied
  again on every SIGWINCH;
- the child's exit status is kept: 0-255 as is, 128+N for signal N.

Everything the loop touches is a parameter (fds, the input interceptor, the
output observer), so tests can hand it PTY pairs they own.
"""

import _thread
import errno
import os
import select
import sys
import time

try:  # the C module: `signal` imports `enum` for its IntEnums (~8 ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent import portable
from wrapagent.proxy import terminal
from wrapagent.proxy.spawn import FORWARDED_SIGNALS, Child, SignalPipe, start, status_to_exit_code

if TYPE_CHECKING:  # typing and dataclasses cost ~25 ms of start-up: annotations only
    from typing import Callable, Mapping, Protocol, Sequence

PTY_CHUNK = 4095
"""A PTY master hands out at most about this much per read; a shorter read means "drained"."""

READ_SIZE = 64 * 1024
"""16-64 KiB: bigger reads cost more in Python than they save (../shared/PERF.md)."""

STDIN_READ_SIZE = 16 * 1024
"""Keys and pastes: a terminal hands a paste over in pieces of a few KiB at most."""

MAX_PENDING_INPUT = 1024 * 1024
"""Stop reading the user's keys while this much is queued for a child that does not read."""

KILL_GRACE_SECS = 5.0
"""After forwarding SIGTERM/SIGHUP/SIGINT, how long the child gets before SIGKILL.

claude records a "strike" when SIGKILLed and turns its renderer off after two:
it must get the graceful signal first and time to act on it.
"""

ORPHAN_GRACE_SECS = 0.5
"""After the child exits, how long leftovers in its session get between SIGTERM and SIGKILL."""

DRAIN_QUIET_SECS = 0.2
"""After the child was reaped, stop draining once the master has been quiet this long.

Normally the master reports EIO as soon as the last holder of the slave
exits; a background process the child left holding the terminal must not
keep wrapagent alive.
"""

SETUP_SWITCH_INTERVAL = 0.0005
"""GIL switch interval while `after_start` work runs beside the copy threads (see `_while_copying`)."""

DRAIN_MAX_SECS = 1.0
"""After the child was reaped, stop draining this long after it even if output keeps coming.

The child's own tail is bounded by the kernel's PTY buffer (tens of KiB),
read in milliseconds; output that keeps coming is a leftover process (a
server the agent started in the background, ignoring SIGHUP) writing to
the terminal, and used to keep wrapagent running forever after the tool
exited. Leftovers in the child's session are then terminated.
"""

if TYPE_CHECKING:
    class Interceptor(Protocol):
        """Sees the user's input and the child's output until it says it is done.

        The contract (v2): `done` true -> dropped for good. `watch_output`
        is read per output chunk: true -> `on_output(bytes copy, now)`;
        false (the steady state) -> the loop only stores `last_output = now`
        (time.monotonic()), no call, no copy, no lock, and nobody is woken:
        so `watch_output` must be true whenever output can move `deadline()`
        EARLIER (the main thread sleeps on the deadline it read last, and
        only a call tells it to read again). `poll` runs right
        after every on_input/on_output, when `deadline()` has passed and when
        `wake_fd()` is readable; what it returns goes to the child after
        anything already queued. `deadline()` and `wake_fd()` may change
        after any call. Calls are never concurrent (one lock); the
        `last_output` store is the only thing that may happen concurrently.
        An interceptor never blocks.
        """

        done: bool
        watch_output: bool
        """False: the loop only stores `last_output = time.monotonic()` per output chunk."""
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


class ProxyResult:
    """How the child ended, and what it cost (from wait4: the child and its waited-for descendants).

    A plain class, not a dataclass: `dataclasses` costs ~20 ms to import.
    """

    def __init__(self, exit_code: int, signal: "int | None", cpu_seconds: float,
                 peak_rss_bytes: int, forwarded_signals: "list[int] | None" = None,
                 killed_after_grace: bool = False, orphans_killed: int = 0) -> None:
        self.exit_code = exit_code
        self.signal = signal
        self.cpu_seconds = cpu_seconds
        self.peak_rss_bytes = peak_rss_bytes
        self.forwarded_signals = forwarded_signals if forwarded_signals is not None else []
        self.killed_after_grace = killed_after_grace
        self.orphans_killed = orphans_killed


def _write_all(fd: int, data: "bytes | memoryview") -> bool:
    """Blocking write of everything; False if the destination is gone (terminal hung up)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])  # a non-blocking fd someone else set: wait, not spin
            continue
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EPIPE, errno.EBADF, errno.ENXIO):
                return False
            raise
        view = view[n:]
    return True


def _poke(fd: int) -> None:
    """One byte on a wake-up pipe; a full pipe already says "look again"."""
    try:
        os.write(fd, b"x")
    except (BlockingIOError, OSError):
        pass


def _drain_pipe(fd: int) -> None:
    try:
        os.read(fd, 4096)
    except (BlockingIOError, OSError):
        pass


def _wake_pipe() -> "tuple[int, int]":
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def _block_signals_in_this_thread() -> None:
    """Signals go to the main thread only: it is the one waiting on the signal pipe.

    A copy thread interrupted by a signal would only restart its system call
    (PEP 475); blocking them here saves those wake-ups.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGWINCH, signal.SIGCHLD, *FORWARDED_SIGNALS))


class _CopyThread:
    """A thread from `_thread`, with just start / join / is_alive.

    `threading` costs ~2-3 ms of start-up to import and the loop needs none
    of its extras; the threads are daemonic by nature (wrapagent leaves
    with os._exit once the session is saved).
    """

    def __init__(self, target: "Callable[[], None]") -> None:
        self._target = target
        self._running = _thread.allocate_lock()
        self._started = False

    def start(self) -> None:
        self._running.acquire()
        self._started = True
        try:
            _thread.start_new_thread(self._run, ())
        except BaseException:
            self._running.release()
            raise

    def _run(self) -> None:
        try:
            self._target()  # catches everything itself
        finally:
            self._running.release()

    def join(self, timeout: float) -> bool:
        """True if the thread has ended (or never started) within `timeout` seconds."""
        if not self._started:
            return True
        if self._running.acquire(timeout=timeout):
            self._running.release()
            return True
        return False

    def is_alive(self) -> bool:
        return self._started and self._running.locked()


_CLOSED, _DRAINED, _MORE, _IDLE = 0, 1, 2, 3
"""What `_Loop.read_master` saw: the master is gone, it has nothing more now, it may have more,
or it had nothing at all (the wait that came before was a poke, not output)."""


class _Loop:
    """State of one proxy run; `run()` below is the public entry.

    Three threads, each sleeping in one blocking wait of its own:
    - the output thread copies master -> user (reads into one reused buffer,
      repeated while the PTY hands out full chunks, then one write);
    - the input thread copies user -> interceptor -> master, and is the only
      writer of the master, so bytes reach the child in the order queued;
    - the main thread handles signals (forwarding, SIGWINCH, SIGCHLD and
      reaping), the interceptor's deadlines and wake fd, and the kill grace.
    So the copy itself pays no per-pass bookkeeping: with an interceptor in
    its steady state, an output chunk costs one `time.monotonic()` and one
    attribute store. Threads wake each other through pipes (`_poke`), never
    by timers: an idle session makes no wake-ups at all.

    A key typed with no interceptor costs each copy thread one wait, one
    read and one write, and a few bytecodes between them (`copy_keys`, the
    fast branch of `_output_thread`): the Python run between the system
    calls, not the calls, was what a key cost over a minimal loop
    (bench/keycost.py). The wait before each read stays: it is what lets a
    thread be stopped without taking a key or a byte it must not.

    `lock` serialises every call into the interceptor and every change of
    `pending` (bytes queued for the child); it is never held across I/O.
    """

    def __init__(self, pid: int, master: int, stdin_fd: int, stdout_fd: int,
                 interceptor: "Interceptor | None",
                 on_output: "Callable[[bytes], None] | None",
                 kill_grace: float) -> None:
        self.pid = pid
        self.master = master
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.interceptor = interceptor
        self.on_output = on_output
        self.kill_grace = kill_grace
        self.lock = _thread.allocate_lock()
        self.pending = bytearray()
        self.stdin_open = True
        self.stdout_ok = True
        self.master_open = True
        self.stop_input = False
        self.stop_output = False
        self.status: int | None = None
        self.rusage: object | None = None
        self.reaped_at: float | None = None
        self.kill_deadline: float | None = None
        self.result_signals: list[int] = []
        self.killed = False
        self.error: BaseException | None = None
        self.buf = bytearray(READ_SIZE)
        self.mv = memoryview(self.buf)
        self.whole = (self.mv,)  # readv's argument for a first read, built once
        # What the main thread sleeps on; a copy thread that moves either pokes it.
        self.main_deadline: float | None = None
        self.main_wake: int | None = None
        self.main_r, self.main_w = _wake_pipe()
        self.in_r, self.in_w = _wake_pipe()
        self.out_r, self.out_w = _wake_pipe()
        self.threads = [_CopyThread(self._output_thread), _CopyThread(self._input_thread)]

    def threads_alive(self) -> bool:
        return any(thread.is_alive() for thread in self.threads)

    def close(self) -> None:
        """Close the wake-up pipes, unless a copy thread outlived `stop()`.

        A thread stuck in a write to a frozen terminal would otherwise find
        its fd numbers reused by the next open(): leaking six fds is the
        lesser harm, at exit.
        """
        if self.threads_alive():
            return
        for fd in (self.main_r, self.main_w, self.in_r, self.in_w, self.out_r, self.out_w):
            os.close(fd)

    # -- output: master -> user ------------------------------------------------

    def _output_thread(self) -> None:
        try:
            _block_signals_in_this_thread()
            waiter = portable.Waiter()
            waiter.watch((self.master, self.out_r))
            ready_fd = waiter.ready_fd
            while True:
                seen = self.read_master()
                if seen == _DRAINED and self.reaped_at is None:
                    # The child runs: one wait, then a read, per key. A poke
                    # instead of output is seen by the read (_IDLE).
                    ready_fd()
                    if self.stop_output:
                        break
                    continue
                if seen == _CLOSED:
                    break
                if seen == _MORE:
                    continue
                if not self._wait_master(waiter):  # poked, or draining after the reap
                    break
        except BaseException as exc:  # re-raised by the main thread
            self.error = exc
        finally:
            self.master_open = False
            _poke(self.main_w)
            _poke(self.in_w)

    def _wait_master(self, waiter: "portable.Waiter") -> bool:
        """Sleep until the master is readable; False when output must stop.

        Once the child was reaped, stop after DRAIN_QUIET_SECS of quiet or
        DRAIN_MAX_SECS in all (a leftover holding the terminal).
        """
        while True:
            timeout = None
            if self.reaped_at is not None:
                left = self.reaped_at + DRAIN_MAX_SECS - time.monotonic()
                if left <= 0:
                    return False
                timeout = min(DRAIN_QUIET_SECS, left)
            readable, _ = waiter.wait(timeout)
            if self.stop_output:
                return False
            if self.master in readable:
                return True
            if not readable:
                return False  # quiet since the reap (the only case with a timeout)
            _drain_pipe(self.out_r)  # poked: the child was reaped; wait again with a timeout

    def read_master(self) -> int:
        """Copy what the child wrote to the user; returns _CLOSED, _DRAINED, _MORE or _IDLE.

        Reads go into one reused buffer (no allocation per read) and are
        repeated while the PTY hands out full chunks, then written at once:
        fewer passes through Python per byte (bench/ptybench.py). A short
        first read (a key's echo) takes the shortest way: one readv into the
        whole buffer, one write.
        """
        try:
            got = os.readv(self.master, self.whole)
        except BlockingIOError:
            return _IDLE
        except OSError as exc:
            # Linux reports the departed child (all slave fds closed) as
            # EIO rather than as end of file.
            if exc.errno != errno.EIO:
                raise
            return _CLOSED
        if not got:
            return _CLOSED
        seen = _DRAINED
        if got >= PTY_CHUNK:
            got, seen = self._read_more(got)
        mv = self.mv
        if self.stdout_ok:
            view = mv[:got]
            try:
                n = os.write(self.stdout_fd, view)
            except OSError:  # _write_all below waits, or tells a gone terminal
                n = 0
            if n != got:
                self.stdout_ok = _write_all(self.stdout_fd, view[n:])
        icpt = self.interceptor
        if icpt is not None:
            if icpt.watch_output:
                self._interceptor_output(icpt, bytes(mv[:got]))
            else:
                icpt.last_output = time.monotonic()  # the steady state: nothing more
        if self.on_output is not None:
            self.on_output(bytes(mv[:got]))
        if self.reaped_at is not None and time.monotonic() - self.reaped_at >= DRAIN_MAX_SECS:
            return _CLOSED  # a leftover that keeps writing
        return seen

    def _read_more(self, got: int) -> "tuple[int, int]":
        """After a full first chunk: keep reading behind it while the PTY hands out full chunks.

        Returns (bytes in the buffer, what was seen: _CLOSED, _DRAINED or _MORE).
        """
        mv = self.mv
        while got < READ_SIZE:
            try:
                n = os.readv(self.master, (mv[got:],))
            except BlockingIOError:
                return got, _DRAINED
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                return got, _CLOSED
            if n == 0:
                return got, _CLOSED
            got += n
            if n < PTY_CHUNK:
                return got, _DRAINED
        return got, _MORE

    def _interceptor_output(self, icpt: "Interceptor", data: bytes) -> None:
        with self.lock:
            if self.interceptor is not icpt:
                return
            now = time.monotonic()
            icpt.on_output(data, now)
            self._after_call(icpt, now, "output")

    # -- input: user -> interceptor -> master -------------------------------------

    def _input_thread(self) -> None:
        try:
            _block_signals_in_this_thread()
            waiter = portable.Waiter()
            in_r, stdin_fd, master = self.in_r, self.stdin_fd, self.master
            while not self.stop_input:
                if not self.pending and self.stdin_open and self.master_open:
                    self.copy_keys(waiter)  # until a poke, a queue, or the end of stdin
                pending = self.pending
                waiter.watch((in_r, stdin_fd) if self.stdin_open and len(pending) < MAX_PENDING_INPUT
                             else (in_r,),
                             (master,) if pending and self.master_open else ())
                readable, writable = waiter.wait(None)
                if self.in_r in readable:
                    _drain_pipe(self.in_r)
                if self.stop_input:
                    break  # keys typed from now on belong to whoever reads the terminal next
                if writable or (self.pending and self.in_r in readable):
                    self.flush_input()
                if self.stdin_fd in readable:
                    self.read_stdin()
        except BaseException as exc:
            self.error = exc
            _poke(self.main_w)

    def copy_keys(self, waiter: "portable.Waiter") -> None:
        """The keystroke path, while nothing is queued: one wait, one read, one write per key.

        Returns, leaving the wake-up pipe undrained for the general loop
        above, as soon as anything else happens: a poke (stop, SIGHUP, the
        master closed, bytes queued by another thread), the end of stdin, or
        bytes queued here (a write the child did not take whole, keys the
        interceptor holds back): the general loop waits for the master to
        become writable. With an interceptor attached (a full session's
        steady state) each read goes through `take_keys`, under the lock;
        once it is dropped it never comes back and only this thread touches
        `pending`, so a key costs no lock.
        """
        stdin_fd, master = self.stdin_fd, self.master
        waiter.watch((self.in_r, stdin_fd))
        ready_fd, read, write = waiter.ready_fd, os.read, os.write
        while True:
            fd = ready_fd()
            if self.stop_input or fd != stdin_fd:
                return  # keys typed after the stop stay unread
            try:
                data = read(stdin_fd, STDIN_READ_SIZE)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.stdin_open = False  # the user's terminal is gone (hang-up) or stdin closed
                return
            if self.interceptor is not None:
                self.take_keys(data)
                if self.pending:
                    return
                continue
            try:
                n = write(master, data)
            except BlockingIOError:
                n = 0
            except OSError as exc:
                if exc.errno not in (errno.EIO, errno.EBADF):
                    raise
                continue  # the child is gone; the output thread sees EIO and pokes
            if n != len(data):
                with self.lock:
                    self.pending[0:0] = data[n:]
                return

    def read_stdin(self) -> None:
        try:
            data = os.read(self.stdin_fd, STDIN_READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            # The user's terminal is gone (hang-up) or stdin closed.
            self.stdin_open = False
            return
        self.take_keys(data)

    def take_keys(self, data: bytes) -> None:
        """What the user typed: through the interceptor (under the lock), then to the child or the queue."""
        if self.interceptor is None and not self.pending:
            # The keystroke path. Once the interceptor is dropped (it never
            # comes back) only this thread touches `pending`: no lock.
            self._send(data)
            return
        with self.lock:
            icpt = self.interceptor
            if icpt is None:
                self.pending += data
                direct = False
            else:
                now = time.monotonic()
                data = icpt.on_input(data, now) + icpt.poll(now)  # poll's bytes follow
                # Nothing queued: write at once, before the bookkeeping below
                # (the key's latency). Bytes queued later by other threads
                # are behind these: this thread is the master's only writer.
                direct = not self.pending
                if not direct:
                    self.pending += data
        if not direct:
            self.flush_input()
        elif data:
            self._send(data)
        if icpt is not None:
            with self.lock:
                if self.interceptor is icpt:
                    self._after_effects(icpt, "input")

    def _send(self, data: bytes) -> None:
        """Write `data` to the child now; what it does not take goes first in the queue."""
        try:
            n = os.write(self.master, data)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF):
                raise
            return  # the child is gone
        if n < len(data):
            with self.lock:
                self.pending[0:0] = data[n:]

    def flush_input(self) -> None:
        """Write what is queued for the child, as much as it takes now (the master is non-blocking)."""
        with self.lock:
            chunk = bytes(self.pending[:READ_SIZE])
        if not chunk:
            return
        try:
            n = os.write(self.master, chunk)
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

    # -- the interceptor (always under `lock`) --------------------------------------

    def _after_call(self, icpt: "Interceptor", now: float, caller: str) -> None:
        """After a call into the interceptor: take what is due, drop it when done, wake who must act.

        `caller` is the thread ("output" or "main"; the input thread does the
        same in `read_stdin`, writing first). Bytes due go to `pending` and
        the input thread, the master's only writer, is poked to send them.
        """
        due = icpt.poll(now)
        if due:
            self.pending += due
            if caller != "input":
                _poke(self.in_w)
        self._after_effects(icpt, caller)

    def _after_effects(self, icpt: "Interceptor", caller: str) -> None:
        """Drop a done interceptor; wake the main thread if its deadline or wake fd moved.

        A call from a copy thread may have set an earlier deadline or a new
        wake fd than the main thread sleeps on (both are re-read under the
        lock before every sleep, so comparing here is race-free).
        """
        if icpt.done:
            self.interceptor = None
            if caller != "main":
                _poke(self.main_w)
            return
        if caller != "main":
            deadline, wake = icpt.deadline(), icpt.wake_fd()
            if wake != self.main_wake or (deadline is not None and (
                    self.main_deadline is None or deadline < self.main_deadline)):
                _poke(self.main_w)

    def _main_poll(self, now: float) -> None:
        with self.lock:
            icpt = self.interceptor
            if icpt is not None:
                self._after_call(icpt, now, "main")

    # -- signals and the child ----------------------------------------------------------

    def handle_signals(self, signals: "list[int]") -> None:
        for sig in signals:
            if sig == signal.SIGWINCH:
                terminal.copy_winsize(self.stdin_fd, self.master)
                with self.lock:
                    resize = getattr(self.interceptor, "on_resize", None)
                    size = terminal.get_winsize(self.stdin_fd) if resize is not None else None
                    if resize is not None and size:
                        resize(size[0], size[1])  # its screen emulator redraws at the new size too
            elif sig == signal.SIGCHLD:
                self.try_reap()
            elif sig in FORWARDED_SIGNALS:
                self.forward(sig)

    def forward(self, sig: int) -> None:
        """Pass a signal sent to wrapagent on to the child's process group, then wait for it."""
        self.result_signals.append(sig)
        if self.status is None:
            _killpg(self.pid, sig)
            if self.kill_deadline is None:
                self.kill_deadline = time.monotonic() + self.kill_grace
        if sig == signal.SIGHUP:
            # The user's terminal is gone: nothing more to read or show.
            self.stdin_open = False
            self.stdout_ok = False
            _poke(self.in_w)

    def try_reap(self) -> None:
        if self.status is not None:
            return
        try:
            pid, status, rusage = os.wait4(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status, rusage = self.pid, 0, None
        if pid == self.pid:
            self.status = status
            self.rusage = rusage
            self.reaped_at = time.monotonic()
            # The child is gone: keys typed from now on are not its. The output
            # thread drains the master with the DRAIN_* limits from here on.
            self.stop_input = True
            _poke(self.in_w)
            _poke(self.out_w)

    # -- the main thread -------------------------------------------------------------

    def timeout(self, now: float) -> "float | None":
        """Seconds until the main thread must act without any event, or None (sleep until one)."""
        deadlines = [d for d in (self.main_deadline, None if self.status is not None else self.kill_deadline)
                     if d is not None]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now)

    def _plan_wait(self, waiter: "portable.Waiter", sigfd: int) -> None:
        """Read the interceptor's deadline and wake fd (under the lock: it is a call) and watch them."""
        with self.lock:
            icpt = self.interceptor
            if icpt is None:
                self.main_deadline = self.main_wake = None
            else:
                self.main_deadline, self.main_wake = icpt.deadline(), icpt.wake_fd()
        fds = [sigfd, self.main_r]
        if self.main_wake is not None:
            fds.append(self.main_wake)
        waiter.watch(fds)

    def run(self, sigpipe: "SignalPipe", after_start: "Callable[[], None] | None" = None) -> None:
        """Start the copy threads; handle signals, deadlines and the child until all is done.

        `after_start` runs on this thread once the copy threads run: work that
        need not precede the tool (a session's record) overlaps its start-up.
        Signals that come meanwhile wait on the pipe.
        """
        for thread in self.threads:
            thread.start()
        self.copy_whole_size()
        if after_start is not None:
            _while_copying(after_start)
        waiter = portable.Waiter()
        sigfd = sigpipe.rfd
        while self.master_open or self.status is None:
            self._plan_wait(waiter, sigfd)
            readable, _ = waiter.wait(self.timeout(time.monotonic()))
            if self.error is not None:
                raise self.error
            if sigfd in readable:
                self.handle_signals(sigpipe.read())
            if self.main_r in readable:
                _drain_pipe(self.main_r)
            now = time.monotonic()
            if self.interceptor is not None and (
                    (self.main_wake is not None and self.main_wake in readable)
                    or (self.main_deadline is not None and now >= self.main_deadline)):
                self._main_poll(now)
            if self.status is None and not self.master_open:
                # EIO came first: the child closed its terminal; wait for it
                # to exit (SIGCHLD wakes us), still forwarding signals.
                self.try_reap()
            if self.status is None and self.kill_deadline is not None and now >= self.kill_deadline:
                _killpg(self.pid, signal.SIGKILL)
                self.killed = True
                self.kill_deadline = None
        if self.error is not None:
            raise self.error

    def copy_whole_size(self) -> None:
        """Give the child the user's terminal size with its pixels (`spawn` set rows and cols).

        Once the copy threads run: it loads `fcntl`, which the tool's first
        output need not wait for. A resize since the start was queued on the
        signal pipe and is copied again when handled.
        """
        size = terminal.get_winsize(self.stdin_fd) or terminal.get_winsize(self.stdout_fd)
        if size and size[0] and size[1]:
            terminal.set_winsize(self.master, size)

    def stop(self) -> None:
        """Stop both copy threads and wait for them (also on the exception path)."""
        self.stop_input = self.stop_output = True
        _poke(self.in_w)
        _poke(self.out_w)
        for thread in self.threads:
            thread.join(timeout=2.0)


def _while_copying(work: "Callable[[], None]") -> None:
    """Run `work` with a short GIL switch interval (0.5 ms instead of 5).

    `work` is Python code (imports, JSON) that holds the interpreter lock;
    a copy thread woken by the tool's first bytes would otherwise wait up to
    the default 5 ms interval for it before it can copy them.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SETUP_SWITCH_INTERVAL))
    try:
        work()
    finally:
        sys.setswitchinterval(old)


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _terminate(pid: int, grace: float) -> "tuple[int, object, bool]":
    """SIGTERM the child's group, SIGKILL after `grace`; reap. Returns (status, rusage, killed)."""
    _killpg(pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while True:
        try:
            wpid, status, rusage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            return 0, None, False
        if wpid == pid:
            return status, rusage, False
        if time.monotonic() >= end:
            break
        time.sleep(0.02)  # only on this error path; the loop proper never polls
    _killpg(pid, signal.SIGKILL)
    _, status, rusage = os.wait4(pid, 0)
    return status, rusage, True


def session_leftovers(sid: int) -> "list[int]":
    """Processes still in the child's session (it was the session leader); see `portable`."""
    return portable.session_leftovers(sid)


def reap_leftovers(sid: int, grace: float = ORPHAN_GRACE_SECS) -> int:
    """Terminate what is left of the child's session so wrapagent leaves no orphans."""
    pids = session_leftovers(sid)
    if not pids:
        return 0
    for pid in pids:
        _kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        pids = [p for p in pids if portable.alive(p)]
        if not pids:
            return 0
        time.sleep(0.02)
    for pid in pids:
        _kill(pid, signal.SIGKILL)
    return len(pids)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: "Sequence[str]", *, env: "Mapping[str, str]", cwd: "str | None" = None,
        stdin_fd: int = 0, stdout_fd: int = 1,
        interceptor: "Interceptor | None" = None,
        on_output: "Callable[[bytes], None] | None" = None,
        on_spawn: "Callable[[int], None] | None" = None,
        kill_grace: float = KILL_GRACE_SECS) -> "ProxyResult":
    """Run `argv` on a new PTY, proxying the terminal on `stdin_fd`/`stdout_fd`.

    `spawn.start` + `proxy`: callers on the launch path call the two
    themselves, so the tool starts before this module is imported.
    Raises ToolNotFound / ToolNotExecutable before touching the terminal.
    """
    child = start(argv, env=env, cwd=cwd, stdin_fd=stdin_fd, stdout_fd=stdout_fd)
    return proxy(child, stdin_fd=stdin_fd, stdout_fd=stdout_fd, interceptor=interceptor,
                 on_output=on_output, on_spawn=on_spawn, kill_grace=kill_grace)


def proxy(child: "Child", *, stdin_fd: int = 0, stdout_fd: int = 1,
          interceptor: "Interceptor | None" = None,
          on_output: "Callable[[bytes], None] | None" = None,
          on_spawn: "Callable[[int], None] | None" = None,
          after_start: "Callable[[], None] | None" = None,
          kill_grace: float = KILL_GRACE_SECS) -> "ProxyResult":
    """Proxy the terminal for a child `spawn.start` started, until it is gone; then clean up.

    Must run in the main thread (signal handlers). `on_output` and the
    interceptor's output calls happen in the output thread; all interceptor
    calls are serialised (see `Interceptor`). `after_start` runs in the main
    thread while the copy threads already run (see `_Loop.run`); if it
    raises, the child is terminated like on any error. Closes the child's
    signal pipe.
    """
    child.check_exec()  # raises, all cleaned up, if the tool could not be exec'd
    pid, master, sigpipe = child.pid, child.master, child.signals
    try:
        loop = _Loop(pid, master, stdin_fd, stdout_fd, interceptor, on_output, kill_grace)
    except BaseException:
        _terminate(pid, kill_grace)
        os.close(master)
        sigpipe.close()
        raise
    try:
        if on_spawn is not None:
            on_spawn(pid)
        portable.prepare_sweep()
        os.set_blocking(master, False)
        with terminal.raw_mode(stdin_fd):
            try:
                loop.run(sigpipe, after_start)
            finally:
                # Before the terminal is restored: no copy thread may read
                # a key or write a byte once the user's shell is back.
                loop.stop()
    finally:
        if loop.status is None:
            # An exception in the loop (or in on_spawn): don't leave the
            # child behind. SIGTERM first, as for a forwarded signal, but
            # never wait forever: a child that ignores SIGTERM used to hang
            # wrapagent here in a blocking wait4.
            loop.status, loop.rusage, loop.killed = _terminate(pid, kill_grace)
        if not loop.threads_alive():
            os.close(master)  # (see _Loop.close)
        loop.close()
        try:
            # In the finally too: an exception must not orphan the child's
            # background jobs either.
            orphans = reap_leftovers(pid)
        finally:
            sigpipe.close()
    exit_code, sig = status_to_exit_code(loop.status)
    ru = loop.rusage
    cpu = (ru.ru_utime + ru.ru_stime) if ru is not None else 0.0  # type: ignore[attr-defined]
    rss = (ru.ru_maxrss * 1024) if ru is not None else 0  # type: ignore[attr-defined]
    return ProxyResult(exit_code=exit_code, signal=sig, cpu_seconds=cpu, peak_rss_bytes=rss,
                       forwarded_signals=loop.result_signals, killed_after_grace=loop.killed,
                       orphans_killed=orphans)
