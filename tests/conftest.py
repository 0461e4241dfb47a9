"""Shared fixtures for every test.

- `isolated_home` (autouse): each test gets its own HOME and XDG_* dirs, so no
  test reads or writes the real ~/.config, ~/.local/state or ~/.local/share,
  and no WRAPAGENT_* variable of an outer session leaks in. The dirs live in a
  separate temporary folder, so `tmp_path` stays empty for the test itself.
- `run_wrapagent` (opt-in): starts wrapagent on a fresh outer PTY with pexpect,
  the way a user's terminal does, and cleans up whatever is left at teardown.
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
import time
from pathlib import Path
from typing import Callable

import pytest

HELPERS = Path(__file__).parent / "helpers"

_LEAKY_VARS = ("WRAPAGENT_DISABLE", "WRAPAGENT_DEPTH", "WRAPAGENT_SESSION_ID",
               "WRAPAGENT_SESSIONS_ROOT", "WRAPAGENT_ACTIVE_SHIMS")


_STARTS_PROGRAMS = ("pexpect", "run_wrapagent", "wrapagent_argv", "subprocess", "Popen", "spawn(",
                    "os.fork", "child_process", "gitcmd", "helper(", "os.system", "pty.",
                    "run_command(", "run_lifecycle(", "probe(")
"""Words in a test's code that mean it starts programs: a pseudo-terminal (pexpect, the demo
sessions), wrapagent itself, git, a helper script, a fork."""
_TESTS_DIR = Path(__file__).parent
_verdicts: dict[object, bool] = {}


def _code_starts_programs(func: object, depth: int = 3, scope: dict | None = None) -> bool:
    """`func`'s source names a way to start a program, or a tests/ function it calls does (depth-bounded).

    `scope`: where its names are looked up (a decorated test's wrapper, hypothesis's, has
    the decorator's globals): the test's module.
    """
    import ast
    import inspect

    func = inspect.unwrap(func)
    if func in _verdicts:
        return _verdicts[func]
    _verdicts[func] = False  # recursion guard
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return False
    verdict = any(word in source for word in _STARTS_PROGRAMS)
    if not verdict and depth > 0:
        names = set()
        try:
            tree = ast.parse(inspect.cleandoc("\n" + source) if source[:1].isspace() else source)
        except SyntaxError:
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Name):
                names.add(node.id)
        scope = scope if scope is not None else getattr(func, "__globals__", {})
        for name in names:
            called = scope.get(name)
            path = getattr(getattr(called, "__code__", None), "co_filename", "") or getattr(
                sys.modules.get(getattr(called, "__module__", "") or ""), "__file__", "") or ""
            if path and _TESTS_DIR in Path(path).parents and (inspect.isfunction(called) or inspect.isclass(called)):
                if _code_starts_programs(called, depth - 1):
                    verdict = True
                    break
    _verdicts[func] = verdict
    return verdict


def _starts_programs(item: pytest.Item) -> bool:
    """The test starts wrapagent or another program: the `spawns` tier, left out by --quick.

    Those are the tests that take seconds rather than milliseconds. Decided from the
    code, so a new test is placed without anyone listing it: the test function, the
    fixtures it uses and the tests/ functions and classes they name.
    """
    if "run_wrapagent" in getattr(item, "fixturenames", ()):
        return True
    module = getattr(item, "module", None)
    test = getattr(item, "function", None)
    if test is not None and _code_starts_programs(test, scope=vars(module) if module is not None else None):
        return True
    fixture_info = getattr(item, "_fixtureinfo", None)
    for defs in (fixture_info.name2fixturedefs.values() if fixture_info is not None else ()):
        if any(_TESTS_DIR in Path(inspect_file(d.func)).parents and _code_starts_programs(d.func) for d in defs):
            return True
    return False


def inspect_file(func: object) -> str:
    code = getattr(getattr(func, "__wrapped__", func), "__code__", None)
    return code.co_filename if code is not None else "/"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that start programs `spawns`, so `./run-tests --quick` (`-m "not spawns"`)
    leaves them out."""
    if "spawns" not in (config.getoption("markexpr", "") or ""):
        return  # the marks cost ~2 s of reading sources: only when a run selects by them
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents and _starts_programs(item):
            item.add_marker(pytest.mark.spawns)


def wrapagent_argv() -> list[str]:
    """How to start the installed wrapagent: its console script (as users do), else `python -m`.

    The console script is looked up next to the interpreter, not on PATH: a
    pyenv shim on PATH would add a bash + pyenv start-up to every test.
    """
    script = Path(sysconfig.get_path("scripts")) / "wrapagent"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "wrapagent"]


def agent_stand_in(folder: Path, body: str = "exit 0\n", name: str = "aider") -> Path:
    """An executable sh script named as a known agent TUI (aider), running `body`.

    `last` (sessions show/diff/undo/resume) means the newest session of an
    agent: a test whose session must be `last` runs this instead of `sh`.
    """
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def helper(name: str, *args: str) -> list[str]:
    """argv of a helper program from tests/helpers, run with this interpreter."""
    return [sys.executable, str(HELPERS / name), *args]


