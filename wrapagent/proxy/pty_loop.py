"""The transparent PTY proxy: the child on a new pseudo-terminal, bytes copied both ways.

`proxy()` takes over a child `spawn.start` started; `run()` does both. Three
threads, each in a file of its own (read `loop_state` first):
- `output_thread`: the child's output -> the user's terminal;
- `input_thread`: the user's keys -> the interceptor -> the child, every byte
  through `to_child`, which holds the ordering invariant and the interceptor
  contract;
- `supervisor` (this thread): signals, reaping, kill grace, deadlines, drain.
A single loop that did all of it paid per pass for checks the copy never
needs (bench/ptybench.py: 0.7x the throughput of `script`, 1.3x its CPU per
byte). This file is what comes after: the terminal restored, the child
reaped even on an exception, leftovers in its session terminated.

Everything the loop touches is a parameter (fds, the input interceptor, the
output observer), so tests can hand it PTY pairs they own.
"""

import os
import time

try:  # the C module: `signal` imports `enum` for its IntEnums (~8 ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

from wrapagent.proxy import terminal
from wrapagent.proxy.loop_state import killpg as _killpg
from wrapagent.proxy.loop_state import write_all
from wrapagent.proxy.spawn import Child, start, status_to_exit_code
from wrapagent.proxy.supervisor import Supervisor

if TYPE_CHECKING:  # typing and dataclasses cost ~25 ms of start-up: annotations only
    from typing import Callable, Mapping, Sequence

    from wrapagent.proxy.output_start import StartedOutput
    from wrapagent.proxy.to_child import Interceptor

KILL_GRACE_SECS = 5.0
"""After forwarding SIGTERM/SIGHUP/SIGINT, how long the child gets before SIGKILL.

claude records a "strike" when SIGKILLed and turns its renderer off after two:
it must get the graceful signal first and time to act on it.
"""

ORPHAN_GRACE_SECS = 0.5
"""After the child exits, how long leftovers in its session get between SIGTERM and SIGKILL."""


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


def _undo_modes(loop: "Supervisor", stdout_fd: int) -> None:
    """A child ended by a signal (the kill grace's SIGKILL, a crash) never turned its modes off:
    the alternate screen, mouse reporting, bracketed paste… would stay on in the user's shell."""
    if loop.status is None or not os.WIFSIGNALED(loop.status) or not loop.st.stdout_ok:
        return
    reset = loop.output.modes.reset_sequence()
    if reset:
        write_all(stdout_fd, reset)


def _terminate(pid: int, grace: float, pgid: "int | None" = None) -> "tuple[int, object, bool]":
    """SIGTERM the tool's group `pgid`, SIGKILL after `grace`; reap its leader `pid`.
    Returns (status, rusage, killed)."""
    pgid = pid if pgid is None else pgid
    _killpg(pgid, signal.SIGTERM)
    _killpg(pgid, signal.SIGCONT)  # a stopped tool, too
    _kill(pid, signal.SIGCONT)
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
    _killpg(pgid, signal.SIGKILL)
    _, status, rusage = os.wait4(pid, 0)
    return status, rusage, True


def session_leftovers(sid: int) -> "list[int]":
    """Processes still in the child's session (it was the session leader); see `portable`."""
    from wrapagent import portable

    return portable.session_leftovers(sid)


def reap_leftovers(sid: int, grace: float = ORPHAN_GRACE_SECS) -> int:
    """Terminate what is left of the child's session so wrapagent leaves no orphans."""
    pids = session_leftovers(sid)
    if not pids:
        return 0
    from wrapagent import portable

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
        after_start: "Callable[[], None] | None" = None,
        kill_grace: float = KILL_GRACE_SECS) -> "ProxyResult":
    """Run `argv` on a new PTY, proxying the terminal on `stdin_fd`/`stdout_fd`.

    `spawn.start` + `proxy`: callers on the launch path call the two
    themselves, so the tool starts before this module is imported.
    Raises ToolNotFound / ToolNotExecutable before touching the terminal.
    """
    child = start(argv, env=env, cwd=cwd, stdin_fd=stdin_fd, stdout_fd=stdout_fd)
    return proxy(child, stdin_fd=stdin_fd, stdout_fd=stdout_fd, interceptor=interceptor,
                 on_output=on_output, on_spawn=on_spawn, after_start=after_start, kill_grace=kill_grace)


def proxy(child: "Child", *, stdin_fd: int = 0, stdout_fd: int = 1,
          interceptor: "Interceptor | None" = None,
          on_output: "Callable[[bytes], None] | None" = None,
          on_spawn: "Callable[[int], None] | None" = None,
          after_start: "Callable[[], None] | None" = None,
          kill_grace: float = KILL_GRACE_SECS,
          started: "StartedOutput | None" = None) -> "ProxyResult":
    """Proxy the terminal for a child `spawn.start` started, until it is gone; then clean up.

    `started`: its output thread already runs, the terminal already raw
    (`output_start`, on the launch path); `on_output` and `interceptor` were
    given to it then.

    Must run in the main thread (signal handlers). `on_output` and the
    interceptor's output calls happen in the output thread (an `on_output`
    with a `resized(rows, cols)` method is also told each resize, from the
    main thread: a recorder's `r` events); all interceptor
    calls are serialised (see `Interceptor`). `after_start` runs in the main
    thread once the tool's first output was copied (see `Supervisor.run`); if it
    raises, the child is terminated like on any error. Closes the child's
    signal pipe, and leaves SIGHUP ignored: the tool has ended, and what the
    caller does next (save the record, commit) must outlive a hang-up.
    """
    child.check_exec()  # raises, all cleaned up, if the tool could not be exec'd
    pid, master, sigpipe = child.pid, child.master, child.signals
    tool = child.tool_pid if child.tool_pid is not None else pid
    try:
        loop = Supervisor(pid, master, stdin_fd, stdout_fd, interceptor, on_output, kill_grace, tool,
                          started=started)
    except BaseException:
        _terminate(pid, kill_grace, tool)
        if started is not None:
            started.abandon()
        os.close(master)
        sigpipe.close()
        raise
    try:
        if on_spawn is not None:
            on_spawn(tool)
        # (the master stays blocking: see to_child._write)
        with (started.raw if started is not None else terminal.raw_mode(stdin_fd)) as saved:
            loop.saved = saved  # job control gives the terminal back with these
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
            loop.status, loop.rusage, loop.killed = _terminate(pid, kill_grace, tool)
        if not loop.threads_alive():
            _undo_modes(loop, stdout_fd)
            os.close(master)  # (see Supervisor.close)
        loop.close()
        try:
            # In the finally too: an exception must not orphan the child's
            # background jobs either.
            orphans = reap_leftovers(pid)
        finally:
            sigpipe.close(hangup_ignored=True)  # the tool has ended: a hang-up must not stop the save
    exit_code, sig = status_to_exit_code(loop.status)
    ru = loop.rusage
    cpu = (ru.ru_utime + ru.ru_stime) if ru is not None else 0.0  # type: ignore[attr-defined]
    rss = (ru.ru_maxrss * 1024) if ru is not None else 0  # type: ignore[attr-defined]
    return ProxyResult(exit_code=exit_code, signal=sig, cpu_seconds=cpu, peak_rss_bytes=rss,
                       forwarded_signals=loop.result_signals, killed_after_grace=loop.killed,
                       orphans_killed=orphans)
