"""Job control through a real shell: Ctrl-Z of a TUI, `kill -TSTP` of wrapagent, then `fg`.

Driven under `bash -i` in a pseudo-terminal, so the job control is the
shell's own: `Stopped`, its prompt, `fg`. After `fg` a key must reach the tool
at once (raw mode back, not a line buffer) and Ctrl-C as a byte (not a
SIGINT that kills it); the tool's exit code must come through.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pexpect
import psutil
import pytest

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

HELPER = Path(__file__).resolve().parent.parent / "helpers" / "suspender.py"
PROMPT = "JOBS-PROMPT> "
MODES_OFF = (b"\x1b[?2004l", b"\x1b[?1000l", b"\x1b[?1049l")
MODES_ON = (b"\x1b[?1049h", b"\x1b[?1000h", b"\x1b[?2004h")


@pytest.fixture(params=["--no-hooks", "full"])
def mode(request) -> str:
    return request.param


def shell(tmp_path: Path) -> pexpect.spawn:
    inputrc = tmp_path / "inputrc"
    inputrc.write_text("set enable-bracketed-paste off\n")
    work = tmp_path / "work"  # not a git project: full mode's default session, no checkpoint
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRAPAGENT_") or k == "WRAPAGENT_PLATFORM"}
    env.update(PS1=PROMPT, INPUTRC=str(inputrc), HOME=str(tmp_path), TERM="xterm",
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    sh = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env=env, cwd=str(work),
                       dimensions=(24, 80), timeout=60)
    sh.delayafterclose = 0
    sh.delayafterterminate = 0
    sh.logfile_read = open(tmp_path / "screen.log", "wb")  # noqa: SIM115 - read on failure
    sh.expect_exact(PROMPT)
    return sh


def start_tool(sh: pexpect.spawn, mode: str) -> psutil.Process:
    opts = "--no-hooks " if mode == "--no-hooks" else ""
    sh.sendline(f"{sys.executable} -m wrapagent {opts}{sys.executable} {HELPER}")
    sh.expect_exact(b"READY")
    (wrapagent,) = psutil.Process(sh.pid).children()
    return wrapagent


def finish(sh: pexpect.spawn) -> None:
    """`q`: the tool exits 5; the shell says so."""
    sh.send("q")
    sh.expect_exact(PROMPT)
    sh.sendline("echo EXIT=$?")
    sh.expect_exact("EXIT=5")
    sh.sendline("exit")
    sh.expect(pexpect.EOF)


def keys_reach_the_tool_raw(sh: pexpect.spawn) -> None:
    """A key without Enter arrives at once; Ctrl-C arrives as a byte."""
    sh.send("k")
    sh.expect_exact(b"GOT:6b")
    sh.send("\x03")
    sh.expect_exact(b"GOT:03")


def test_a_tui_that_suspends_itself_gives_the_shell_back_and_fg_resumes_it(tmp_path, mode):
    sh = shell(tmp_path)
    try:
        start_tool(sh, mode)
        sh.send("z")
        sh.expect_exact(b"SUSPENDING")
        sh.expect(r"Stopped")
        sh.expect_exact(PROMPT)
        sh.sendline("fg")
        sh.expect_exact(b"BACK")
        keys_reach_the_tool_raw(sh)
        sh.send("z")  # a second time, as the first
        sh.expect(r"Stopped")
        sh.expect_exact(PROMPT)
        sh.sendline("fg")
        sh.expect_exact(b"BACK")
        keys_reach_the_tool_raw(sh)
        finish(sh)
    finally:
        sh.close(force=True)


def test_wrapagent_stopped_from_outside_turns_the_modes_off_and_back_on(tmp_path, mode):
    sh = shell(tmp_path)
    try:
        wrapagent = start_tool(sh, mode)
        os.kill(wrapagent.pid, signal.SIGTSTP)
        sh.expect(r"Stopped")
        while_stopped = sh.before
        sh.expect_exact(PROMPT)
        assert all(seq in while_stopped for seq in MODES_OFF), while_stopped
        assert wrapagent.status() == psutil.STATUS_STOPPED
        (leader,) = wrapagent.children()
        (tool,) = leader.children()
        assert tool.status() != psutil.STATUS_STOPPED  # only wrapagent was stopped
        sh.send("fg\r")
        sh.expect_exact(MODES_ON[0])  # the alternate screen again, once raw mode is back
        sh.expect_exact(MODES_ON[2])
        keys_reach_the_tool_raw(sh)
        finish(sh)
    finally:
        sh.close(force=True)


def test_keys_typed_before_fg_takes_the_terminal_arrive_once(tmp_path):
    """Typed right after `fg`, before wrapagent is back in raw mode: neither lost nor doubled."""
    sh = shell(tmp_path)
    try:
        start_tool(sh, "--no-hooks")
        sh.send("z")
        sh.expect(r"Stopped")
        sh.expect_exact(PROMPT)
        sh.send("fg\rxy")
        sh.expect_exact(b"GOT:78")
        sh.expect_exact(b"GOT:79")
        sh.send("k")
        sh.expect_exact(b"GOT:6b")
        assert b"GOT:78" not in sh.before and b"GOT:79" not in sh.before
        finish(sh)
    finally:
        sh.close(force=True)


def test_sigstop_then_fg_takes_the_terminal_back(tmp_path):
    """SIGSTOP cannot be caught: nothing is given back while stopped, but `fg` (SIGCONT) re-applies raw
    mode and the tool's modes, so the next Ctrl-C is a byte for the tool, not a SIGINT that kills it."""
    sh = shell(tmp_path)
    try:
        wrapagent = start_tool(sh, "--no-hooks")
        os.kill(wrapagent.pid, signal.SIGSTOP)
        sh.expect(r"Stopped")
        sh.expect_exact(PROMPT)
        sh.send("fg\r")
        sh.expect_exact(MODES_ON[0])  # written once raw mode is back
        keys_reach_the_tool_raw(sh)
        finish(sh)
    finally:
        sh.close(force=True)


