"""Run a helper program in its own process group, with a deadline, and kill it cleanly.

Every program wrapagent starts on pipes (git, hooks, guards, `TOOL --version`,
a CLI's transcript export) goes through here, so there is one answer to "what
if it hangs, or leaves children behind":

* it starts in a new session, so it is the leader of its own process group:
  no controlling terminal to prompt on, none of the user's Ctrl-C, and a
  child it starts (git's filters, a node launcher's native binary, a hook's
  background job) is in the same group;
* `run` gives it a stdin (bytes, or /dev/null), captures stdout and stderr
  (stdout optionally capped), and past the deadline stops the group;
* `pump` is `run`'s loop for a child started with `start`, for callers that
  stream what it writes (a hook's output goes to the log line by line), keep
  only a head of it, or must notice a background job holding its pipes;
* `stop_group` is the one kill: SIGTERM to the group and a grace period for
  it to go (none: straight to SIGKILL), then SIGKILL, the leader reaped, and
  a bounded wait until no process of the group is running any more.

The proxy's handling of the tool itself (wrapagent/proxy/) is not here: the
tool has the terminal, and its signals follow the user's. Nor is `doctor
--probe`'s run of the tool: it starts it on a pseudo-terminal with the
proxy's own spawn and answers its terminal queries as it reads; it signals
the tool's group through `signal_group`.
"""

from __future__ import annotations

import os
import signal

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    import subprocess
    from typing import Callable, Mapping, Sequence

GONE_WAIT_SECS = 2.0
"""After SIGKILL and reaping the leader, how long to wait for the rest of the group to be gone."""


class Finished:
    """What a finished (or stopped) run left: exit code, stdout, stderr, and whether stdout was cut."""

    __slots__ = ("argv", "pid", "code", "stdout", "stderr", "truncated")

    def __init__(self, argv: list[str], pid: int, code: int | None, stdout: bytes, stderr: bytes,
                 truncated: bool = False) -> None:
        self.argv = argv
        self.pid = pid  # also the process group's id
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.truncated = truncated


class ChildTimeout(TimeoutError):
    """The deadline passed; the group was stopped. `partial` holds what it had written."""

    def __init__(self, message: str, partial: Finished) -> None:
        super().__init__(message)
        self.partial = partial


def start(argv: Sequence[str], *, cwd: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
          stdin: bool = False, stdout: bool = True, stderr: bool | str = True) -> subprocess.Popen:
    """Start `argv` as the leader of a new session (its own process group).

    `stdin`: a pipe (True) or /dev/null; `stdout`: a pipe (True) or inherited;
    `stderr`: a pipe (True), inherited (False) or "stdout" (the same pipe as
    stdout: one stream, in the order written). Raises OSError when it cannot
    start (FileNotFoundError: no such program).
    """
    import subprocess

    with EmptySignalMask():
        return subprocess.Popen(list(argv), cwd=None if cwd is None else str(cwd),
                                env=None if env is None else dict(env), start_new_session=True,
                                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                stdout=subprocess.PIPE if stdout else None,
                                stderr=subprocess.STDOUT if stderr == "stdout" else subprocess.PIPE if stderr else None)


MAIN_THREAD_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGWINCH,
                       signal.SIGCHLD, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
"""The signals wrapagent's main thread handles (the proxy's loop, the session's clean-up)."""


def leave_signals_to_the_main_thread() -> None:
    """Block MAIN_THREAD_SIGNALS in the calling thread (a helper: hooks, guards, a version lookup).

    The kernel gives a signal sent to the process to any thread that does not block it. One
    taken by a helper thread only sets Python's flag: a main thread asleep in a system call
    (`wait4`, a hook's deadline) slept on, and a `kill -INT` of wrapagent never reached the tool.
    What a helper starts still gets an empty mask (`EmptySignalMask` in `start`).
    """
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, MAIN_THREAD_SIGNALS)


class EmptySignalMask:
    """The calling thread's signal mask emptied while a child is started: the child starts with
    none blocked (it can be stopped with TERM, and so can what it starts), whichever thread
    starts it. Helper threads block the main thread's signals (`leave_signals_to_the_main_thread`)
    and the proxy's copy threads block them too; a process inherits the mask of the thread
    that starts it."""

    def __enter__(self) -> None:
        self._old = signal.pthread_sigmask(signal.SIG_SETMASK, ()) if hasattr(signal, "pthread_sigmask") else None

    def __exit__(self, *exc: object) -> None:
        if self._old:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old)


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the process group `pgid`; False when it no longer exists (or is not ours)."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count)."""
    from wrapagent import portable

    return signal_group(pgid, 0) and portable.group_alive(pgid)


def stop_group(proc: subprocess.Popen, *, grace: float = 0.0, before_kill: Callable[[], None] | None = None) -> None:
    """Stop the group `proc` leads: SIGTERM and up to `grace` s to exit (0: none), SIGKILL, reap.

    `before_kill()` runs just before the SIGKILL (the group may be stopped or
    gone by then). Returns once the leader is reaped and no process of the
    group runs any more, or GONE_WAIT_SECS later (a process stuck in the
    kernel cannot be waited for forever). Safe to call on a reaped child.
    """
    import time

    pgid = proc.pid
    if proc.returncode is None and grace > 0 and signal_group(pgid, signal.SIGTERM):
        end = time.monotonic() + grace
        while group_alive(pgid) and time.monotonic() < end:
            time.sleep(0.01)
            proc.poll()
    if before_kill is not None:
        before_kill()
    if proc.returncode is None or group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
    _reap(proc)
    end = time.monotonic() + GONE_WAIT_SECS
    while group_alive(pgid) and time.monotonic() < end:
        time.sleep(0.01)


