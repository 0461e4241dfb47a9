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


def _pumped(argv: list[str], *, stderr: bool | str = True, deadline_in: float = 120.0, pipe_grace: float | None = None,
            stop_after: int | None = None) -> tuple[str, list[tuple[str, bytes]], subprocess.Popen]:
    import time

    proc = child_process.start(argv, stderr=stderr)
    got: list[tuple[str, bytes]] = []

    def on_data(stream: str, data: bytes) -> bool:
        got.append((stream, data))
        return stop_after is not None and sum(len(d) for _, d in got) >= stop_after

    try:
        outcome = child_process.pump(proc, None, time.monotonic() + deadline_in, on_data, pipe_grace=pipe_grace)
    finally:
        child_process.stop_group(proc)
    return outcome, got, proc


def _joined(got: list[tuple[str, bytes]], stream: str) -> bytes:
    return b"".join(data for name, data in got if name == stream)


def test_pump_hands_each_output_over_as_it_comes():
    outcome, got, proc = _pumped(["sh", "-c", "echo out; echo err >&2; echo more"])
    assert outcome == child_process.ENDED
    assert (_joined(got, "stdout"), _joined(got, "stderr")) == (b"out\nmore\n", b"err\n")


def test_pump_with_stderr_merged_gives_one_stream_in_the_order_written():
    outcome, got, _ = _pumped(["sh", "-c", "echo one; echo two >&2; echo three"], stderr="stdout")
    assert outcome == child_process.ENDED
    assert {name for name, _ in got} == {"stdout"} and _joined(got, "stdout") == b"one\ntwo\nthree\n"


def test_pump_stops_when_the_caller_has_enough():
    outcome, got, proc = _pumped(["yes"], stop_after=10_000)
    assert outcome == child_process.STOPPED and sum(len(d) for _, d in got) >= 10_000
    assert not child_process.group_alive(proc.pid)


def test_pump_past_the_deadline_with_the_program_running_is_timed_out():
    outcome, _, proc = _pumped(["sleep", "300"], deadline_in=1)
    assert outcome == child_process.TIMED_OUT
    assert not child_process.group_alive(proc.pid)


def test_a_background_job_holding_the_output_after_the_program_exited_is_held_open(tmp_path):
    """The shell exits at once; its `sleep` keeps stdout open: reported after the grace, not at the deadline."""
    import time

    started = time.monotonic()
    outcome, got, proc = _pumped(["sh", "-c", "echo bye; sleep 300 &"], pipe_grace=0.5, deadline_in=600)
    assert outcome == child_process.HELD_OPEN and _joined(got, "stdout") == b"bye\n"
    assert time.monotonic() - started < 300  # long before the deadline (and the sleep): the grace decided
    assert not child_process.group_alive(proc.pid)
