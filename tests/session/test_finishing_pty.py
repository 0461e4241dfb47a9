"""A hang-up after the tool ended does not stop wrapagent.

Terminals usually send more than one SIGHUP when they close. The first one
that comes after the tool's end used to find SIGHUP's default action back in
place (the proxy restored it) and killed wrapagent before the record was saved.
"""

from __future__ import annotations

import signal
import sys

import pexpect

from conftest import helper
from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths


def test_sighup_after_the_tool_ended_is_ignored() -> None:
    argv = helper("hangup_after_end.py", "7")
    child = pexpect.spawn(argv[0], argv[1:], timeout=30)
    child.expect_exact("saved 7")
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus is None, f"killed by signal {child.signalstatus}"
    assert child.exitstatus == 7
    assert signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN  # (the test process is untouched)
