"""The transparent PTY proxy: the child on a new pseudo-terminal, bytes copied both ways.

Shape taken from asciinema's recorder, with its weak spots fixed:
- the loop ends when the master reports EIO (every byte of a fast-exiting
  child is drained), never on "child exited" alone;
- signals become bytes on a pipe (`signal.set_wakeup_fd`) and are handled in
  the loop, so no work happens in a signal handler;
- keystrokes are queued and written to the non-blocking master, no sleeps;
- the window size is set before the child runs (ptyprocess does it in the
  child before exec) and copied again on every SIGWINCH;
- the child's exit status is kept: 0-255 as is, 128+N for signal N.

Everything the loop touches is a parameter (fds, the input interceptor, the
output observer), so tests can hand it PTY pairs they own.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent.proxy import terminal
from wrapagent.errors import ToolNotExecutable, ToolNotFound, WrapagentError

if TYPE_CHECKING:  # typing and dataclasses cost ~25 ms of start-up: annotations only
    from typing import Callable, Mapping, Protocol, Sequence

POLLIN, POLLOUT, POLLHUP, POLLERR = select.POLLIN, select.POLLOUT, select.POLLHUP, select.POLLERR

PTY_CHUNK = 4095
"""A PTY master hands out at most about this much per read; a shorter read means "drained"."""

READ_SIZE = 64 * 1024
"""16-64 KiB: bigger reads cost more in Python than they save (../shared/PERF.md)."""

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

DRAIN_MAX_SECS = 1.0
"""After the child was reaped, stop draining this long after it even if output keeps coming.

The child's own tail is bounded by the kernel's PTY buffer (tens of KiB),
read in milliseconds; output that keeps coming is a leftover process (a
server the agent started in the background, ignoring SIGHUP) writing to
the terminal, and used to keep wrapagent running forever after the tool
exited. Leftovers in the child's session are then terminated.
"""

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)


if TYPE_CHECKING:
    class Interceptor(Protocol):
        """Sees the user's input and the child's output until it says it is done.

        Used for first-message injection; when `done` is true the proxy stops
        calling it, so the steady state costs nothing.
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

        def deadline(self) -> float | None:
            """Monotonic time at which `poll` must run next, or None."""

        def wake_fd(self) -> int | None:
            """A readable fd that signals "call poll" (a background job finished)."""


class ProxyResult:
    """How the child ended, and what it cost (from wait4: the child and its waited-for descendants).

    A plain class, not a dataclass: `dataclasses` costs ~20 ms to import.
    """

    def __init__(self, exit_code: int, signal: int | None, cpu_seconds: float,
                 peak_rss_bytes: int, forwarded_signals: list[int] | None = None,
                 killed_after_grace: bool = False, orphans_killed: int = 0) -> None:
        self.exit_code = exit_code
        self.signal = signal
        self.cpu_seconds = cpu_seconds
        self.peak_rss_bytes = peak_rss_bytes
        self.forwarded_signals = forwarded_signals if forwarded_signals is not None else []
        self.killed_after_grace = killed_after_grace
        self.orphans_killed = orphans_killed


