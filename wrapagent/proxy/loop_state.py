"""What the proxy's three threads share: the fds, a few flags, the wake-up pipes, and small helpers.

The proxy (`pty_loop.proxy`) runs three threads, each in a file of its own:
- `output_thread`: the child's output -> the user's terminal;
- `input_thread`: the user's keys -> the interceptor -> the child, through
  `to_child`, the one place that decides the order in which bytes reach the child;
- `supervisor` (the main thread): signals, reaping, the kill grace, the
  interceptor's deadlines and wake fd, and the drain after the child exited.

Threads wake each other through pipes (`poke`), never by timers: an idle
session makes no wake-ups at all. Each flag below has one writer (named);
the others only read it, and look again after every wake-up.
"""

import _thread
import errno
import os

try:  # the C module: `signal` imports `enum` for its IntEnums (~8 ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent.proxy.spawn import FORWARDED_SIGNALS

if TYPE_CHECKING:
    from typing import Callable


class LoopState:
    """One proxy run's shared state; see the module docstring for who writes what."""

    def __init__(self, pid: int, master: int, stdin_fd: int, stdout_fd: int) -> None:
        self.pid = pid
        self.master = master
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.stdin_open = True
        """Input thread (end of stdin) and supervisor (SIGHUP): no more keys to read."""
        self.stdout_ok = True
        """Output thread (the terminal is gone) and supervisor (SIGHUP): nothing more to show."""
        self.master_open = True
        """Output thread: false once it has stopped reading the master (EIO, drained, stopped)."""
        self.stop_input = False
        """Supervisor: the child was reaped (or the proxy stops): read no more keys."""
        self.stop_output = False
        """Supervisor: the proxy stops: copy no more output."""
        self.reaped_at: "float | None" = None
        """Supervisor: monotonic time the child was reaped; the output thread drains from then on."""
        self.drain_seen = False
        """Output thread: it has seen the reap (its reads no longer block)."""
        self.woken = False
        """Supervisor: it wrote a NUL to the terminal side to end a read asleep (`output_thread.wake`)."""
        self.first_output = False
        """Output thread: the tool's first output was copied (the supervisor's `after_start` may run)."""
        self.paused = False
        """Supervisor (job control): the terminal is the shell's; the input thread reads no key."""
        self.out_gate = _thread.allocate_lock()
        """Held by the output thread while it writes a chunk, by the supervisor while the terminal is
        the shell's (`job_control`): no byte of the tool's reaches the shell's screen."""
        self.error: "BaseException | None" = None
        """A copy thread's exception, re-raised by the supervisor."""
        self.main_r, self.main_w = wake_pipe()
        self.in_r, self.in_w = wake_pipe()
        self.out_r, self.out_w = wake_pipe()

    def close_pipes(self) -> None:
        for fd in (self.main_r, self.main_w, self.in_r, self.in_w, self.out_r, self.out_w):
            os.close(fd)


def poke(fd: int) -> None:
    """One byte on a wake-up pipe; a full pipe already says "look again"."""
    try:
        os.write(fd, b"x")
    except (BlockingIOError, OSError):
        pass


def drain_pipe(fd: int) -> None:
    try:
        os.read(fd, 4096)
    except (BlockingIOError, OSError):
        pass


def wake_pipe() -> "tuple[int, int]":
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def block_signals_in_this_thread() -> None:
    """Signals go to the main thread only: it is the one waiting on the signal pipe.

    A copy thread interrupted by a signal would only restart its system call
    (PEP 475); blocking them here saves those wake-ups.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGWINCH, signal.SIGCHLD, *FORWARDED_SIGNALS))


def write_all(fd: int, data: "bytes | memoryview") -> bool:
    """Blocking write of everything; False if the destination is gone (terminal hung up)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            import select  # only here: not loaded before the tool's first byte

            select.select([], [fd], [])  # a non-blocking fd someone else set: wait, not spin
            continue
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EPIPE, errno.EBADF, errno.ENXIO):
                return False
            raise
        view = view[n:]
    return True


def killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class CopyThread:
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