def _reap(proc: subprocess.Popen) -> None:
    import subprocess

    try:
        proc.wait(timeout=GONE_WAIT_SECS)
    except subprocess.TimeoutExpired:  # unkillable (stuck in the kernel): leave it to init
        pass


def run(argv: Sequence[str], *, timeout: float | None, input: bytes | None = None,
        cwd: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
        limit: int | None = None, grace: float = 0.0,
        before_kill: Callable[[subprocess.Popen], None] | None = None) -> Finished:
    """Run `argv` to the end in its own group: stdin `input` (None: /dev/null), output captured.

    `limit`: keep at most this many bytes of stdout; past it the group is
    stopped and the result says `truncated` (exit code None). Past `timeout`
    seconds the group is stopped (`stop_group` with `grace`; `before_kill(proc)`
    just before its SIGKILL) and ChildTimeout raised. Any other exception
    (KeyboardInterrupt) stops the group too. OSError: it could not start.
    """
    import time

    argv = list(argv)
    proc = start(argv, cwd=cwd, env=env, stdin=input is not None)
    deadline = None if timeout is None else time.monotonic() + timeout
    parts: dict[str, list[bytes]] = {STDOUT: [], STDERR: []}
    kept = 0

    def keep(stream: str, data: bytes) -> bool:
        nonlocal kept
        if stream == STDOUT and limit is not None:
            parts[stream].append(data[:limit - kept])
            kept += len(data)
            return kept > limit
        parts[stream].append(data)
        return False

    try:
        outcome = pump(proc, input, deadline, keep)
    except BaseException:
        stop_group(proc)
        raise
    out, err = b"".join(parts[STDOUT]), b"".join(parts[STDERR])
    if outcome in (TIMED_OUT, HELD_OPEN):
        stop_group(proc, grace=grace, before_kill=None if before_kill is None else lambda: before_kill(proc))
        raise ChildTimeout(f"`{' '.join(argv)}` did not finish within {timeout:.1f} s",
                           Finished(argv, proc.pid, None, out, err))
    if outcome == STOPPED:
        stop_group(proc)
        return Finished(argv, proc.pid, None, out, err, truncated=True)
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
    try:
        code = proc.wait(timeout=remaining)
    except Exception:
        stop_group(proc, grace=grace)
        raise ChildTimeout(f"`{' '.join(argv)}` did not exit within {timeout:.1f} s",
                           Finished(argv, proc.pid, None, out, err)) from None
    return Finished(argv, proc.pid, code, out, err)


STDOUT, STDERR = "stdout", "stderr"
"""The names `pump` gives its `on_data` for each output (a merged stderr comes as stdout)."""
ENDED, STOPPED, TIMED_OUT, HELD_OPEN = "ended", "stopped", "timed out", "held open"
"""What `pump` saw: both outputs ended; `on_data` asked to stop; the deadline passed with the
leader running; the leader had exited but something of its group held an output open."""


def pump(proc: subprocess.Popen, input: bytes | None, deadline: float | None,
         on_data: Callable[[str, bytes], bool], *, pipe_grace: float | None = None) -> str:
    """Write `input` to a started child, hand what it writes to `on_data(stream, bytes)` until both
    outputs end; returns one of ENDED, STOPPED, TIMED_OUT, HELD_OPEN. Closes the child's pipes.

    `on_data` returns True to stop reading (a cap reached). `pipe_grace`: once
    the leader has exited, how long its outputs may stay open (a background
    job holding them) before HELD_OPEN; None waits for them up to the
    deadline. The deadline passing after the leader exited is HELD_OPEN too.
    The caller stops the group when it wants it stopped (`stop_group`).

    A selector, not select.select (descriptors above 1023) nor threads
    (communicate's on some platforms): one loop, the deadline checked on every wake-up.
    """
    import selectors
    import time

    names = {proc.stdout.fileno(): STDOUT}  # type: ignore[union-attr]
    if proc.stderr is not None:
        names[proc.stderr.fileno()] = STDERR
    in_fd = proc.stdin.fileno() if proc.stdin is not None else None
    pending = memoryview(input or b"")
    exited_at: float | None = None
    selector = selectors.DefaultSelector()
    try:
        for fd in names:
            selector.register(fd, selectors.EVENT_READ)
        if in_fd is not None:
            if pending:
                os.set_blocking(in_fd, False)
                selector.register(in_fd, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()  # type: ignore[union-attr]
        while selector.get_map():
            now = time.monotonic()
            if pipe_grace is not None and exited_at is None and proc.poll() is not None:
                exited_at = now
            if deadline is not None and now >= deadline:
                return HELD_OPEN if proc.poll() is not None else TIMED_OUT
            if exited_at is not None and now - exited_at >= pipe_grace:  # type: ignore[operator]
                return HELD_OPEN
            wait = None if deadline is None else deadline - now
            if pipe_grace is not None:  # the leader's exit is looked for on every wake-up
                left = 0.05 if exited_at is None else pipe_grace - (now - exited_at)
                wait = left if wait is None else min(wait, left)
            for key, _ in selector.select(wait):
                if key.fd == in_fd:
                    pending = _write_some(proc, selector, pending)
                    continue
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fd)
                elif on_data(names[key.fd], data):
                    return STOPPED
    finally:
        selector.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
    return ENDED


def _write_some(proc: subprocess.Popen, selector, pending: memoryview) -> memoryview:
    """One non-blocking write of stdin; the pipe is closed when all is written or the reader left."""
    fd = proc.stdin.fileno()  # type: ignore[union-attr]
    try:
        pending = pending[os.write(fd, pending):]
    except BlockingIOError:
        return pending
    except (BrokenPipeError, OSError):
        pending = pending[len(pending):]
    if not pending:
        selector.unregister(fd)
        proc.stdin.close()  # type: ignore[union-attr]
    return pending
