"""Starting the tool on a new pseudo-terminal: the first half of every proxied run.

Split from the copy loop (`pty_loop`) so that the child can start before the
rest of wrapagent is even imported: the launch path loads this module (a few
system modules, nothing that pulls `enum` or `re`), starts the tool, and
imports the loop while the tool's own exec runs on the other core. What the
user sees as wrapagent's start-up is what happens before `start()` returns.

Also here, because it must exist before the child does: the signal pipe
(a SIGINT, SIGTERM or SIGWINCH that arrives while the loop is still being
imported is kept, not lost, and handled by the loop once it runs).
"""

import errno
import os

try:  # the C module: `signal` itself imports `enum` (~8 ms of start-up) for its IntEnums
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal  # type: ignore[no-redef]

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings

import termios

if TYPE_CHECKING:
    from typing import Callable, Mapping, Sequence

    from wrapagent.errors import WrapagentError

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
"""Sent to wrapagent, passed on to the tool's process group."""


JOB_SIGNALS = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGCONT)
"""Job control of wrapagent itself (Ctrl-Z of the job, `kill -TSTP`, `bg`, `fg`): handled by the loop,
which gives the user's terminal back before it stops and takes it again when continued."""

LOOP_SIGNALS = (signal.SIGWINCH, signal.SIGCHLD, *FORWARDED_SIGNALS, *JOB_SIGNALS)
"""What the loop's main thread handles, through the signal pipe."""


