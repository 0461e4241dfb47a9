"""`wrapagent doctor --probe TOOL`: does readiness detection fire for this installed tool?

Starts the real TOOL (not wrapped: no hooks, no record) in a private 120x40
terminal and feeds its output to the same `SessionInjector` wrapagent
uses; then quits it with the adapter's `quit_keys` (SIGTERM only if that did
not work, SIGKILL only after that). `demo` probes the built-in demo agent.
The probe answers the terminal queries TUIs send at start-up (cursor
position, device attributes, colours) the way a terminal would: nobody else
is there to answer them.

Its own module because it is the only part of doctor that runs a tool on a
pseudo-terminal; the result is plain data, rendered by `doctor_report`.
"""

from __future__ import annotations

from pathlib import Path

import os
import re
import signal
import sys
import time
from typing import Any, Callable, Mapping, Sequence

PROBE_TIMEOUT_SECS = 30.0
"""opencode's first start took 17 s on a 2-core machine; a ready tool ends the wait at once."""
PROBE_ROWS, PROBE_COLS = 40, 120
QUIT_KEY_GAP_SECS = 0.3
"""Between quit key groups (claude and gemini want Ctrl-C twice, not as one read)."""
QUIT_WAIT_SECS = 3.0
"""After the last quit key: how long the tool gets to exit before SIGTERM."""
TERM_WAIT_SECS = 3.0
"""After SIGTERM: how long before SIGKILL."""
SETTLE_QUIET_SECS, SETTLE_MAX_SECS = 0.5, 2.0
"""Before the quit keys: output quiet this long (at most SETTLE_MAX_SECS). gemini ignores keys
for about a second after its input box appears."""


_QUERY_RE = re.compile(
    rb"\x1b\[(?P<csi>[?>]?[0-9;]*\$?[A-Za-z])"  # CSI: 6n 5n c >c >q ?2026$p 18t …
    rb"|\x1b\](?P<osc>1[01]);\?(?P<st>\x07|\x1b\\)"  # OSC 10/11: foreground/background colour
)
_DECRQM = re.compile(r"\?(\d+)\$p")


def query_reply(query: re.Match, cursor: tuple[int, int], rows: int, cols: int) -> bytes | None:
    """What an xterm-like terminal answers to a query the tool wrote, or None (not a query)."""
    osc = query.group("osc")
    if osc is not None:
        colour = b"rgb:cccc/cccc/cccc" if osc == b"10" else b"rgb:0000/0000/0000"
        return b"\x1b]" + osc + b";" + colour + query.group("st")
    csi = query.group("csi").decode("ascii")
    row, col = cursor
    if csi == "6n":
        return f"\x1b[{row};{col}R".encode()
    if csi == "?6n":
        return f"\x1b[?{row};{col}R".encode()
    if csi == "5n":
        return b"\x1b[0n"
    if csi in ("c", "0c"):
        return b"\x1b[?62;22c"
    if csi in (">c", ">0c"):
        return b"\x1b[>1;10;0c"
    if csi in (">q", ">0q"):
        return b"\x1bP>|wrapagent-probe\x1b\\"
    if csi == "14t":
        return f"\x1b[4;{rows * 20};{cols * 10}t".encode()
    if csi == "16t":
        return b"\x1b[6;20;10t"
    if csi == "18t":
        return f"\x1b[8;{rows};{cols}t".encode()
    decrqm = _DECRQM.fullmatch(csi)
    if decrqm:
        return f"\x1b[?{decrqm.group(1)};0$y".encode()  # mode not recognised
    return None


