"""A pre_run hook exiting 2 refuses the launch: no tool, one line, exit 2, a committed `blocked` record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def write_hooks(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def hooks_toml(tmp_path: Path, pre_run: str) -> str:
    """pre_run as given; post_run and session_complete leave markers (the latter also commits)."""
    (tmp_path / "pre.sh").write_text(pre_run)
    return (
        f'[pre_run]\ncommand = "sh {tmp_path}/pre.sh"\n'
        f'[post_run]\ncommand = "touch {tmp_path}/post_run.ran"\n'
        f'[session_complete]\ncommand = "touch {tmp_path}/complete.ran; cd {{sessions_root}} && '
        "git add {session_id}/ && git commit -q -m 'session {session_id} complete'\"\n"
    )


def only_record() -> tuple[dict, Path]:
    state = Path(os.environ["XDG_STATE_HOME"])
    (path,) = state.glob("wrapagent/projects/*/*/session.json")
    return json.loads(path.read_text()), path


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def run_pipe(tmp_path: Path, *tool: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", *tool], cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def assert_blocked(tmp_path: Path, reason: str) -> None:
    assert not (tmp_path / "tool.ran").exists()
    assert not (tmp_path / "post_run.ran").exists()
    assert (tmp_path / "complete.ran").exists()
    record, path = only_record()
    assert record["state"] == "blocked" and record["blocked_reason"] == reason
    assert record["exit_code"] is None and record["ended_at"]
    assert [h["name"] for h in record["hooks"]] == ["pre_run", "session_complete"]
    assert record["hooks"][0]["exit_code"] == 2
    root = path.parent.parent
    assert f"session {record['id']} complete" in git(root, "log", "--format=%s")
    assert git(root, "ls-files", f"{record['id']}/session.json").strip()


@pytest.mark.parametrize("script, reason", [
    ("echo 'noise on stdout'; echo 'on main with a dirty tree: commit or stash first' >&2; exit 2",
     "on main with a dirty tree: commit or stash first"),
    ("printf 'refused\\n  by policy  \\n'; exit 2", "refused / by policy"),
    ("exit 2", "no reason given"),
    ("printf 'bad \\033]0;title\\007 esc\\n' >&2; exit 2", "bad  esc"),
])
def test_pipe_mode_refusal(tmp_path: Path, script: str, reason: str) -> None:
    write_hooks(hooks_toml(tmp_path, script))
    proc = run_pipe(tmp_path, "sh", "-c", f"touch {tmp_path}/tool.ran")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == f"wrapagent: pre_run refused to start sh: {reason}\n"
    assert_blocked(tmp_path, reason)


@pytest.mark.parametrize("code", [1, 3, 130])
def test_other_failures_stay_fail_open(tmp_path: Path, code: int) -> None:
    write_hooks(hooks_toml(tmp_path, f"echo nope >&2; exit {code}"))
    proc = run_pipe(tmp_path, "sh", "-c", f"touch {tmp_path}/tool.ran; exit 5")
    assert proc.returncode == 5
    assert (tmp_path / "tool.ran").exists() and (tmp_path / "post_run.ran").exists()
    assert f"pre_run: exit {code}" in proc.stderr and "refused" not in proc.stderr
    record, _ = only_record()
    assert record["state"] == "finished" and "blocked_reason" not in record


def test_timed_out_pre_run_is_not_a_refusal(tmp_path: Path) -> None:
    (tmp_path / "pre.sh").write_text("exec sleep 30\n")
    write_hooks(f'[pre_run]\ncommand = "sh {tmp_path}/pre.sh"\ntimeout_secs = 0.2\n')
    proc = run_pipe(tmp_path, "sh", "-c", f"touch {tmp_path}/tool.ran")
    assert proc.returncode == 0 and (tmp_path / "tool.ran").exists()
    assert "pre_run: timed out" in proc.stderr


def test_pty_mode_refusal(tmp_path: Path, run_wrapagent) -> None:
    """At a terminal: the tool never takes the screen, the line is readable, exit 2."""
    write_hooks(hooks_toml(tmp_path, "echo 'protected branch main is dirty' >&2; exit 2"))
    child = run_wrapagent("sh", "-c", f"touch {tmp_path}/tool.ran", cwd=tmp_path, timeout=60)
    assert child.finish(timeout=60) == 2
    lines = [line for line in child.output.decode().split("\r\n") if line]
    assert lines == ["wrapagent: pre_run refused to start sh: protected branch main is dirty"]
    assert_blocked(tmp_path, "protected branch main is dirty")


def test_sessions_list_shows_blocked(tmp_path: Path) -> None:
    write_hooks(hooks_toml(tmp_path, "exit 2"))
    assert run_pipe(tmp_path, "true").returncode == 2
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "sessions", "list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    header, row = proc.stdout.splitlines()
    assert row.split()[-2] == "blocked"
