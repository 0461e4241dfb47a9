"""The tool's session leader on its pseudo-terminal: what a shell is to a job, and no more.

Job control needs the tool in a process group that is not orphaned: a TUI
that suspends itself (vim, claude and codex on Ctrl-Z: modes off, then
SIGTSTP to themselves) is stopped by the kernel only if some process of
its session, outside its group, is its parent. Were the tool the session's
leader (login_tty, as `script` does), its group would be orphaned and the
kernel would discard the signal: the user stays in the TUI.

So wrapagent forks a leader (no exec: a copy of the launch path, which has
loaded a few small modules) that takes the PTY as its controlling terminal,
forks the tool into a group of its own, makes that group the PTY's
foreground one (Ctrl-C reaches the tool), and waits for it with WUNTRACED:
- the tool stopped: the leader stops itself with SIGSTOP, which wrapagent
  sees as its child stopping (`Supervisor.try_reap`); when wrapagent
  continues it (SIGCONT), it gives the PTY back to the tool's group and
  continues it, as a shell's `fg` does;
- the tool ended: the leader ends the same way (the exit status, or the
  same signal, without a core file), so wrapagent's wait sees the tool's
  status and its resources (the leader waited for the tool).

Between fork and exec only plain system calls run (other threads of
wrapagent may hold locks at the fork). The start is reported on a pipe
(close-on-exec): `P<tool pid>;` from the leader, `E<errno>;` from a tool
whose exec failed; end of file once the tool exec'd.
"""

import os

try:  # the C module: `signal` imports `enum` for its IntEnums (~8 ms of start-up)
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Mapping, Sequence

RESET_IN_LEADER = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGWINCH", "SIGCHLD", "SIGTSTP", "SIGTTIN",
                   "SIGTTOU", "SIGCONT", "SIGPIPE", "SIGXFSZ")
"""Signals whose disposition the leader puts back to the default: wrapagent's Python handlers (the
signal pipe's, SIGINT's KeyboardInterrupt) and Python's start-up SIG_IGNs must reach neither the
leader nor the tool (a hang-up of the PTY must end the leader)."""


def start(slave: int, argv: "Sequence[str]", env: "Mapping[str, str]", cwd: "str | None") -> "tuple[int, int]":
    """Fork the leader on the PTY whose terminal side is `slave`; (leader pid, read end of its report).

    Read the report with `read_report` (it ends once the tool exec'd).
    The caller closes `slave` (the leader keeps its own copy).
    """
    report_r, report_w = os.pipe()  # both close-on-exec
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the leader; ends in os._exit
            _lead(slave, report_w, argv, env, cwd)
    except BaseException:
        os.close(report_r)
        raise
    finally:
        os.close(report_w)
    return pid, report_r


def read_report(report_r: int) -> "tuple[int | None, int | None, bool]":
    """(tool pid, exec errno, whether the exec failed) once the report pipe ended; closes it."""
    data = b""
    try:
        while True:
            chunk = os.read(report_r, 256)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(report_r)
    tool_pid = err = None
    failed = False
    for item in data.split(b";"):
        if item[:1] == b"P" and item[1:].isdigit():
            tool_pid = int(item[1:])
        elif item[:1] == b"E":
            failed = True
            err = int(item[1:]) if item[1:].isdigit() else None
    if tool_pid is None and data == b"":
        failed = True  # the leader died before it could start the tool
    return tool_pid, err, failed


def _lead(slave: int, report_w: int, argv: "Sequence[str]", env: "Mapping[str, str]",
          cwd: "str | None") -> None:  # pragma: no cover - runs in the forked leader
    """The leader: its own session with the PTY, the tool forked into a foreground group, then waits."""
    try:
        signal.set_wakeup_fd(-1)  # a signal here must not write into wrapagent's signal pipe
        for name in RESET_IN_LEADER:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        _login_tty(slave)
        _close_others(report_w)
        tool = _spawn_tool(report_w, argv, env, cwd)
        if tool is None:
            tool = os.fork()
            if tool == 0:
                _exec_tool(report_w, argv, env, cwd)
            try:
                os.setpgid(tool, tool)  # also done by the tool: whichever runs first
            except OSError:
                pass  # it exec'd already (EACCES), having done it itself
        elif tool < 0:
            os._exit(127)  # the exec failed: reported
        os.write(report_w, b"P%d;" % tool)
        os.close(report_w)
        _wait_for(tool)
    except BaseException:
        pass
    os._exit(127)


