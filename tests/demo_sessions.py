"""A real demo-agent session driven through a PTY, shared by the doctor and sessions tests."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pexpect

WRAPAGENT = [sys.executable, "-m", "wrapagent"]


def interactive_demo_session(env: dict[str, str], cwd: Path) -> None:
    """Type "hello" as the first message of `wrapagent demo`, then quit; the session ends 0."""
    child = pexpect.spawn(WRAPAGENT[0], [*WRAPAGENT[1:], "demo"], env=env, cwd=str(cwd),
                          dimensions=(40, 120), timeout=20)
    child.delaybeforesend = None
    try:
        child.expect_exact("demo> ")
        time.sleep(0.3)  # a person reads the screen first; readiness detection needs ~0.1 s
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
