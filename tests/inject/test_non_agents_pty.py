"""Programs that are no agent get nothing typed: a shell or a REPL would run the guards' text.

`wrapagent bash` in a git repository once ran the blocks as commands (`bash: Branch::
command not found`); a Python REPL runs guard lines as code. Each guard here prints a
command that, were it typed, would create a file: the file must never appear, and what the
user types reaches the program as typed.
"""

from __future__ import annotations

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
