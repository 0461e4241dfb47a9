"""Running one shell hook: placeholder substitution and a bounded `sh -c`.

Hooks are user code that must never take the wrapped tool down with it:
`run_command` never raises for a hook's failure, always returns within about
`timeout + 2` seconds, and leaves no process of the hook's group behind when
it had to give up on it (timeout, or a background child still holding the
output pipes open).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from wrapagent.values import Frozen

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping

if TYPE_CHECKING:
    from wrapagent.hooks.config_loader import LifecycleHook
    from wrapagent.hooks.context import GuardContext

STDOUT_CAP = 1024 * 1024  # bytes of stdout kept when captured; the rest is drained
LOG_CAP = 256 * 1024  # bytes of hook output copied to the log per stream
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL of the group
ENDED_AT_EXIT = "ended: the tool exited"
"""A hook's error when wrapagent ended it because the tool exited (`kill_running`): not a failure of
the hook, and said so in the record."""
PIPE_GRACE = 0.2  # seconds to wait for pipes to close after the shell has exited
HEAD_CAP = 4096  # bytes of each stream kept for the hook's message (a refusing pre_run's reason)
REFUSE_EXIT = 2  # a pre_run hook exiting with this refuses the launch (Claude Code's, CodeMie's convention)
REASON_CHARS = 300  # a refusal's reason is cut to this many characters on its one line


# --------------------------------------------------------------------------- substitution

def substitute(template: str, variables: Mapping[str, str]) -> str:
    """`{placeholder}` substitution, each value quoted for where it sits (see hooks/placeholders.py).

    Loaded on first use: builtin guards never substitute, and this module is
    loaded before the tool starts when guards are configured.
    """
    from wrapagent.hooks.placeholders import substitute as substitute_

    return substitute_(template, variables)


def hook_variables(ctx: GuardContext, exit_code: int | None = None,
                   turn: int | None = None, reason: str | None = None) -> dict[str, str]:
    """The `{placeholder}` values for a session; unknown ones are empty strings.

    Every variable is always defined (empty when not known yet, e.g.
    `{exit_code}` in pre_run, `{turn}` outside waiting_for_input) so a
    template never hands literal braces to sh.
    """
    return {
        "session_id": ctx.session_id,
        "session_dir": str(ctx.session_dir) if ctx.session_dir is not None else "",
        "sessions_root": str(ctx.sessions_root) if ctx.sessions_root is not None else "",
        "tool": ctx.tool,
        "project_root": str(ctx.project_root),
        "cwd": str(ctx.cwd),
        "exit_code": "" if exit_code is None else str(exit_code),
        "turn": "" if turn is None else str(turn),
        "reason": reason or "",
    }


_HOOKS_KEEP = frozenset(("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
                         "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
                         "GIT_REFLOG_ACTION"))
"""Git variables that are the user's preferences, not another repository's location."""


def hook_env(base: Mapping[str, str], ctx: GuardContext, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` without git's repository variables, plus the WRAPAGENT_* variables.

    wrapagent may itself run under a git hook (`GIT_DIR`, `GIT_INDEX_FILE`
    exported): a hook's `git` must find its repository from its own working
    directory (`cd {sessions_root} && git commit` must not commit into the
    user's repository). The user's identity and editor variables stay.
    """
    from wrapagent.gitcmd import is_location_var

    env = {k: v for k, v in base.items() if k in _HOOKS_KEEP or not is_location_var(k)}
    env["WRAPAGENT_SESSION_ID"] = ctx.session_id
    # A wrapagent a hook starts is nested, as one the tool starts is: a pre_run
    # running `wrapagent …` (or a shimmed `claude -p`) would otherwise start a
    # wrapagent whose pre_run starts one again, without end.
    # (session.resolve reads it the same way: garbage or negative counts as 0.)
    try:
        depth = max(0, int(base.get("WRAPAGENT_DEPTH", "0") or "0"))
    except ValueError:
        depth = 0
    env["WRAPAGENT_DEPTH"] = str(depth + 1)
    env["WRAPAGENT_TOOL"] = ctx.tool
    env["WRAPAGENT_PROJECT_ROOT"] = str(ctx.project_root)
    env["WRAPAGENT_WORKING_DIR"] = str(ctx.cwd)
    env["WRAPAGENT_SESSION_DIR"] = str(ctx.session_dir) if ctx.session_dir is not None else ""
    if extra:
        env.update(extra)
    return env


