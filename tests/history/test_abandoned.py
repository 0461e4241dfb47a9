"""A wrapagent killed with SIGKILL leaves a `running` record; the next session marks it `abandoned` and commits it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from wrapagent.history import records
from wrapagent.portable import process_start_time
from wrapagent.history.records import RUNNING_DIR, owner_alive, sweep_abandoned

from waiting import wait_for

WAIT = 60.0  # generous: a loaded machine starts Python slowly


def sessions_roots() -> list[Path]:
    return sorted(Path(os.environ["XDG_STATE_HOME"]).glob("wrapagent/projects/*"))


def record_of(sid: str) -> dict:
    (root,) = sessions_roots()
    return json.loads((root / sid / "session.json").read_text())


def git_subjects(root: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True,
                          text=True, check=True).stdout.splitlines()


def start_session(tmp_path: Path, script: str) -> subprocess.Popen:
    """wrapagent (pipe mode) running `sh -c script`, in its own process group for cleanup."""
    return subprocess.Popen([sys.executable, "-m", "wrapagent", "sh", "-c", script], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def only_running_marker() -> str:
    (root,) = sessions_roots()
    (marker,) = (root / RUNNING_DIR).iterdir()
    return marker.name[: -len(".lock")]


@pytest.fixture
def killed_session(tmp_path: Path):
    """A session whose wrapagent got SIGKILL while the tool ran; yields its id."""
    proc = start_session(tmp_path, "echo started; exec sleep 120")
    try:
        assert proc.stdout.readline() == b"started\n"
        sid = wait_for(lambda: sessions_roots() and only_running_marker(), "the running marker")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=WAIT)
        yield sid
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the orphaned tool
        except ProcessLookupError:
            pass
        proc.wait(timeout=WAIT)
        proc.stdout.close()
        proc.stderr.close()


def test_sigkilled_session_is_marked_abandoned_and_committed(tmp_path: Path, killed_session: str) -> None:
    sid = killed_session
    before = record_of(sid)
    assert before["state"] == "running" and before["pid"] > 0
    (root,) = sessions_roots()
    mtimes = [(root / sid / name).stat().st_mtime for name in ("session.json", "session.log")
              if (root / sid / name).exists()]

    nxt = subprocess.run([sys.executable, "-m", "wrapagent", "true"], cwd=tmp_path,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=WAIT)
    assert nxt.returncode == 0 and nxt.stderr == ""

    after = record_of(sid)
    assert after["state"] == "abandoned"
    from datetime import datetime

    assert datetime.fromisoformat(after["ended_at"]).timestamp() == pytest.approx(max(mtimes), abs=1e-3)
    assert after["duration_s"] >= 0 and any("abandoned" in w for w in after["warnings"])
    assert f"session {sid} abandoned" in git_subjects(root)
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--ignored=no"],
                            capture_output=True, text=True, check=True).stdout
    assert status == ""  # both sessions committed, markers ignored
    assert list((root / RUNNING_DIR).iterdir()) == []

    listing = subprocess.run([sys.executable, "-m", "wrapagent", "sessions", "list"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=WAIT).stdout
    row = next(line for line in listing.splitlines() if line.split() and sid.startswith(line.split()[0]))  # the shortest unique prefix
    assert row.split()[-2] == "abandoned"


def test_a_live_session_is_left_alone(tmp_path: Path) -> None:
    proc = start_session(tmp_path, "echo started; exec sleep 120")
    try:
        assert proc.stdout.readline() == b"started\n"
        sid = wait_for(lambda: sessions_roots() and only_running_marker(), "the running marker")
        nxt = subprocess.run([sys.executable, "-m", "wrapagent", "true"], cwd=tmp_path,
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=WAIT)
        assert nxt.returncode == 0
        assert record_of(sid)["state"] == "running"
        assert only_running_marker() == sid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=WAIT)
        proc.stdout.close()
        proc.stderr.close()


def fake_running(root: Path, sid: str, **fields) -> Path:
    session_dir = root / sid
    session_dir.mkdir(parents=True)
    record = {"id": sid, "state": "running", "started_at": "2026-01-01T00:00:00+00:00",
              "warnings": [], **fields}
    (session_dir / "session.json").write_text(json.dumps(record))
    (root / RUNNING_DIR).mkdir(exist_ok=True)
    (root / RUNNING_DIR / f"{sid}.lock").touch()
    return session_dir


def test_a_reused_pid_is_not_mistaken_for_the_session(tmp_path: Path) -> None:
    """The pid is alive (this test process) but started at another time: abandoned."""
    root = tmp_path / "sessions"
    mine = process_start_time(os.getpid())
    assert mine is not None
    fake_running(root, "01REUSED", pid=os.getpid(), pid_started_at=mine - 5.0)
    fake_running(root, "01ALIVE", pid=os.getpid(), pid_started_at=mine)
    assert sweep_abandoned(root, "01ME") == ["01REUSED"]
    assert json.loads((root / "01REUSED" / "session.json").read_text())["state"] == "abandoned"
    assert json.loads((root / "01ALIVE" / "session.json").read_text())["state"] == "running"
    assert sorted(p.name for p in (root / RUNNING_DIR).iterdir()) == ["01ALIVE.lock"]


def test_stale_marker_of_an_ended_session_is_dropped_without_a_commit(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session_dir = fake_running(root, "01ENDED", pid=os.getpid())
    record = json.loads((session_dir / "session.json").read_text())
    (session_dir / "session.json").write_text(json.dumps({**record, "state": "finished"}))
    assert sweep_abandoned(root, "01ME") == []
    assert list((root / RUNNING_DIR).iterdir()) == []
    assert not (root / ".git").exists()


def test_no_markers_costs_one_listdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to look at: no lock, no git, no record read."""
    root = tmp_path / "sessions"
    (root / RUNNING_DIR).mkdir(parents=True)
    (root / RUNNING_DIR / "01ME.lock").touch()
    from wrapagent.history import sessions_repo

    monkeypatch.setattr(sessions_repo, "commit_lock", None)
    monkeypatch.setattr(records, "load_record", None)
    assert sweep_abandoned(root, "01ME") == []


def test_process_start_time_of_a_gone_process_is_none() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert process_start_time(proc.pid) is None
    assert not owner_alive({"pid": proc.pid, "pid_started_at": 1.0})
    assert owner_alive({"pid": os.getpid(), "pid_started_at": process_start_time(os.getpid())})
