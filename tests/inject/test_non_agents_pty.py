"""Programs that are no agent get nothing typed: a shell or a REPL would run the guards' text.

`wrapagent bash` in a git repository once ran the blocks as commands (`bash: Branch::
command not found`); a Python REPL runs guard lines as code. Each guard here prints a
command that, were it typed, would create a file: the file must never appear, and what the
user types reaches the program as typed.
"""

from __future__ import annotations

import os
import shutil
import sys

import pexpect
import pytest

from pty_session import spawn_wrapagent, type_text
from test_injection_pty import world  # noqa: F401

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def guard_printing(world, line: str) -> None:
    world.hooks(f'[[prompt_guard]]\nname = "g"\ncommand = """echo "{line}" """\n')


def spawn(world, *argv: str) -> pexpect.spawn:
    return spawn_wrapagent(*argv, env=world.env(PS1="$ "), cwd=world.project, timeout=30)


def test_bash_gets_nothing_typed(world, tmp_path) -> None:
    pwned = tmp_path / "pwned-by-bash"
    guard_printing(world, f"touch {pwned}")
    child = spawn(world, "bash", "--norc", "--noprofile", "-i")
    child.expect_exact("$ ")
    type_text(child, "echo $((6*7))")
    child.send("\r")
    child.expect_exact("42")
    child.expect_exact("$ ")
    child.send("exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not pwned.exists()
    record = [r for r in world.records() if r["transport"] == "bash"][-1]
    assert record["injection"]["status"] == "none"


def test_python_repl_gets_nothing_typed(world, tmp_path) -> None:
    pwned = tmp_path / "pwned-by-python"
    guard_printing(world, f"open('{pwned}', 'w')")
    child = spawn(world, sys.executable, "-q")
    child.expect_exact(">>> ")
    type_text(child, "print(6*7)")
    child.send("\r")
    child.expect_exact("42")
    child.expect_exact(">>> ")
    child.send("exit()\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not pwned.exists()


STARTUP_QUESTION_TUI = r'''
import os, select, sys, termios, tty
log = open(sys.argv[1], "ab")
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
out = sys.stdout
out.write("\x1b[?2004hmytui 1.0\r\n")
spin = 0
while True:  # a start-up question, animated until it is answered: the screen is never quiet
    out.write("\rStart from a template? type y or n " + "|/-\\"[spin % 4])
    out.flush()
    spin += 1
    if select.select([fd], [], [], 0.05)[0]:
        log.write(b"answer " + os.read(fd, 65536) + b"\n")
        log.flush()
        break
out.write("\r\n> ")
out.flush()
buf = b""
while True:
    data = os.read(fd, 65536)
    buf += data
    out.write(data.replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"").replace(b"\n", b"\r\n")
              .decode("utf-8", "replace"))
    out.flush()
    if buf.endswith(b"\r"):
        if buf == b"quit\r":
            break
        log.write(b"message " + buf[:-1].replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"") + b"\n")
        log.flush()
        buf = b""
        out.write("\r\nok\r\n> ")
        out.flush()
termios.tcsetattr(fd, termios.TCSADRAIN, saved)
'''


def test_an_unknown_agent_tuis_start_up_question_gets_no_blocks(world, tmp_path) -> None:
    """An agent TUI the user names in `[agents]`, with no markers: a key on its first screen
    (a question, still animating) never skips the quiet check. The answer reaches the
    question alone; the first message after it, on the quiet composer, gets the blocks."""
    from demo_sessions import wait_until_armed

    script, answers = tmp_path / "mytui.py", tmp_path / "mytui.log"
    script.write_text(STARTUP_QUESTION_TUI)
    tool = tmp_path / "bin" / "mytui"
    tool.parent.mkdir()
    tool.write_text(f'#!/bin/sh\nexec {sys.executable} {script} {answers}\n')
    tool.chmod(0o755)
    world.hooks('[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n'
                '\n[agents]\nprograms = ["mytui"]\n')
    child = pexpect.spawn(sys.executable, ["-m", "wrapagent", "mytui"],
                          env=world.env(PATH=f"{tool.parent}:{os.environ['PATH']}"),
                          cwd=str(world.project), dimensions=(30, 100), timeout=30)
    child.delayafterclose = 0
    child.delayafterterminate = 0
    child.expect_exact("type y or n")
    child.send("y")
    child.expect_exact("> ")
    wait_until_armed(world.state)
    type_text(child, "hello")
    child.send("\r")
    child.expect_exact("ok")
    child.send("quit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert answers.read_text().splitlines() == [
        "answer y", "message <prompt-guard name=\"g\">", "guard says hi", "</prompt-guard>", "", "hello"]
