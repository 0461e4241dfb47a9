"""Non-terminal mode: pipes, `| jq`, CI. The tool gets the stdio it would have had.

No PTY is created. The only thing wrapagent may put between the user and the
tool is the injected prefix on a piped stdin (`echo … | wrapagent claude -p`):
then the child's stdin is a pipe, and `stdin_feeder(write_fd)` runs in a
thread (it writes the blocks, then the prompt verbatim; wrapagent closes the
pipe when it returns).
"""

from __future__ import annotations

import os
import signal
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from resource import struct_rusage
    from typing import Callable, Mapping, Sequence

from wrapagent.proxy.pty_loop import ProxyResult
from wrapagent.proxy.spawn import FORWARDED_SIGNALS, exec_error, status_to_exit_code



def _feed(wfd: int, feeder: Callable[[int], None]) -> None:
    try:
        feeder(wfd)
    except OSError:
        pass  # the tool stopped reading its stdin: that is its business
    finally:
        os.close(wfd)


def _typed_signal_reached(pid: int) -> bool:
    """Did a SIGINT/SIGQUIT we got most likely come from the keyboard, and so reach `pid` too?

    A key typed at the terminal (^C, ^\\) signals its whole foreground
    process group. In this mode the tool shares wrapagent's group, so when
    that group is in the foreground the tool got the key's signal already:
    forwarding it would deliver it twice (and claude and codex read a second
    ^C as "exit"). Without siginfo a `kill -INT` aimed at wrapagent alone
    while it is in the foreground looks the same and is not forwarded; from
    a supervisor without a terminal (the usual sender) it is.
    """
    try:
        if os.getpgid(pid) != os.getpgrp():
            return False
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def _noop(signum: int, frame: object) -> None:
    """SIGCHLD's handler: its only job is the byte the C handler writes to the wakeup pipe."""


def _wait_woken(pid: int, wake_r: int) -> "tuple[int, struct_rusage]":
    """`wait4(pid)` that every signal ends, whichever thread the kernel gave it to.

    A blocking `wait4` in the main thread is ended by a signal only when the kernel delivers
    it to that thread. Hook and version-lookup threads ran with an empty signal mask, and a
    `kill -INT` of wrapagent taken by one of them only set Python's flag: the main thread
    slept on in `wait4`, the handler that forwards it never ran, and the tool never got the
    signal (1 run in ~180 under load). They now block the main thread's signals
    (`child_process.leave_signals_to_the_main_thread`) except for the moment they start a
    child, with an empty mask for it; and here the main thread sleeps in `poll` (macOS:
    `select`) on the signal wakeup pipe (`signal.set_wakeup_fd`: written by whichever thread
    takes the signal, SIGCHLD included), so the Python handlers run as soon as it wakes.
    """
    from wrapagent import portable

    waiter = portable.Waiter()
    waiter.watch((wake_r,))
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage
        waiter.wait(None)
        try:
            while os.read(wake_r, 512):
                pass
        except BlockingIOError:
            pass


def run(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None,
        stdin_feeder: Callable[[int], None] | None = None,
        on_spawn: Callable[[int], None] | None = None) -> ProxyResult:
    """Run the tool with wrapagent's own stdio; forward signals; return its status."""
    import subprocess

    forwarded: list[int] = []
    pending: list[int] = []
    child: list[int] = []  # the tool's pid, once started

    def forward(signum: int, frame: object) -> None:
        if not child:
            pending.append(signum)  # delivered as soon as the tool exists
            return
        if signum in (signal.SIGINT, signal.SIGQUIT) and _typed_signal_reached(child[0]):
            return
        forwarded.append(signum)
        try:
            os.kill(child[0], signum)
        except ProcessLookupError:
            pass

    # Handlers before the tool starts: a SIGTERM between Popen and installing
    # them used to kill wrapagent and leave the tool running, unrecorded.
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    old = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    old[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, _noop)
    try:
        stdin_arg = None
        rfd = wfd = -1
        if stdin_feeder is not None:
            rfd, wfd = os.pipe()
            stdin_arg = rfd
        try:
            proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=stdin_arg,
                                    close_fds=True, restore_signals=True)
        except OSError as exc:
            if wfd >= 0:
                os.close(wfd)
            raise exec_error(argv[0], exc.errno) from None
        finally:
            if rfd >= 0:
                os.close(rfd)
        child.append(proc.pid)
        for signum in pending:
            forward(signum, None)
        if on_spawn is not None:
            on_spawn(proc.pid)
        if stdin_feeder is not None:
            import threading  # ~2-3 ms; full mode imports this module on its PTY path too

            threading.Thread(target=_feed, args=(wfd, stdin_feeder), daemon=True).start()
        status, ru = _wait_woken(proc.pid, wake_r)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(old_wakeup)
        os.close(wake_r)
        os.close(wake_w)
    proc.returncode = 0  # reaped by wait4; keep Popen from waiting again
    exit_code, sig = status_to_exit_code(status)
    return ProxyResult(exit_code=exit_code, signal=sig, cpu_seconds=ru.ru_utime + ru.ru_stime,
                       peak_rss_bytes=ru.ru_maxrss * 1024, forwarded_signals=forwarded)