# --------------------------------------------------------------------------- results


class HookResult(Frozen):
    """What happened to one hook run; `to_record()` goes into session.json.

    A `values.Frozen`, not a dataclass: the default session_complete builds
    one after every session, and `dataclasses` costs ~20 ms to import there.
    """

    __slots__ = ("name", "kind", "command", "exit_code", "duration_s", "timed_out", "error",
                 "stdout", "stderr_head", "stdout_head")
    _defaults = {"stdout": b"", "stderr_head": b"", "stdout_head": b""}

    name: str
    kind: str  # "lifecycle" | "guard" | "pre_session"
    command: str
    exit_code: int | None
    duration_s: float
    timed_out: bool
    error: str | None
    stdout: bytes
    stderr_head: bytes
    """The first HEAD_CAP bytes of stderr (also copied to the log)."""
    stdout_head: bytes
    """The first HEAD_CAP bytes of stdout, when it was logged rather than captured."""

    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_code == 0

    def refuses(self) -> bool:
        """Exit 2 (not a timeout, not a signal): the hook refuses what it guards (pre_run: the launch)."""
        return self.exit_code == REFUSE_EXIT and not self.timed_out

    def message(self) -> str:
        """What the hook said, on one line: its stderr, else its stdout, trimmed.

        Control characters are dropped (the line goes to the user's terminal)
        and lines are joined with " / ", cut at REASON_CHARS characters.
        """
        from wrapagent.inject.blocks import strip_terminal_controls

        for raw in (self.stderr_head, self.stdout_head or self.stdout[:HEAD_CAP]):
            text = strip_terminal_controls(raw.decode("utf-8", errors="replace"))
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                joined = " / ".join(lines)
                return joined if len(joined) <= REASON_CHARS else joined[: REASON_CHARS - 1] + "…"
        return ""

    def to_record(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "command": self.command,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 6),
            "timed_out": self.timed_out,
            "error": self.error,
        }


# --------------------------------------------------------------------------- running


class _LineLog:
    """Turns a byte stream into `[name] line` log calls, bounded in volume."""

    def __init__(self, name: str, log: Callable[[str], None]) -> None:
        self.name = name
        self.log = log
        self.buf = b""
        self.seen = 0
        self.capped = False
        self.head = bytearray()

    def feed(self, data: bytes) -> None:
        if len(self.head) < HEAD_CAP:
            self.head += data[: HEAD_CAP - len(self.head)]
        if self.capped:
            return
        self.seen += len(data)
        self.buf += data
        if self.seen > LOG_CAP:
            self.buf = self.buf[: max(0, len(self.buf) - (self.seen - LOG_CAP))]
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            self._emit(line)
        if self.seen > LOG_CAP:
            self.flush()
            self._say(f"[{self.name}] (output beyond {LOG_CAP} bytes not logged)")
            self.capped = True

    def flush(self) -> None:
        if self.buf:
            self._emit(self.buf)
            self.buf = b""

    def _emit(self, line: bytes) -> None:
        from wrapagent.inject.blocks import strip_terminal_controls

        text = strip_terminal_controls(line.decode("utf-8", errors="replace")).rstrip()
        self._say(f"[{self.name}] {text}")

    def _say(self, message: str) -> None:
        try:
            self.log(message)
        except Exception:  # a broken logger must not break the hook runner
            pass


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when the group no longer exists (child_process.py)."""
    from wrapagent import child_process

    return child_process.signal_group(pgid, sig)


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies do not count)."""
    from wrapagent import child_process

    return child_process.group_alive(pgid)


def _kill_group(proc, pgid: int) -> None:
    """SIGTERM the whole group, SIGKILL whatever is left after KILL_GRACE, the shell reaped.

    `pgid` is the shell's pid (it leads its own group); the kill itself is
    child_process.stop_group, the one every helper program gets.
    """
    from wrapagent import child_process

    child_process.stop_group(proc, grace=KILL_GRACE)


# --------------------------------------------------------------------------- threads, signals, exit


_RUNNING: dict[int, str] = {}
"""Process groups of hooks being run (pgid → hook name): what `kill_running` ends at exit.

A plain dict: single-key stores and pops are atomic under the GIL, and
`kill_running` iterates a copy."""

