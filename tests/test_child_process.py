"""wrapagent/child_process.py: a helper program in its own group, a deadline, a clean kill."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from wrapagent import child_process
from wrapagent.child_process import ChildTimeout

from waiting import wait_for


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stdin_in_stdout_and_stderr_out_exit_code():
    data = os.urandom(1 << 20)  # more than a pipe holds: written while stdout is read
    script = "import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d); sys.stderr.write('E'); sys.exit(3)"
    done = child_process.run([sys.executable, "-c", script], timeout=120, input=data)
    assert (done.code, done.stdout == data, done.stderr, done.truncated) == (3, True, b"E", False)


def test_stdin_is_dev_null_without_input():
    done = child_process.run(["sh", "-c", "cat; echo end"], timeout=120)
    assert (done.code, done.stdout) == (0, b"end\n")


def test_runs_in_its_own_session():
    done = child_process.run([sys.executable, "-c", "import os; print(os.getsid(0) == os.getpid())"], timeout=120)
    assert done.stdout == b"True\n"


def test_deadline_kills_the_whole_group(tmp_path):
    """A background child of the program is in its group: gone too, once run() returns."""
    pid_file = tmp_path / "bg.pid"
    with pytest.raises(ChildTimeout) as caught:
        child_process.run(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; echo started; wait"], timeout=5)
    background = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), f"{pid_file}", timeout=1))
    assert _gone(background)
    assert not child_process.group_alive(caught.value.partial.pid)
    assert isinstance(caught.value, TimeoutError)


def test_grace_lets_the_group_end_on_sigterm(tmp_path):
    said = tmp_path / "said"
    script = f"trap 'echo bye > {said}; exit 0' TERM; sleep 300 & wait"
    with pytest.raises(ChildTimeout):
        child_process.run(["sh", "-c", script], timeout=3, grace=60)
    assert said.read_text() == "bye\n"


def test_no_grace_is_straight_to_sigkill(tmp_path):
    said = tmp_path / "said"
    script = f"trap 'echo bye > {said}; exit 0' TERM; sleep 300 & wait"
    with pytest.raises(ChildTimeout):
        child_process.run(["sh", "-c", script], timeout=3)
    assert not said.exists()


def test_stdout_limit_cuts_and_stops_the_group():
    done = child_process.run(["yes"], timeout=120, limit=1000)
    assert done.truncated and done.code is None
    assert done.stdout == b"y\n" * 500
    assert not child_process.group_alive(done.pid)


def test_before_kill_runs_with_the_group_still_there(tmp_path):
    seen = []

    def look(proc: subprocess.Popen) -> None:
        seen.append(child_process.group_alive(proc.pid))

    with pytest.raises(ChildTimeout):
        child_process.run(["sleep", "300"], timeout=2, before_kill=look)
    assert seen == [True]


def test_a_missing_program_raises_oserror():
    with pytest.raises(FileNotFoundError):
        child_process.run(["/nonexistent/program"], timeout=10)


def test_stop_group_on_a_reaped_child_is_harmless():
    proc = child_process.start(["true"])
    proc.communicate()
    child_process.stop_group(proc, grace=1)
    assert proc.returncode == 0