def test_bg_stops_again_until_fg(tmp_path):
    """Continued in the background, wrapagent cannot take the terminal: it stops again (tty output)."""
    sh = shell(tmp_path)
    try:
        start_tool(sh, "--no-hooks")
        sh.send("z")
        sh.expect(r"Stopped")
        sh.expect_exact(PROMPT)
        sh.sendline("bg")
        sh.expect_exact(PROMPT)
        end = time.monotonic() + 60
        while True:  # the shell tells of the new stop when asked (or at its next prompt)
            sh.sendline("jobs -l")
            if sh.expect([r"Stopped \(tty output\)", r"Running"]) == 0:
                break
            assert time.monotonic() < end, "wrapagent ran on in the background"
            sh.expect_exact(PROMPT)
            time.sleep(0.1)
        sh.expect_exact(PROMPT)
        sh.sendline("fg")
        sh.expect_exact(b"BACK")
        keys_reach_the_tool_raw(sh)
        finish(sh)
    finally:
        sh.close(force=True)


def test_started_in_the_background_it_waits_for_fg(tmp_path):
    """`wrapagent TOOL &`: stopped on its first terminal change (tty output), then `fg` runs it raw."""
    sh = shell(tmp_path)
    try:
        sh.sendline(f"{sys.executable} -m wrapagent --no-hooks {sys.executable} {HELPER} &")
        sh.expect_exact(PROMPT)
        end = time.monotonic() + 60
        while True:
            sh.sendline("jobs -l")
            if sh.expect([r"Stopped \(tty output\)", r"Running"]) == 0:
                break
            assert time.monotonic() < end, "wrapagent ran on in the background"
            sh.expect_exact(PROMPT)
            time.sleep(0.1)
        sh.expect_exact(PROMPT)
        sh.sendline("fg")
        sh.expect_exact(MODES_ON[0])  # the tool's modes, once wrapagent has the terminal raw
        keys_reach_the_tool_raw(sh)
        finish(sh)
    finally:
        sh.close(force=True)