class _Probe:
    """The tool on a private PTY, its output fed to a SessionInjector."""

    def __init__(self, argv: list[str], env: Mapping[str, str], adapter: Any, rows: int, cols: int) -> None:
        from wrapagent.inject.injector import SessionInjector
        from wrapagent.proxy.spawn import spawn

        self.rows, self.cols = rows, cols
        self.injector = SessionInjector(adapter, rows=rows, cols=cols, get_prefix=lambda: "",
                                        wake_fd=None)
        self.t0 = time.monotonic()
        # pid: the session leader on the PTY (its exit status is the tool's); tool_pid: the tool's group
        self.pid, self.tool_pid, self.fd = spawn(argv, env=env, cwd=None, size=(rows, cols))
        os.set_blocking(self.fd, False)
        self.eof = False
        self.status: int | None = None
        self.exited_at: float | None = None
        self.bracketed_paste = False
        self._bp_tail = b""
        self.replies = 0
        self.output_bytes = 0
        self.emulator_error: str | None = None
        self.last_output = self.t0

    # -- io ------------------------------------------------------------------

    def _cursor(self) -> tuple[int, int]:
        row, col = self.injector.readiness.screen.cursor()
        return row + 1, col + 1

    def _feed(self, data: bytes, now: float) -> None:
        if self.emulator_error is None:
            try:
                self.injector.on_output(data, now)
            except Exception as exc:
                # The live proxy would hit the same exception: say so instead of crashing.
                self.emulator_error = f"{type(exc).__name__}: {exc} (on output {data[-80:]!r})"
        hay = self._bp_tail + data
        if b"\x1b[?2004h" in hay:
            self.bracketed_paste = True
        self._bp_tail = hay[-7:]

    def _on_data(self, data: bytes, now: float) -> None:
        self.output_bytes += len(data)
        self.last_output = now
        pos = 0
        for match in _QUERY_RE.finditer(data):
            reply = query_reply(match, (1, 1), self.rows, self.cols)
            if reply is None:
                continue
            self._feed(data[pos:match.end()], now)  # the cursor as of the query
            pos = match.end()
            reply = query_reply(match, self._cursor(), self.rows, self.cols)
            self.write(reply or b"")
            self.replies += 1
        if pos < len(data):
            self._feed(data[pos:], now)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        end = time.monotonic() + 1.0
        while view and time.monotonic() < end and not self.eof:
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                return

    def _reap(self) -> None:
        if self.status is not None:
            return
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            self.status = 0
            self.exited_at = time.monotonic()
            return
        if pid == self.pid:
            self.status = status
            self.exited_at = time.monotonic()

    @property
    def alive(self) -> bool:
        self._reap()
        return self.status is None

    def _read(self, wait: float) -> bool:
        """One select + read of the master; True when output arrived."""
        import select

        if self.eof:
            time.sleep(wait)
            return False
        try:
            ready, _, _ = select.select([self.fd], [], [], wait)
        except InterruptedError:
            return False
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return False
        except OSError:  # EIO: every holder of the terminal is gone
            data = b""
        if not data:
            self.eof = True
            return False
        self._on_data(data, time.monotonic())
        return True

    def _drain_after_exit(self, quiet: float = 0.2) -> None:
        """What the tool wrote before it exited; a leftover holding the terminal must not keep us."""
        until = time.monotonic() + quiet
        while not self.eof and time.monotonic() < until:
            if self._read(0.05):
                until = time.monotonic() + quiet

    def pump(self, seconds: float, stop: Callable[[], bool]) -> None:
        """Read output and drive readiness checks for up to `seconds`, or until `stop()`.

        Once the tool has exited, its remaining output is drained first, so
        the last screen is complete.
        """
        from wrapagent.inject.injector import STARTING

        end = time.monotonic() + seconds
        while True:
            if not self.alive:
                self._drain_after_exit()
                return
            now = time.monotonic()
            if stop() or now >= end:
                return
            wait = min(end - now, 0.05)
            deadline = self.injector.deadline()
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - now))
            self._read(wait)
            now = time.monotonic()
            deadline = self.injector.deadline()
            if self.injector.state == STARTING and deadline is not None and now >= deadline:
                self.injector.poll(now)

    def signal_group(self, sig: int) -> None:
        from wrapagent import child_process

        child_process.signal_group(self.tool_pid, sig)
        if not child_process.signal_group(self.pid, sig):
            try:
                os.kill(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self) -> None:
        from wrapagent.proxy.pty_loop import reap_leftovers

        reap_leftovers(self.pid)
        try:
            os.close(self.fd)
        except OSError:
            pass

    def screen_text(self) -> str:
        text = self.injector.readiness.screen.text()
        return "\n".join(text.rstrip("\n").split("\n")).rstrip("\n")


def _probe_command(tool: str, extra: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], str, str]:
    """(argv, executable, adapter name); raises WrapagentError when the tool is not there."""
    from wrapagent.session import resolve

    if tool == "demo":
        from wrapagent.commands.own_process import module_argv  # never the current folder's code

        return module_argv("wrapagent.commands.demo_agent", *extra), sys.executable, "demo"
    path = str(resolve.find_real_tool(tool, env=env))
    return [path, *extra], path, os.path.basename(tool)


def _agent_kind(name: str, env: Mapping[str, str]) -> dict[str, Any]:
    """Whether wrapagent types into this program (`inject/agents.py`), with the config's names."""
    from wrapagent import paths
    from wrapagent.hooks.config_loader import load_config
    from wrapagent.inject.agents import is_agent, kind_of

    try:
        configured = load_config(paths.find_project_root(Path.cwd()), env=env).agents
    except Exception:  # a broken config must not hide the probe's answer; `doctor` reports it
        configured = ()
    return {"kind": kind_of(name, configured), "types_input": is_agent(name, configured)}