def status_to_exit_code(status: int) -> tuple[int, int | None]:
    """Shell convention: exit status as is, 128+N when killed by signal N."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return 128 + sig, sig
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    return 1, None


def exec_error(path: str, err: int | None) -> WrapagentError:
    """A failed exec as a shell reports it: 127 when a file is missing, 126 otherwise.

    ENOENT for a file that exists means its `#!` interpreter (or ELF loader)
    is missing; saying "No such file" about the tool itself would mislead.
    """
    if err == errno.ENOENT:
        if os.path.exists(path):
            return ToolNotFound(f"{path}: cannot execute: required file not found"
                                " (missing #! interpreter?)")
        return ToolNotFound(f"{path}: command not found")
    reason = os.strerror(err) if err else "exec failed"
    return ToolNotExecutable(f"{path}: cannot execute: {reason}")


def spawn(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None,
          size: tuple[int, int]) -> tuple[int, int]:
    """Start `argv` on a new PTY of `size` (rows, cols); returns (pid, master_fd).

    ptyprocess reports exec failures through a CLOEXEC pipe, so "not
    executable" surfaces here, in the parent, before the terminal goes raw.
    """
    from ptyprocess import PtyProcess

    try:
        proc = PtyProcess.spawn(list(argv), env=dict(env), cwd=cwd, dimensions=size,
                                preexec_fn=_default_signals)
    except FileNotFoundError:
        # ptyprocess's own PATH lookup found nothing executable.
        raise ToolNotFound(f"{argv[0]}: command not found") from None
    except OSError as exc:
        # exec failed in the child: a plain OSError carrying the errno.
        raise exec_error(argv[0], exc.errno) from None
    # We own the fd and the reaping from here on; make ptyprocess forget both
    # so its __del__ neither closes our fd nor sleeps `delayafterclose`.
    master = os.dup(proc.fd)
    proc.closed = True
    proc.terminated = True
    try:
        proc.fileobj.close()
    except OSError:
        pass
    return proc.pid, master


def _default_signals() -> None:
    """In the child before exec: undo Python's start-up SIG_IGN of SIGPIPE and SIGXFSZ.

    Ignored dispositions survive exec, and ptyprocess (unlike subprocess's
    restore_signals) does not reset them: the tool and every shell it ran
    would ignore SIGPIPE, so `yes | head -1` printed "Broken pipe" errors.
    Caught signals (our no-op handlers) are reset by exec itself.
    """
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


class _SignalPipe:
    """Signals as bytes on a pipe, read by the loop (asciinema's SignalFD)."""

    def __init__(self, signals: Sequence[int]) -> None:
        self.rfd, self.wfd = os.pipe()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        self._signals = signals
        self._old: dict[int, object] = {}
        self._old_wakeup = -1

    def __enter__(self) -> "_SignalPipe":
        self._old_wakeup = signal.set_wakeup_fd(self.wfd, warn_on_full_buffer=False)
        for sig in self._signals:
            self._old[sig] = signal.signal(sig, _noop_handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._old_wakeup)
        os.close(self.rfd)
        os.close(self.wfd)

    def read(self) -> list[int]:
        try:
            data = os.read(self.rfd, 1024)
        except BlockingIOError:
            return []
        return list(data)


def _noop_handler(signum: int, frame: object) -> None:
    """The wakeup fd carries the signal; the handler only has to exist."""


def _write_all(fd: int, data: bytes) -> bool:
    """Blocking write of everything; False if the destination is gone (terminal hung up)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EPIPE, errno.EBADF, errno.ENXIO):
                return False
            raise
        view = view[n:]
    return True


class _Loop:
    """State of one proxy run; `run()` below is the public entry."""

    def __init__(self, pid: int, master: int, stdin_fd: int, stdout_fd: int,
                 interceptor: Interceptor | None,
                 on_output: Callable[[bytes], None] | None,
                 kill_grace: float) -> None:
        self.pid = pid
        self.master = master
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.interceptor = interceptor
        self.on_output = on_output
        self.kill_grace = kill_grace
        self.pending = bytearray()
        self.stdin_open = True
        self.stdout_ok = True
        self.master_open = True
        self.status: int | None = None
        self.rusage: object | None = None
        self.reaped_at: float | None = None
        self.kill_deadline: float | None = None
        self.result_signals: list[int] = []
        self.killed = False
        self.buf = bytearray(READ_SIZE)
        self.mv = memoryview(self.buf)

    # -- events -------------------------------------------------------------

    def read_master(self) -> None:
        """Copy the child's output to the user.

        Reads go into one reused buffer (no allocation per read) and are
        repeated while the PTY hands out full chunks, then written at once:
        fewer passes through the Python loop per byte (bench/ptybench.py).
        """
        mv = self.mv
        got = 0
        while got < READ_SIZE:
            try:
                n = os.readv(self.master, (mv[got:],))
            except BlockingIOError:
                break
            except OSError as exc:
                # Linux reports the departed child (all slave fds closed) as
                # EIO rather than as end of file.
                if exc.errno != errno.EIO:
                    raise
                self.master_open = False
                break
            if n == 0:
                self.master_open = False
                break
            got += n
            if n < PTY_CHUNK:
                break
        if not got:
            return
        if self.stdout_ok:
            self.stdout_ok = _write_all(self.stdout_fd, mv[:got])
        icpt = self.interceptor
        if icpt is not None and not icpt.watch_output:
            # The steady state (contract v2): one timestamp, no call, no copy.
            icpt.last_output = time.monotonic()
            icpt = None
        if self.on_output is None and icpt is None:
            return
        data = bytes(mv[:got])
        if self.on_output is not None:
            self.on_output(data)
        if icpt is not None:
            icpt.on_output(data, time.monotonic())
            self._after_interceptor()

    def read_stdin(self) -> None:
        try:
            data = os.read(self.stdin_fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            # The user's terminal is gone (hang-up) or stdin closed.
            self.stdin_open = False
            return
        icpt = self.interceptor
        if icpt is not None:
            data = icpt.on_input(data, time.monotonic())
            self._after_interceptor()
        if not data:
            return
        if not self.pending:
            # The keystroke path: straight to the child, queue only a remainder.
            try:
                n = os.write(self.master, data)
            except BlockingIOError:
                n = 0
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):
                    return
                raise
            if n < len(data):
                self.pending += data[n:]
            return
        self.pending += data
        self.flush_input()

    def _after_interceptor(self) -> None:
        icpt = self.interceptor
        if icpt is None:
            return
        due = icpt.poll(time.monotonic())
        if due:
            self.pending += due
            self.flush_input()
        if icpt.done:
            self.interceptor = None

    def flush_input(self) -> None:
        if not self.pending or not self.master_open:
            return
        try:
            n = os.write(self.master, self.pending[:READ_SIZE])
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EBADF):
                self.pending.clear()
                return
            raise
        del self.pending[:n]

    def handle_signals(self, signals: list[int]) -> None:
        for sig in signals:
            if sig == signal.SIGWINCH:
                terminal.copy_winsize(self.stdin_fd, self.master)
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

    def try_reap(self) -> None:
        if self.status is not None:
            return
        try:
            pid, status, rusage = os.wait4(self.pid, os.WNOHANG)
        except ChildProcessError:
            self.status = 0
            self.reaped_at = time.monotonic()
            return
        if pid == self.pid:
            self.status = status
            self.rusage = rusage
            self.reaped_at = time.monotonic()

    # -- the loop ------------------------------------------------------------

    def timeout(self, now: float) -> float | None:
        deadlines = []
        if self.interceptor is not None:
            d = self.interceptor.deadline()
            if d is not None:
                deadlines.append(d)
        if self.kill_deadline is not None and self.status is None:
            deadlines.append(self.kill_deadline)
        if self.status is not None and self.master_open:
            deadlines.append(now + DRAIN_QUIET_SECS)
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now)

    def _register(self, poller, registered: dict[int, int], wake: int | None, sigfd: int) -> dict[int, int]:
        want = {sigfd: POLLIN}
        if self.master_open:
            want[self.master] = POLLIN | (POLLOUT if self.pending else 0)
            if self.stdin_open and len(self.pending) < MAX_PENDING_INPUT:
                want[self.stdin_fd] = POLLIN
        if wake is not None:
            want[wake] = POLLIN
        for fd in registered.keys() - want.keys():
            poller.unregister(fd)
        for fd, mask in want.items():
            if registered.get(fd) != mask:
                poller.register(fd, mask)  # register() also modifies
        return want

    def run(self, sigpipe: _SignalPipe) -> None:
        """poll() with fds registered once, re-registered only when the state changes.

        Rebuilding select()'s lists on every pass was measurable CPU per byte
        and keystroke latency (bench/ptybench.py), so the pass is kept lean.
        """
        poller = select.poll()
        registered: dict[int, int] = {}
        last_key: tuple | None = None
        sigfd = sigpipe.rfd
        master, stdin_fd = self.master, self.stdin_fd
        while self.master_open or self.status is None:
            icpt = self.interceptor
            wake = icpt.wake_fd() if icpt is not None else None
            key = (self.master_open, bool(self.pending), self.stdin_open,
                   len(self.pending) < MAX_PENDING_INPUT, wake)
            if key != last_key:
                registered = self._register(poller, registered, wake, sigfd)
                last_key = key
            if icpt is None and self.kill_deadline is None and self.status is None:
                timeout = None  # the steady state: sleep until something happens
            else:
                t = self.timeout(time.monotonic())
                timeout = None if t is None else t * 1000.0
            events = poller.poll(timeout)
            master_ev = 0
            stdin_ready = sig_ready = wake_ready = False
            for fd, ev in events:
                if fd == master:
                    master_ev = ev
                elif fd == stdin_fd:
                    stdin_ready = True
                elif fd == sigfd:
                    sig_ready = True
                else:
                    wake_ready = True
            if sig_ready:
                self.handle_signals(sigpipe.read())
            if master_ev & POLLOUT:
                self.flush_input()
            if master_ev & (POLLIN | POLLHUP | POLLERR) and self.master_open:
                self.read_master()
            if stdin_ready and self.master_open:
                self.read_stdin()
            if self.interceptor is not None and (wake_ready or not events):
                self._after_interceptor()
            if self.status is None and not self.master_open:
                # EIO came first: the child closed its terminal; wait for it
                # to exit (SIGCHLD wakes us), still forwarding signals.
                self.try_reap()
            if self.kill_deadline is not None or self.status is not None:
                self.check_deadlines(bool(master_ev))

    def check_deadlines(self, master_ready: bool) -> None:
        now = time.monotonic()
        if self.status is None and self.kill_deadline is not None and now >= self.kill_deadline:
            _killpg(self.pid, signal.SIGKILL)
            self.killed = True
            self.kill_deadline = None
        if self.status is not None and self.master_open and self.reaped_at is not None:
            since = now - self.reaped_at
            if (since >= DRAIN_QUIET_SECS and not master_ready) or since >= DRAIN_MAX_SECS:
                self.master_open = False


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _terminate(pid: int, grace: float) -> tuple[int, object, bool]:
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


def session_leftovers(sid: int) -> list[int]:
    """Processes still in the child's session (it was the session leader).

    A process the child moved to its own session (a daemon it meant to
    leave behind) is not listed: that was left on purpose.
    """
    found = []
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in (me, sid):
            continue
        try:
            if os.getsid(pid) == sid:
                found.append(pid)
        except OSError:
            continue
    return found


def reap_leftovers(sid: int, grace: float = ORPHAN_GRACE_SECS) -> int:
    """Terminate what is left of the child's session so wrapagent leaves no orphans."""
    pids = session_leftovers(sid)
    if not pids:
        return 0
    for pid in pids:
        _kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        pids = [p for p in pids if _alive(p)]
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


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # field 3 is the state; Z = zombie (exited, waiting for its parent)
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def run(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
        stdin_fd: int = 0, stdout_fd: int = 1,
        interceptor: Interceptor | None = None,
        on_output: Callable[[bytes], None] | None = None,
        on_spawn: Callable[[int], None] | None = None,
        kill_grace: float = KILL_GRACE_SECS) -> ProxyResult:
    """Run `argv` on a new PTY, proxying the terminal on `stdin_fd`/`stdout_fd`.

    Raises ToolNotFound / ToolNotExecutable before touching the terminal.
    """
    with _SignalPipe((signal.SIGWINCH, signal.SIGCHLD, *FORWARDED_SIGNALS)) as sigpipe:
        # Size read after the SIGWINCH handler is in place: a resize in between
        # is then seen by the loop instead of lost (SIGWINCH's default is ignore).
        size = terminal.get_winsize(stdin_fd) or terminal.get_winsize(stdout_fd)
        rows, cols = (size[0], size[1]) if size and size[0] and size[1] else (24, 80)
        pid, master = spawn(argv, env=env, cwd=cwd, size=(rows, cols))
        loop = _Loop(pid, master, stdin_fd, stdout_fd, interceptor, on_output, kill_grace)
        try:
            if size:
                terminal.set_winsize(master, size)  # pixels too
            if on_spawn is not None:
                on_spawn(pid)
            os.set_blocking(master, False)
            with terminal.raw_mode(stdin_fd):
                loop.run(sigpipe)
        finally:
            if loop.status is None:
                # An exception in the loop (or in on_spawn): don't leave the
                # child behind. SIGTERM first, as for a forwarded signal, but
                # never wait forever: a child that ignores SIGTERM used to hang
                # wrapagent here in a blocking wait4.
                loop.status, loop.rusage, loop.killed = _terminate(pid, kill_grace)
            os.close(master)
            # In the finally too: an exception must not orphan the child's
            # background jobs either.
            orphans = reap_leftovers(pid)
    exit_code, sig = status_to_exit_code(loop.status)
    ru = loop.rusage
    cpu = (ru.ru_utime + ru.ru_stime) if ru is not None else 0.0  # type: ignore[attr-defined]
    rss = (ru.ru_maxrss * 1024) if ru is not None else 0  # type: ignore[attr-defined]
    return ProxyResult(exit_code=exit_code, signal=sig, cpu_seconds=cpu, peak_rss_bytes=rss,
                       forwarded_signals=loop.result_signals, killed_after_grace=loop.killed,
                       orphans_killed=orphans)
