"""A real demo-agent session driven through a PTY, shared by the doctor and sessions tests."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pexpect

WRAPAGENT = [sys.executable, "-m", "wrapagent"]
ARMED_TIMEOUT = 60.0  # seconds; only a broken readiness detection gets anywhere near it


def wait_until_armed(state_home: Path, timeout: float = ARMED_TIMEOUT) -> None:
    """Wait until the newest session's injector saw the tool ready (its log says so).

    Keys typed before that pass through untouched, by design (start-up
    dialogs need them); a fixed sleep after the prompt appears is a race on a
    loaded machine, so tests wait for the injector's own word instead.
    """
    wait_for_log(state_home, " ready after ", timeout)


def wait_for_log(state_home: Path, text: str, timeout: float = ARMED_TIMEOUT) -> None:
    """Wait until the newest session's log holds `text` (the injector's word for a state)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dirs = sorted(state_home.glob("wrapagent/projects/*/*/"), key=lambda d: d.name)
        log = dirs[-1] / "session.log" if dirs else None
        try:
            if log is not None and text in log.read_text(errors="replace"):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"the session log never said {text!r} within {timeout:.0f} s")


def interactive_demo_session(env: dict[str, str], cwd: Path) -> None:
    """Type "hello" as the first message of `wrapagent demo`, then quit; the session ends 0."""
    child = pexpect.spawn(WRAPAGENT[0], [*WRAPAGENT[1:], "demo"], env=env, cwd=str(cwd),
                          dimensions=(40, 120), timeout=20)
    child.delaybeforesend = None
    try:
        child.expect_exact("demo> ")
        wait_until_armed(Path(env["XDG_STATE_HOME"]))
        for ch in "hello":
            child.send(ch)
            time.sleep(0.03)
        time.sleep(0.3)
        child.send("\r")
        child.expect_exact("end of message 1")
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