_ENDED: set[int] = set()
"""Process groups `kill_running` ended: their `run_command` reports ENDED_AT_EXIT, not a failure."""


def start_hook_thread(target: Callable[[], None], name: str):
    """A daemon thread for hooks and guards: the main thread's signals blocked, nothing escapes it.

    Signals sent to wrapagent go to its main thread (`child_process.leave_signals_to_the_main_thread`);
    the hooks it starts get an empty mask all the same (`child_process.start`).

    `target` handles its own errors; anything it still raises (e.g. while
    wrapagent is exiting and the record is closed) is dropped rather than
    printed over the user's terminal.
    """
    import threading  # ~2-3 ms: only sessions with guards or turn hooks get here

    from wrapagent import child_process

    def run() -> None:
        try:
            child_process.leave_signals_to_the_main_thread()
            target()
        except BaseException:
            pass

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


class _HeldTermination:
    """wrapagent's Python TERM/HUP handlers held back while a hook is spawned and registered.

    Those handlers raise in the main thread to end the session cleanly. Raised
    inside `Popen` (the child forked, its pid not yet returned) the hook's group
    would be lost: nothing could kill it. Held here, the signal is recorded
    and the original handler runs once the group is in `_RUNNING`, where the
    caller's clean-up kills it. Not the main thread: nothing to hold (Python
    runs handlers in the main thread only).
    """

    def __init__(self) -> None:
        import signal

        self._old: dict[int, object] = {}
        self._got: list[int] = []
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                current = signal.getsignal(sig)
                if callable(current):
                    self._old[sig] = signal.signal(sig, lambda signum, frame: self._got.append(signum))
            except ValueError:  # not the main thread
                break

    def release(self) -> None:
        """Put the handlers back, then run them for what came meanwhile (they may raise)."""
        import signal

        old, self._old = self._old, {}
        for sig, handler in old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        got, self._got = self._got, []
        for signum in got:
            handler = old.get(signum)
            if callable(handler):
                handler(signum, None)


def kill_running(grace: float = KILL_GRACE) -> list[str]:
    """End the process groups of hooks still running (wrapagent is exiting); their names.

    The thread that owned a hook's deadline does not outlive wrapagent's
    `os._exit`: without this a hung guard or pre_session would run on,
    orphaned, with no timeout. TERM first, KILL what is left after `grace`.
    """
    import signal

    running = dict(_RUNNING)
    if not running:
        return []
    _ENDED.update(running)
    for pgid in running:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_group_alive(pgid) for pgid in running):
        time.sleep(0.02)
    for pgid in running:
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
    return list(running.values())


def _exit_code(returncode: int | None) -> int | None:
    """Popen's negative signal numbers → the shell's 128+N convention."""
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