def probe(tool: str, extra: Sequence[str] = (), *, timeout: float = PROBE_TIMEOUT_SECS,
          env: Mapping[str, str] | None = None, rows: int = PROBE_ROWS, cols: int = PROBE_COLS) -> dict[str, Any]:
    """Start the real `tool`, wait for wrapagent's readiness detection, quit it; the facts as a dict."""
    from wrapagent.session import resolve
    from wrapagent.inject.adapters import adapter_for
    from wrapagent.errors import WrapagentError
    from wrapagent.inject.injector import STARTING
    from wrapagent.proxy.spawn import status_to_exit_code

    env = dict(os.environ if env is None else env)
    result: dict[str, Any] = {"tool": tool, "argv": None, "executable": None, "adapter": None,
                              "rows": rows, "cols": cols, "timeout_s": timeout, "started": False,
                              "error": None, "ready": False, "ready_after_s": None, "ready_by": None,
                              "tool_version": None, "markers": [],
                              "bracketed_paste": None, "bracketed_paste_required": None,
                              "screen": None, "queries_answered": 0, "emulator_error": None,
                              "quit": None}
    try:
        argv, executable, name = _probe_command(tool, extra, env)
    except WrapagentError as exc:
        result["error"] = exc.message
        return result
    adapter = adapter_for(name)
    result.update(argv=argv, executable=executable, adapter=adapter.name,
                  bracketed_paste_required=adapter.requires_bracketed_paste)
    result.update(_agent_kind(adapter.name, env))
    child_env = {**env, **resolve.child_env_additions(env=env)}
    if child_env.get("TERM", "dumb") in ("", "dumb"):
        child_env["TERM"] = "xterm-256color"
    child_env = adapter.child_env(child_env)
    try:
        run = _Probe(argv, child_env, adapter, rows, cols)
    except WrapagentError as exc:
        result["error"] = exc.message
        return result
    result["started"] = True
    try:
        run.pump(timeout, lambda: run.injector.state != STARTING or not run.alive
                 or run.emulator_error is not None)
        ready = run.injector.state != STARTING and run.emulator_error is None
        result["emulator_error"] = run.emulator_error
        result["ready"] = ready
        result["ready_after_s"] = run.injector.report.ready_after_s if ready else None
        result["ready_by"] = getattr(run.injector.report, "ready_by", None) if ready else None
        screen = run.screen_text()
        result["screen"] = screen
        result["markers"] = [{"pattern": p, "on_screen": bool(re.search(p, screen))}
                             for p in adapter.ready_patterns]
        result["bracketed_paste"] = run.bracketed_paste
        result["quit"] = _quit(run, adapter.quit_keys)
        result["queries_answered"] = run.replies
        if run.status is not None:
            code, sig = status_to_exit_code(run.status)
            result["quit"].update(exit_code=code, signal=sig)
    finally:
        if run.alive:  # only reached when something above raised
            run.signal_group(signal.SIGTERM)
            run.pump(TERM_WAIT_SECS, lambda: not run.alive)
            if run.alive:
                run.signal_group(signal.SIGKILL)
                run.pump(5.0, lambda: not run.alive)
        run.close()
    if name != "demo":  # the demo agent's binary is the Python interpreter
        from wrapagent.session.tool_version import find_version

        # After the tool quit: the cache or its npm package, else `TOOL --version` from `/`.
        result["tool_version"] = find_version(executable, child_env, may_run=True, trust_failures=False)["version"]
    return result


def _quit(run: _Probe, keys: Sequence[bytes]) -> dict[str, Any]:
    """Let output settle, send the quit keys, then SIGTERM, then SIGKILL; what it took."""
    info: dict[str, Any] = {"keys": [k.decode("latin-1") for k in keys], "keys_sent": 0,
                            "exited_before_quit": not run.alive, "sigterm": False, "sigkill": False,
                            "exit_code": None, "signal": None, "seconds": None}
    start = time.monotonic()
    if not info["exited_before_quit"]:
        settle_end = start + SETTLE_MAX_SECS
        run.pump(SETTLE_MAX_SECS, lambda: not run.alive or time.monotonic() >= settle_end
                 or time.monotonic() - run.last_output >= SETTLE_QUIET_SECS)
        start = time.monotonic()
        for key in keys:
            if not run.alive:
                break
            run.write(key)
            info["keys_sent"] += 1
            run.pump(QUIT_KEY_GAP_SECS, lambda: not run.alive)
        run.pump(QUIT_WAIT_SECS, lambda: not run.alive)
        if run.alive:
            info["sigterm"] = True
            run.signal_group(signal.SIGTERM)
            run.pump(TERM_WAIT_SECS, lambda: not run.alive)
        if run.alive:
            info["sigkill"] = True
            run.signal_group(signal.SIGKILL)
            run.pump(5.0, lambda: not run.alive)
    if run.exited_at is not None and not info["exited_before_quit"]:
        info["seconds"] = round(max(0.0, run.exited_at - start), 3)
    return info