def default_signals() -> None:
    """preexec_fn: undo what Python did at start-up (SIGPIPE/SIGXFSZ ignored).

    A login shell starts programs with default dispositions; wrapagent must be
    tested from that state, or inherited SIG_IGN would hide its own mistakes.
    """
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


_SIGNALS = tuple(sig for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE,
                                  signal.SIGXFSZ, signal.SIGWINCH, signal.SIGCHLD, signal.SIGTTOU, signal.SIGTTIN))


@pytest.fixture(autouse=True)
def restored_signal_dispositions():
    """Each test leaves the test process's signal dispositions as it found them.

    Tests that run the copy loop in-process end with SIGHUP ignored, as wrapagent
    itself does once the tool has ended; inherited by every later wrapagent a test
    starts, that SIG_IGN would hide (or fake) what those tests check.
    """
    saved = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    yield
    for sig, handler in saved.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path_factory.mktemp("home")
    home = base / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    for var in _LEAKY_VARS:
        monkeypatch.delenv(var, raising=False)
    return base


def exit_code_of(child) -> int:
    """Shell-style exit code of a finished pexpect child: status, or 128+N for signal N."""
    if child.signalstatus is not None:
        return 128 + child.signalstatus
    return child.exitstatus


@pytest.fixture
def run_wrapagent() -> Callable:
    """`run_wrapagent(*args, env=None, cwd=None, dimensions=(24, 80), timeout=30)`.

    Starts `wrapagent ARGS…` as session leader of a new outer PTY (pexpect), in
    bytes mode, with default signal dispositions. Returns the pexpect child,
    with two extra methods:
    - `child.finish(timeout=30) -> int`: read to EOF, reap, return the
      shell-style exit code; the whole output is in `child.output`.
    - every child still alive at teardown is SIGKILLed.
    """
    import pexpect

    children: list = []

    def spawn(*args: str, env: dict | None = None, cwd: str | os.PathLike | None = None,
              dimensions: tuple[int, int] = (24, 80), timeout: float = 30,
              argv: list[str] | None = None):
        full = list(argv) if argv is not None else [*wrapagent_argv(), *args]
        child = pexpect.spawn(full[0], full[1:], env=dict(os.environ if env is None else env),
                              cwd=None if cwd is None else str(cwd), dimensions=dimensions,
                              timeout=timeout, maxread=65536, preexec_fn=default_signals)
        # pexpect sleeps 0.1 s in close() by default, even from __del__.
        child.delayafterclose = 0
        child.delaybeforesend = None  # no 50 ms nap before each send
        child.delayafterterminate = 0
        child.ptyproc.delayafterclose = 0
        child.ptyproc.delayafterterminate = 0
        child.started_at = time.monotonic()

        def finish(timeout: float = 30) -> int:
            child.expect(pexpect.EOF, timeout=timeout)
            child.output = child.before
            child.wait()
            return exit_code_of(child)

        child.finish = finish
        children.append(child)
        return child

    yield spawn
    for child in children:
        try:
            alive = child.isalive()
        except Exception:  # reaped by the test itself (psutil wait)
            continue
        if alive:
            try:
                os.kill(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            child.close(force=True)
        except Exception:
            pass


def is_raw(fd: int) -> bool:
    """The terminal on `fd` (a PTY master reads its slave's settings) is in raw mode."""
    import termios

    lflag = termios.tcgetattr(fd)[3]
    return not lflag & (termios.ICANON | termios.ECHO | termios.ISIG)


class ShellRun:
    """`sh -c 'stty -g; COMMAND; echo RC=$?; stty -g'` on an outer PTY.

    A non-interactive shell: no line editor that would fix the terminal up
    for wrapagent. `before`/`after` are the `stty -g` lines around COMMAND.
    """

    def __init__(self, run_wrapagent, command: str, cwd: str | os.PathLike | None = None) -> None:
        script = f'echo "S1=$(stty -g)"; {command}; echo "RC=$?"; echo "S2=$(stty -g)"'
        self.child = run_wrapagent(argv=["sh", "-c", script], cwd=cwd)
        self.child.expect(rb"S1=([0-9a-f:]+)\r\n")
        self.before = self.child.match.group(1)

    def saw_raw(self) -> bool:
        """The outer terminal is raw now (wrapagent is running)."""
        return is_raw(self.child.child_fd)

    def finish(self, timeout: float = 30) -> int:
        self.child.expect(rb"RC=(\d+)\r\n", timeout=timeout)
        self.output = self.child.before
        rc = int(self.child.match.group(1))
        self.child.expect(rb"S2=([0-9a-f:]+)\r\n")
        self.after = self.child.match.group(1)
        assert self.child.finish() == 0
        return rc