def status_to_exit_code(status: int) -> "tuple[int, int | None]":
    """Shell convention: exit status as is, 128+N when killed by signal N."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return 128 + sig, sig
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    return 1, None


def exec_error(path: str, err: "int | None") -> "WrapagentError":
    """A failed exec as a shell reports it: 127 when a file is missing, 126 otherwise.

    ENOENT for a file that exists means its `#!` interpreter (or ELF loader)
    is missing; saying "No such file" about the tool itself would mislead.
    """
    from wrapagent.errors import ToolNotExecutable, ToolNotFound  # only on failure: not on every start

    if err == errno.ENOENT:
        if os.path.exists(path):
            return ToolNotFound(f"{path}: cannot execute: required file not found"
                                " (missing #! interpreter?)")
        return ToolNotFound(f"{path}: command not found")
    reason = os.strerror(err) if err else "exec failed"
    return ToolNotExecutable(f"{path}: cannot execute: {reason}")


class SignalPipe:
    """Signals as bytes on a pipe, read by the loop (asciinema's SignalFD).

    Installed before the child exists and kept until the loop is done;
    `close()` puts the old handlers back.
    """

    def __init__(self, signals: "Sequence[int]" = LOOP_SIGNALS) -> None:
        self.rfd, self.wfd = os.pipe()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        self._signals = signals
        self._old: dict[int, object] = {}
        self._old_wakeup = -1
        self._installed = False

    def install(self) -> "SignalPipe":
        self._old_wakeup = signal.set_wakeup_fd(self.wfd, warn_on_full_buffer=False)
        self._installed = True
        for sig in self._signals:
            if sig in JOB_SIGNALS and signal.getsignal(sig) == signal.SIG_IGN:
                continue  # ignored by whoever started wrapagent (no job control there): stays so
            self._old[sig] = signal.signal(sig, _noop_handler)
        return self

    def close(self, hangup_ignored: bool = False) -> None:
        """Put the old handlers back; with `hangup_ignored`, SIGHUP is ignored from here on instead.

        Once the tool has ended, wrapagent only saves its record and exits: a
        hang-up (terminals usually send more than one) must not kill it before
        that. SIGHUP goes straight from the pipe's handler to "ignored", with
        no default handler in between.
        """
        if self._installed:
            for sig, old in self._old.items():
                if hangup_ignored and sig == signal.SIGHUP:
                    old = signal.SIG_IGN
                signal.signal(sig, old)  # type: ignore[arg-type]
            signal.set_wakeup_fd(self._old_wakeup)
            self._installed = False
        for fd in (self.rfd, self.wfd):
            if fd >= 0:
                os.close(fd)
        self.rfd = self.wfd = -1

    def __enter__(self) -> "SignalPipe":
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self) -> "list[int]":
        try:
            data = os.read(self.rfd, 1024)
        except BlockingIOError:
            return []
        return list(data)


def _noop_handler(signum: int, frame: object) -> None:
    """The wakeup fd carries the signal; the handler only has to exist."""


class Child:
    """A tool started on a new PTY: what `pty_loop.proxy` needs to take over.

    Whether its exec succeeded is known only after `check_exec()`: the
    launch path imports the copy loop meanwhile, while the exec runs.
    """

    def __init__(self, pid: int, master: int, signals: "SignalPipe", argv0: str, err_r: int) -> None:
        self.pid = pid
        """The tool's session leader (`session_leader`): what wrapagent waits for; its status is the tool's."""
        self.tool_pid: "int | None" = None
        """The tool itself, leader of its process group (known after `check_exec`): signals go there."""
        self.master = master
        self.signals = signals
        self._argv0 = argv0
        self._err_r = err_r
        self.before_close: "Callable[[], None] | None" = None
        """Called when the exec failed, before the master is closed (an output thread already reading it
        stops first: `output_start`)."""

    def check_exec(self) -> None:
        """Wait until the exec is done; raise ToolNotFound / ToolNotExecutable (all cleaned up) if it failed."""
        if self._err_r < 0:
            return
        err_r, self._err_r = self._err_r, -1
        try:
            self.tool_pid = _check_exec(self.pid, self.master, err_r, self._argv0, self.before_close)
        except BaseException:
            self.signals.close()
            raise


def start(argv: "Sequence[str]", *, env: "Mapping[str, str]", cwd: "str | None" = None,
          stdin_fd: int = 0, stdout_fd: int = 1) -> "Child":
    """Install the signal pipe and start `argv` on a PTY of the user's terminal size.

    Returns at once after the fork; `Child.check_exec()` then raises
    ToolNotFound / ToolNotExecutable (signal handlers put back) if the exec
    failed. The user's terminal is not touched here.
    """
    signals = SignalPipe().install()
    try:
        # Size read after the SIGWINCH handler is in place: a resize in between
        # is then seen by the loop instead of lost (SIGWINCH's default is ignore).
        # The loop copies the whole size (pixels too) to the master once it runs.
        rows, cols = start_size(stdin_fd, stdout_fd)
        pid, master, err_r = _fork_exec(argv, env=env, cwd=cwd, size=(rows, cols))
    except BaseException:
        signals.close()
        raise
    return Child(pid, master, signals, argv[0], err_r)


DEFAULT_SIZE = (24, 80)


def usable_size(size: "tuple[int, ...] | None") -> "tuple[int, int] | None":
    """(rows, cols) if `size` is one a screen can have: a 0 means the terminal reports none."""
    if size and size[0] and size[1]:
        return size[0], size[1]
    return None


def start_size(stdin_fd: int = 0, stdout_fd: int = 1) -> "tuple[int, int]":
    """The size the tool starts with, and the one rule for every reader of it.

    The user's terminal's size, or 24x80 when it reports none or a 0 (serial
    consoles, some CI PTYs, `docker exec -t` before its first resize). The
    injector's screen reads the same (a 1x1 screen never shows a ready
    marker: the blocks were silently lost).
    """
    return usable_size(get_size(stdin_fd)) or usable_size(get_size(stdout_fd)) or DEFAULT_SIZE


def get_size(fd: int) -> "tuple[int, int] | None":
    """(rows, cols) of the terminal on `fd`, or None if it is not one.

    `termios.tcgetwinsize` where there is one (Python 3.11+), so that neither
    `fcntl` nor `proxy.terminal` (pixels, raw mode: the loop's side) is
    loaded before the tool starts.
    """
    getter = getattr(termios, "tcgetwinsize", None)
    if getter is None:
        from wrapagent.proxy import terminal

        whole = terminal.get_winsize(fd)
        return None if whole is None else (whole[0], whole[1])
    try:
        rows, cols = getter(fd)
    except (OSError, termios.error):
        return None
    return rows, cols


def set_size(fd: int, rows: int, cols: int) -> None:
    """Set rows and cols (pixels 0) on a PTY; the loop copies the whole size (`terminal.set_winsize`)."""
    setter = getattr(termios, "tcsetwinsize", None)
    if setter is None:
        from wrapagent.proxy import terminal

        terminal.set_winsize(fd, (rows, cols, 0, 0))
        return
    try:
        setter(fd, (rows, cols))
    except (OSError, termios.error):
        pass


def spawn(argv: "Sequence[str]", *, env: "Mapping[str, str]", cwd: "str | None",
          size: "tuple[int, int]") -> "tuple[int, int, int]":
    """Start `argv` on a new PTY of `size` (rows, cols); (leader pid, tool pid, master fd) once it exec'd.

    Our own start rather than ptyprocess: importing ptyprocess (shutil,
    lzma, …) cost ~20-30 ms of every start-up, more than the proxy. The
    size is set on the slave before the child exists, so the tool's first
    look at its terminal sees it. Exec failures surface here, in the
    parent, as "not found" / "not executable", before the terminal goes raw.
    """
    pid, master, err_r = _fork_exec(argv, env=env, cwd=cwd, size=size)
    tool_pid = _check_exec(pid, master, err_r, argv[0])
    return pid, tool_pid, master


def _fork_exec(argv: "Sequence[str]", *, env: "Mapping[str, str]", cwd: "str | None",
               size: "tuple[int, int]") -> "tuple[int, int, int]":
    """Start the tool under its session leader on a new PTY; (leader pid, master, the leader's report)."""
    from wrapagent.proxy import session_leader

    master, slave = os.openpty()  # both non-inheritable
    try:
        set_size(slave, size[0], size[1])
        pid, report_r = session_leader.start(slave, argv, env, cwd)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return pid, master, report_r


def _check_exec(pid: int, master: int, err_r: int, argv0: str,
                before_close: "Callable[[], None] | None" = None) -> int:
    """Read the leader's report (EOF: the tool exec'd); the tool's pid. On failure reap, close `master`, raise."""
    from wrapagent.proxy import session_leader

    tool_pid, err, failed = session_leader.read_report(err_r)
    if not failed and tool_pid is not None:
        return tool_pid
    if before_close is not None:
        before_close()
    os.close(master)
    os.waitpid(pid, 0)  # the leader _exits once the tool did
    if err == errno.ENOENT and "/" not in argv0:
        from wrapagent.errors import ToolNotFound

        raise ToolNotFound(f"{argv0}: command not found")
    raise exec_error(argv0, err)


def default_signals() -> None:
    """Before an exec: undo Python's start-up SIG_IGN of SIGPIPE and SIGXFSZ.

    Ignored dispositions survive exec (caught ones, like our no-op
    handlers, are reset by exec itself): the tool and every shell it ran
    would ignore SIGPIPE, so `yes | head -1` printed "Broken pipe" errors.
    """
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