def run_command(
    command: str,
    *,
    name: str,
    kind: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
    log: Callable[[str], None],
    capture_stdout: bool = False,
) -> HookResult:
    """Run `sh -c command` in its own process group; never raises for the hook's failures.

    stdin is /dev/null unless `stdin` bytes are given. stderr (and stdout when
    not captured) is copied to `log` line by line as `[name] …`. Captured
    stdout is kept up to STDOUT_CAP bytes; the rest is read and dropped so
    the hook never blocks on a full pipe.
    """
    import subprocess

    from wrapagent import child_process

    started = time.monotonic()

    def result(exit_code: int | None, timed_out: bool, error: str | None, out: bytes = b"",
               heads: tuple[bytes, bytes] = (b"", b"")) -> HookResult:
        return HookResult(name, kind, command, exit_code, time.monotonic() - started, timed_out, error, out,
                          stderr_head=heads[0], stdout_head=heads[1])

    workdir = Path(cwd)
    if not workdir.is_dir():
        fallback = os.getcwd()
        _LineLog(name, log)._say(f"[{name}] working directory {workdir} does not exist; running in {fallback}")
        workdir = Path(fallback)
    held = _HeldTermination()
    try:
        # (an empty signal mask for the hook whichever thread starts it: `child_process.start`)
        proc = child_process.start(["/bin/sh", "-c", command], cwd=workdir, env=env, stdin=stdin is not None)
    except OSError as exc:
        held.release()
        _LineLog(name, log)._say(f"[{name}] could not start: {exc}")
        return result(None, False, f"could not start: {exc}")
    except BaseException:
        held.release()
        raise

    _RUNNING[proc.pid] = name
    try:
        held.release()  # a TERM/HUP that came during the spawn raises here, with the group known
        out, timed_out, stuck, heads = _pump(proc, stdin, timeout, name, log, capture_stdout)
    except BaseException:
        # Even on KeyboardInterrupt, do not leave the hook's group running.
        _kill_group(proc, proc.pid)
        _RUNNING.pop(proc.pid, None)
        raise
    if not (timed_out or stuck) and proc.poll() is None:
        # The pipes closed but the shell runs on: it still gets its full timeout.
        try:
            proc.wait(timeout=max(0.0, started + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if timed_out or stuck:
        _kill_group(proc, proc.pid)
    _RUNNING.pop(proc.pid, None)
    code = _exit_code(proc.returncode)
    if proc.pid in _ENDED:
        _ENDED.discard(proc.pid)
        error: str | None = ENDED_AT_EXIT
        timed_out = False
    elif timed_out:
        error = f"timed out after {timeout:g}s"
    elif code != 0:
        error = f"exited with {code}"
    else:
        error = None
    if stuck and not timed_out:
        _LineLog(name, log)._say(f"[{name}] a background process kept the output open; its process group was killed")
    return result(code, timed_out, error, out, heads)


def _pump(proc, stdin: bytes | None, timeout: float, name: str, log: Callable[[str], None], capture: bool):
    """Feed stdin, read stdout/stderr until EOF, timeout, or the pipe-holding grace (child_process.pump).

    Returns (captured stdout, timed_out, stuck, (stderr head, stdout head))
    where `stuck` means the shell exited but something else in its group kept
    a pipe open past PIPE_GRACE. Captured stdout past STDOUT_CAP is read and
    dropped, so the hook never blocks on a full pipe.
    """
    from wrapagent import child_process

    logs = {child_process.STDOUT: _LineLog(name, log), child_process.STDERR: _LineLog(name, log)}
    captured = bytearray()

    def on_data(stream: str, data: bytes) -> bool:
        if stream == child_process.STDOUT and capture:
            captured.extend(data[:max(0, STDOUT_CAP - len(captured))])
        else:
            logs[stream].feed(data)
        return False

    try:
        outcome = child_process.pump(proc, stdin or None, time.monotonic() + max(0.0, timeout), on_data,
                                     pipe_grace=PIPE_GRACE)
    finally:
        for line_log in logs.values():
            line_log.flush()
    heads = (bytes(logs[child_process.STDERR].head), bytes(logs[child_process.STDOUT].head))
    return bytes(captured), outcome == child_process.TIMED_OUT, outcome == child_process.HELD_OPEN, heads


def run_lifecycle(
    hook: LifecycleHook,
    ctx: GuardContext,
    *,
    base_env: Mapping[str, str],
    log: Callable[[str], None],
    exit_code: int | None = None,
    turn: int | None = None,
    reason: str | None = None,
) -> HookResult:
    """Run one lifecycle hook for a session: substitute, cwd = project root, its timeout.

    `turn` and `reason` (waiting_for_input) are `{turn}`/`{reason}`, WRAPAGENT_TURN/
    WRAPAGENT_REASON, and with them the hook reads a JSON object on stdin (the
    fields events.py lists), so a script need not parse its command line.
    """
    command = substitute(hook.command, hook_variables(ctx, exit_code, turn, reason))
    extra: dict[str, str] = {}
    if turn is not None:
        extra["WRAPAGENT_TURN"] = str(turn)
    if reason is not None:
        extra["WRAPAGENT_REASON"] = reason
    return run_command(
        command,
        name=hook.event,
        kind="lifecycle",
        cwd=ctx.project_root,
        env=hook_env(base_env, ctx, extra or None),
        timeout=hook.timeout_secs,
        log=log,
        stdin=_waiting_stdin(ctx, turn, reason) if turn is not None else None,
    )


def _waiting_stdin(ctx: GuardContext, turn: int, reason: str | None) -> bytes:
    """waiting_for_input's stdin: one JSON object, then a newline."""
    import json

    payload = {"session_id": ctx.session_id, "tool": ctx.tool, "turn": turn, "reason": reason or "idle"}
    return (json.dumps(payload) + "\n").encode()
