"""After `/quit` the demo says where to look next, and those commands answer for the demo."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import wrapagent_argv
from tests.demo_sessions import wait_until_armed


def _quit_demo(run_wrapagent, cwd: Path) -> str:
    child = run_wrapagent("demo", cwd=cwd, dimensions=(40, 120), timeout=60)
    child.expect_exact(b"demo> ")
    wait_until_armed(Path(os.environ["XDG_STATE_HOME"]))
    for ch in b"hello":
        child.send(bytes([ch]))
        time.sleep(0.03)
    time.sleep(0.3)
    child.send(b"\r")
    child.expect_exact(b"end of message 1")
    child.send(b"/quit\r")
    assert child.finish(timeout=60) == 0
    return child.output.decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.mark.parametrize("in_git", [True, False])
def test_demo_ends_with_the_commands_to_look_back(run_wrapagent, tmp_path, in_git):
    project = tmp_path / "project"
    project.mkdir()
    if in_git:
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    out = _quit_demo(run_wrapagent, project)
    tail = out[out.index("wrapagent demo: that was a recorded session"):]
    assert "wrapagent sessions show last" in tail
    assert ("wrapagent sessions diff last     what it changed" in tail) == in_git
    assert ("wrapagent sessions undo last     put those files back" in tail) == in_git
    assert "wrapagent config init" in tail
    # The first command it names answers for the session just ended.
    shown = subprocess.run([*wrapagent_argv(), "sessions", "show", "last"], cwd=project,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "demo" in shown.stdout
    if in_git:
        diff = subprocess.run([*wrapagent_argv(), "sessions", "diff", "last"], cwd=project,
                              capture_output=True, text=True, timeout=60)
        assert diff.returncode == 0, diff.stderr


def test_no_next_steps_without_a_terminal(tmp_path):
    result = subprocess.run([*wrapagent_argv(), "demo", "hi"], cwd=tmp_path, capture_output=True,
                            text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "that was a recorded session" not in result.stderr
