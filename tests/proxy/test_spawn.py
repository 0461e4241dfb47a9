"""The tool started on a PTY of its own: the size it sees first, exec failures as a shell says them, exit codes."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from wrapagent.errors import ToolNotExecutable, ToolNotFound
from wrapagent.proxy.spawn import DEFAULT_SIZE, exec_error, spawn, start_size, status_to_exit_code, usable_size


def _read_all(fd: int) -> bytes:
    out = b""
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the tool and every holder of its terminal are gone
            return out
        if not data:
            return out
        out += data


def test_the_tool_sees_its_size_on_its_first_look_and_leads_its_own_group() -> None:
    """(A session leader of wrapagent's holds the terminal above it; the tool leads the foreground group.)"""
    script = "import os; print(os.get_terminal_size(0), os.getpgrp() == os.getpid() == os.tcgetpgrp(0))"
    pid, tool_pid, master = spawn([sys.executable, "-c", script], env=dict(os.environ), cwd=None, size=(33, 111))
    try:
        os.set_blocking(master, True)
        out = _read_all(master)
    finally:
        os.close(master)
    _, status = os.waitpid(pid, 0)
    assert b"columns=111, lines=33" in out and b"True" in out
    assert status_to_exit_code(status) == (0, None) and tool_pid > 0


def test_a_missing_program_fails_in_the_parent_as_not_found(tmp_path: Path) -> None:
    with pytest.raises(ToolNotFound) as caught:
        spawn([str(tmp_path / "nope")], env=dict(os.environ), cwd=None, size=(24, 80))
    assert caught.value.exit_code == 127 and "command not found" in str(caught.value)


def test_a_script_whose_interpreter_is_missing_is_not_called_missing_itself(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/nonexistent/interpreter\n")
    tool.chmod(0o755)
    err = exec_error(str(tool), 2)  # ENOENT
    assert isinstance(err, ToolNotFound) and "missing #! interpreter?" in str(err)
    denied = exec_error(str(tool), 13)  # EACCES
    assert isinstance(denied, ToolNotExecutable) and denied.exit_code == 126


def test_exit_statuses_follow_the_shell() -> None:
    assert status_to_exit_code(7 << 8) == (7, None)
    assert status_to_exit_code(signal.SIGTERM) == (128 + signal.SIGTERM, signal.SIGTERM)


def test_a_terminal_that_reports_no_size_gets_the_default(tmp_path: Path) -> None:
    assert usable_size((0, 0)) is None and usable_size((0, 80)) is None and usable_size(None) is None
    assert usable_size((40, 120, 0, 0)) == (40, 120)
    with open(tmp_path / "not-a-tty", "w") as f:
        assert start_size(f.fileno(), f.fileno()) == DEFAULT_SIZE
