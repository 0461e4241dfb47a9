"""A reader that goes away (`| head -1`) ends wrapagent quietly, as git does.

The read end of the pipe is closed before wrapagent starts: the first write
of any size fails with EPIPE, every time (a real `head` races with how much
fits in the pipe). Quiet means: no traceback, nothing but what the command
says anyway on stderr, and the exit status a SIGPIPE death gives (141).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import agent_stand_in, default_signals, wrapagent_argv


def run_into_closed_pipe(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before a byte is written
    try:
        return subprocess.run([*wrapagent_argv(), *args], cwd=cwd, stdout=write_end, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=120, preexec_fn=default_signals, **kw)
    finally:
        os.close(write_end)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with a few finished sessions to list and show."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    agent = agent_stand_in(tmp_path / ".bin")  # an agent's sessions: `show last` has one to show
    for _ in range(2):
        subprocess.run([*wrapagent_argv(), str(agent)], cwd=tmp_path, check=True,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return tmp_path


@pytest.mark.parametrize("args", [
    ["doctor", "--json"],
    ["doctor"],
    ["sessions", "show", "--json", "last"],
    ["sessions", "show", "last"],
    ["sessions", "list"],
    ["shims", "status"],
    ["config", "check"],
    ["trust", "--list"],
    ["--help"],
    ["--version"],
], ids=lambda a: " ".join(a))
def test_subcommand_into_a_closed_pipe_exits_quietly(project: Path, args: list[str]) -> None:
    proc = run_into_closed_pipe(args, project)
    stderr = proc.stderr.decode(errors="replace")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert stderr == ""
    assert proc.returncode == 141


def test_demo_agent_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    """`wrapagent demo -p hi | head -c1`: the demo agent (the wrapped tool) writes into the closed pipe."""
    proc = run_into_closed_pipe(["demo", "-p", "hi"], tmp_path,
                                env=dict(os.environ, WRAPAGENT_DEMO_THINK_SECS="0"))
    stderr = proc.stderr.decode(errors="replace")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert proc.returncode == 141  # the tool's status, passed through