def _spawn_tool(report_w: int, argv: "Sequence[str]", env: "Mapping[str, str]",
                cwd: "str | None") -> "int | None":  # pragma: no cover - runs in the forked leader
    """The tool by `posix_spawn` in a group of its own, made the foreground one; its pid, -1 when the
    exec failed (reported), None when posix_spawn cannot start it (a cwd, a name to find on PATH).

    No second copy of wrapagent's memory and no Python before the exec: the
    spawn returns once the tool exec'd. The foreground is given right
    after; a tool that touched its terminal before that was stopped by the
    kernel (SIGTTOU/SIGTTIN) and is continued by `_wait_for`.
    """
    spawn = getattr(os, "posix_spawn", None)
    if spawn is None or cwd is not None or "/" not in argv[0]:
        return None
    try:
        tool = spawn(argv[0], list(argv), dict(env), setpgroup=0,
                     setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP))
    except NotImplementedError:
        return None
    except OSError as exc:
        os.write(report_w, b"E%d;" % (exc.errno or 0))
        return -1
    _foreground(0, tool)
    return tool


def _exec_tool(report_w: int, argv: "Sequence[str]", env: "Mapping[str, str]",
               cwd: "str | None") -> None:  # pragma: no cover - runs in the forked tool
    """In the tool's process: a group of its own, the PTY's foreground group, then exec."""
    code = 0
    try:
        os.setpgid(0, 0)
        _foreground(0, os.getpid())
        if cwd is not None:
            os.chdir(cwd)
        os.execvpe(argv[0], list(argv), dict(env))
    except OSError as exc:
        code = exc.errno or 0
    except BaseException:
        code = 0
    try:
        os.write(report_w, b"E%d;" % code)
    finally:
        os._exit(127)


def _foreground(fd: int, pgid: int) -> None:
    """Make `pgid` the PTY's foreground group from a process that is not in it (SIGTTOU blocked meanwhile,
    as shells do: the kernel then allows it instead of stopping the caller)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTTOU,))
    try:
        os.tcsetpgrp(fd, pgid)
    except OSError:
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _wait_for(tool: int) -> None:  # pragma: no cover - runs in the forked leader
    """Mirror the tool: stop when it stops (until continued), end as it ends."""
    while True:
        try:
            _, status = os.waitpid(tool, os.WUNTRACED)
        except ChildProcessError:
            os._exit(1)
        if os.WIFSTOPPED(status) and os.WSTOPSIG(status) in (signal.SIGTTOU, signal.SIGTTIN):
            # Its terminal touched before `_spawn_tool` gave it the foreground: not the user's stop
            # (a user's stop is SIGTSTP or SIGSTOP). The foreground may have been given between the
            # stop and this wait, so it is not asked whether the tool is in the foreground now.
            _foreground(0, tool)
            _continue(tool)
            continue
        if os.WIFSTOPPED(status):
            os.kill(os.getpid(), signal.SIGSTOP)  # wrapagent sees its child stop
            # Continued by wrapagent (the user's `fg`): the PTY back to the tool, the tool continued.
            _foreground(0, tool)
            _continue(tool)
            continue
        if os.WIFSIGNALED(status):
            _die_of(os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _continue(tool: int) -> None:
    try:
        os.killpg(tool, signal.SIGCONT)
    except OSError:
        pass


def _die_of(sig: int) -> None:  # pragma: no cover - runs in the forked leader
    """End by the signal that ended the tool (its exit status says so), without a core file of the leader."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, OSError, ValueError):
        pass
    for step in (lambda: signal.signal(sig, signal.SIG_DFL),  # (not for SIGKILL: EINVAL)
                 lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, (sig,)),
                 lambda: os.kill(os.getpid(), sig)):
        try:
            step()
        except (OSError, ValueError):
            pass
    os._exit(128 + sig)


def _close_others(keep: int) -> None:
    """Close every fd but 0-2 and `keep`: the leader lives as long as the tool and must not hold
    wrapagent's (the PTY's master among them: the tool would never see the hang-up)."""
    try:
        top = os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        top = 4096
    top = top if 0 < top <= 1 << 20 else 1 << 20
    os.closerange(3, keep)
    os.closerange(keep + 1, top)


def _login_tty(slave: int) -> None:
    """Own session, `slave` as its controlling terminal and as fds 0-2 (login_tty(3))."""
    login_tty = getattr(os, "login_tty", None)  # Python 3.11+
    if login_tty is not None:
        login_tty(slave)
        return
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)  # inheritable
    if slave > 2:
        os.close(slave)
