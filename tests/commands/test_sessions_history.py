"""`sessions prune`: a look first (--dry-run), and a question before more than one session's goes."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from tests.commands.test_sessions import WRAPAGENT, history_world, run


class _Terminal(io.StringIO):
    """Typed answers on a terminal."""

    def isatty(self) -> bool:
        return True


def two_sessions(tmp_path: Path) -> dict:
    w = history_world(tmp_path)
    proc = subprocess.run([*WRAPAGENT, "sh", "-c", "echo more > more.txt"], env=w["env"], cwd=w["repo"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    store = w["record"]["checkpoints"]["store"]  # checkpoints live in wrapagent's own store, not the repository
    w["refs"] = lambda: subprocess.run(["git", f"--git-dir={store}", "for-each-ref", "--format=%(refname)",
                                        "refs/sessions/"], capture_output=True, text=True, check=True).stdout
    assert w["refs"]().count("\n") == 4
    return w


def test_dry_run_lists_and_drops_nothing(tmp_path: Path) -> None:
    w = two_sessions(tmp_path)
    code, out, _ = run(w, "prune", "--older-than", "0", "--dry-run")
    assert code == 0
    assert out.startswith("would drop the checkpoints of 2 session(s) older than 0 day(s)")
    assert "(dry run: nothing dropped)" in out and w["record"]["id"] in out
    assert w["refs"]().count("\n") == 4


def test_more_than_one_without_a_terminal_or_yes_drops_nothing(tmp_path: Path, monkeypatch) -> None:
    w = two_sessions(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # not a terminal: no answer counts
    code, out, _ = run(w, "prune", "--older-than", "0")
    assert code == 1 and "nothing dropped (--yes drops them without asking" in out
    assert w["refs"]().count("\n") == 4


@pytest.mark.parametrize("answer, dropped", [("y\n", True), ("\n", False), ("no\n", False)])
def test_at_a_terminal_it_asks(tmp_path: Path, monkeypatch, answer, dropped) -> None:
    w = two_sessions(tmp_path)
    monkeypatch.setattr("sys.stdin", _Terminal(answer))
    code, out, _ = run(w, "prune", "--older-than", "0")
    assert "this drops the checkpoints of 2 session(s)" in out and "Drop them? [y/N] " in out
    assert (code, w["refs"]() == "") == ((0, True) if dropped else (1, False))


def test_yes_drops_without_asking(tmp_path: Path, monkeypatch) -> None:
    w = two_sessions(tmp_path)
    monkeypatch.setattr("sys.stdin", _Terminal(""))
    code, out, _ = run(w, "prune", "--older-than", "0", "--yes")
    assert code == 0 and "Drop them?" not in out and w["refs"]() == ""
    assert out.startswith("dropped the checkpoints of 2 session(s)")


def test_one_session_goes_without_a_question(tmp_path: Path, monkeypatch) -> None:
    w = history_world(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, out, _ = run(w, "prune", "--older-than", "0")
    assert code == 0 and "Drop them?" not in out and w["record"]["id"] in out


def test_the_question_on_a_real_terminal(tmp_path: Path, run_wrapagent) -> None:
    w = two_sessions(tmp_path)
    child = run_wrapagent("sessions", "prune", "--older-than", "0", env=w["env"], cwd=w["repo"], timeout=60)
    child.expect_exact(b"Drop them? [y/N] ")
    child.send(b"y\r")
    assert child.finish(timeout=60) == 0
    assert b"dropped the checkpoints of 2 session(s)" in child.output
    assert w["refs"]() == ""
