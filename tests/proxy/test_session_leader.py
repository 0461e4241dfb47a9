"""The tool's session leader and the job it belongs to: a stop is the user's only when the user made it.

Both tests run their subject in a process of its own whose process group is
not orphaned (its parent, this test, is in another group of the same
session), so a wrong stop really stops it, and the test sees that with
`waitpid(WUNTRACED)` instead of freezing with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import helper

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0


def _outcome(proc: subprocess.Popen) -> str:
    """'exit N', 'signal N' or 'stopped by N' (the process is then killed), waiting at most TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        pid, status = os.waitpid(proc.pid, os.WNOHANG | os.WUNTRACED)
        if pid == 0:
            time.sleep(0.01)
            continue
        proc.returncode = 0  # reaped here: Popen must not wait for it again
        if os.WIFSTOPPED(status):
            os.killpg(proc.pid, signal.SIGKILL)
            os.killpg(proc.pid, signal.SIGCONT)
            os.waitpid(proc.pid, 0)
            return f"stopped by {os.WSTOPSIG(status)}"
        if os.WIFSIGNALED(status):
            return f"signal {os.WTERMSIG(status)}"
        return f"exit {os.WEXITSTATUS(status)}"
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("no outcome in time")


def _run(script: str, **popen: object) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=ROOT,
                            stdin=subprocess.DEVNULL, **popen)
    return _outcome(proc)


def test_a_tool_stopped_for_touching_its_terminal_before_the_foreground_was_given_is_continued() -> None:
    """The start-up race: the tool sets raw mode before its leader made it the PTY's foreground
    group, so the kernel stops it with SIGTTOU; the foreground is given before the leader's wait
    sees the stop. That stop is not the user's: the leader continues the tool (it used to stop
    itself, and wrapagent then suspended the user's whole job at start-up)."""
    outcome = _run("""
        import os, signal, sys, time
        import psutil
        from wrapagent.proxy import session_leader
        _, slave = os.openpty()
        os.close(os.open(os.ttyname(slave), os.O_RDWR))  # a session leader's first terminal: its own
        os.dup2(slave, 0); os.dup2(slave, 1)
        tool = os.posix_spawn(sys.executable, [sys.executable, "-c",
                              "import tty; tty.setraw(0); raise SystemExit(7)"], dict(os.environ),
                              setpgroup=0, setsigdef=(signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP))
        proc = psutil.Process(tool)
        deadline = time.monotonic() + 30
        while proc.status() != psutil.STATUS_STOPPED:
            assert time.monotonic() < deadline, "the tool was never stopped by SIGTTOU"
            time.sleep(0.005)
        session_leader._foreground(0, tool)  # the foreground given after the stop, before the wait
        session_leader._wait_for(tool)  # ends this process as the tool ended
    """, start_new_session=True)
    assert outcome == "exit 7"


def test_a_tool_that_suspends_itself_never_stops_a_job_that_is_not_a_terminals() -> None:
    """wrapagent run in-process with a terminal that is not its controlling one (no shell could
    `fg` it): the tool's Ctrl-Z gives the terminal back and takes it again, it does not stop the
    group wrapagent shares with its caller."""
    outcome = _run(f"""
        import os, threading
        from wrapagent.proxy import pty_loop
        master, slave = os.openpty()
        seen = bytearray()
        def drive():
            def wait_for(marker):
                while marker not in seen:
                    data = os.read(master, 4096)
                    if not data:
                        raise SystemExit(4)
                    seen.extend(data)
            wait_for(b"READY")
            os.write(master, b"z")
            wait_for(b"BACK")
            os.write(master, b"q")
        threading.Thread(target=drive, daemon=True).start()
        result = pty_loop.run({helper("suspender.py")!r}, env=dict(os.environ),
                              stdin_fd=slave, stdout_fd=slave)
        os._exit(result.exit_code)
    """, process_group=0)
    assert outcome == "exit 5"
