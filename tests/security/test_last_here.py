"""`last` means the newest top-level session of the project the command is typed in.

Before: `sessions undo last` typed in project A undid project B's newer
session, and `resume last` could pick a sub-agent's session.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checkpoint_world import git, isolated_env, make_repo, run_session, save_record, session_id, sessions, write


def test_undo_last_in_project_a_undoes_a_not_the_newer_session_of_b(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    a = make_repo(tmp_path / "alpha", env)
    b = make_repo(tmp_path / "beta", env)
    run_session(a, env, lambda r: write(r / "from_a.txt", "session in A\n"))
    run_session(b, env, lambda r: write(r / "from_b.txt", "session in B\n"))  # newer

    code, out, err = sessions(env, a / "src", "undo", "last")  # typed in a subfolder of A
    assert code == 0, err
    assert not (a / "from_a.txt").exists()
    assert (b / "from_b.txt").read_text() == "session in B\n"  # B untouched
    assert "from_b.txt" not in out


def test_diff_and_show_last_are_the_projects_own(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    a = make_repo(tmp_path / "alpha", env)
    b = make_repo(tmp_path / "beta", env)
    first = run_session(a, env, lambda r: write(r / "from_a.txt", "x\n"))
    run_session(b, env, lambda r: write(r / "from_b.txt", "y\n"))
    code, out, err = sessions(env, a, "show", "last")
    assert code == 0 and out.startswith(f"session {first['id']}\n") and err == ""


class Started(Exception):
    """Raised by the stand-in for os.execve: what resume would have started."""


def test_resume_last_skips_sub_agent_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def execve(path, argv, env):
        raise Started(argv)

    monkeypatch.setattr(os, "execve", execve)
    env = isolated_env(tmp_path / "iso")
    a = make_repo(tmp_path / "alpha", env)
    top = {"id": session_id(), "tool": "codex", "transport": "codex", "cwd": str(a),
           "project_root": str(a), "depth": 0, "parent_session": None, "state": "finished"}
    save_record(top, env)
    child = {**top, "id": session_id(), "depth": 1, "parent_session": top["id"],
             "native_session_id": "CHILD-NATIVE"}
    save_record(child, env)
    # the top-level session has no native id: resuming it must say so, never start the child's
    code, out, err = sessions(env, a, "resume", "last")
    assert code == 1 and top["id"] in err and "no native session id" in err
    assert "CHILD" not in out


def test_outside_a_project_write_commands_refuse_read_only_ones_say_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def execve(path, argv, env):
        raise Started(argv)

    monkeypatch.setattr(os, "execve", execve)
    env = isolated_env(tmp_path / "iso")
    a = make_repo(tmp_path / "alpha", env)
    rec = run_session(a, env, lambda r: write(r / "from_a.txt", "x\n"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for verb in ("undo", "resume"):
        code, out, err = sessions(env, elsewhere, verb, "last")
        assert code == 1 and out == ""
        assert "no session recorded in this project" in err and str(elsewhere.resolve()) in err
    assert (a / "from_a.txt").exists()
    code, out, err = sessions(env, elsewhere, "show", "last")
    assert code == 0 and out.startswith(f"session {rec['id']}\n")
    assert "among all projects" in err and rec["id"] in err
    # an explicit id works from anywhere
    code, out, err = sessions(env, elsewhere, "undo", rec["id"])
    assert code == 0, err
    assert not (a / "from_a.txt").exists()
    assert git(a, env, "status", "--porcelain") == ""


def test_last_tilde_n_counts_the_projects_own_sessions(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    a = make_repo(tmp_path / "alpha", env)
    b = make_repo(tmp_path / "beta", env)
    oldest = run_session(a, env, lambda r: write(r / "one.txt", "1\n"))
    run_session(a, env, lambda r: write(r / "two.txt", "2\n"))
    run_session(b, env, lambda r: write(r / "from_b.txt", "b\n"))  # the newest of all
    code, out, err = sessions(env, a, "show", "last~1")
    assert code == 0 and out.startswith(f"session {oldest['id']}\n") and err == ""
    code, out, err = sessions(env, a, "undo", "last~2")
    assert code == 1 and "only 2 session(s) recorded in this project" in err
