"""A wall-clock step does not make live sessions look abandoned.

The abandoned-session check compared epoch start times with a 10 ms
tolerance. On Linux the epoch start time of a process is the boot time plus
its start ticks, and the kernel moves the boot time (`btime` in /proc/stat)
with every clock step: after NTP corrects the clock on resume, or a VM
migrates, every running session's owner looked like a reused pid. The step
is faked where the kernel shows it, in /proc/stat's `btime`.
"""

from __future__ import annotations

import builtins
import io
import json
import os
from pathlib import Path

import pytest

from wrapagent import portable
from wrapagent.history import records
from wrapagent.history.records import RUNNING_DIR, owner_alive, sweep_abandoned

needs_proc = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the step is faked in /proc/stat (Linux)")


def step_the_clock(monkeypatch: pytest.MonkeyPatch, seconds: int) -> None:
    """From now on /proc/stat says the machine booted `seconds` later, as after a clock step."""
    real_open = builtins.open

    def stepped_open(path, mode="r", *args, **kwargs):
        if str(path) == "/proc/stat":
            with real_open(path, "rb") as f:
                lines = f.read().splitlines(keepends=True)
            data = b"".join(b"btime %d\n" % (int(line.split()[1]) + seconds) if line.startswith(b"btime ") else line
                            for line in lines)
            return io.BytesIO(data) if "b" in mode else io.StringIO(data.decode())
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", stepped_open)


def live_record(tmp_path: Path) -> tuple[Path, dict]:
    """A session record written by the real code for this (live) process, left `running`."""
    project = tmp_path / "project"
    project.mkdir()
    session = records.Session.create(tool="demo", transport="demo", argv=["demo"], executable="/bin/true",
                                     cwd=project, project_root=project, env=dict(os.environ), mode="pipe")
    return session.root, json.loads((session.dir / "session.json").read_text())


@needs_proc
@pytest.mark.parametrize("seconds", [3600, -3600, 2])
def test_a_clock_step_keeps_the_live_owner_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 seconds: int) -> None:
    _, record = live_record(tmp_path)
    assert owner_alive(record)
    step_the_clock(monkeypatch, seconds)
    assert owner_alive(record), "a wall-clock step made the live session's owner look gone"


@needs_proc
def test_a_clock_step_does_not_get_a_live_session_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, record = live_record(tmp_path)
    step_the_clock(monkeypatch, 3600)
    assert sweep_abandoned(root, "01SOMEONEELSE") == []
    assert json.loads((root / record["id"] / "session.json").read_text())["state"] == "running"
    assert (root / RUNNING_DIR / f"{record['id']}.lock").exists()


def test_another_start_of_the_same_pid_is_still_told_apart() -> None:
    """A reused pid has another start (other ticks, or another boot): not the owner."""
    mine = portable.process_start_key(os.getpid())
    assert mine is not None
    assert owner_alive({"pid": os.getpid(), "pid_start": mine})
    assert not owner_alive({"pid": os.getpid(), "pid_start": mine + "0"})
    assert not owner_alive({"pid": os.getpid(), "pid_start": "another-boot:" + mine.rpartition(":")[2]})
