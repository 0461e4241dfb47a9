"""Undo says in one line each what it leaves: the index's staging of its files, the session's commits."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkpoint_world import git, isolated_env, make_repo, run_session, sessions, write


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path / "iso")


def notes(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("note: ")]


def test_a_staged_deletion_is_named_by_undo_and_its_dry_run(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"README.md": "readme\n", "a.txt": "a\n"})
    run_session(repo, env, lambda r: git(r, env, "rm", "-q", "README.md"))

    code, out, err = sessions(env, repo, "undo", "last", "--dry-run")
    assert code == 0, err
    [line] = notes(out)
    assert line.startswith("note: the index stages changes to 1 of these files (D README.md): undo would leave")

    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert (repo / "README.md").read_text() == "readme\n"
    [line] = notes(out)
    assert line.startswith("note: the index stages changes to 1 of these files (D README.md): undo leaves")
    assert "git restore --staged -- PATH" in line
    # what the note describes is what git status shows
    status = git(repo, env, "status", "--porcelain")
    assert "D  README.md" in status and "?? README.md" in status


def test_commits_made_during_the_session_are_named(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"a.txt": "a\n"})
    start = git(repo, env, "rev-parse", "HEAD").strip()

    def agent(r: Path) -> None:
        for n in (1, 2):
            write(r / f"f{n}.txt", f"{n}\n")
            git(r, env, "add", f"f{n}.txt")
            git(r, env, "commit", "-q", "-m", f"agent commit {n}")

    run_session(repo, env, agent)
    end = git(repo, env, "rev-parse", "HEAD").strip()
    code, out, err = sessions(env, repo, "undo", "last", "--dry-run")
    assert code == 0, err
    assert notes(out) == [f"note: the 2 commit(s) made during the session would stay (HEAD went from "
                          f"{start[:12]} to {end[:12]}): undo changes files only "
                          f"(`git log {start[:12]}..{end[:12]}` lists them)"]
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert not (repo / "f1.txt").exists()
    assert [n[:60] for n in notes(out)] == ["note: the 2 commit(s) made during the session stay (HEAD went"[:60]]
    assert git(repo, env, "rev-parse", "HEAD").strip() == end  # undo moved no branch


def test_nothing_left_means_no_note(tmp_path: Path, env) -> None:
    repo = make_repo(tmp_path / "proj", env, {"a.txt": "a\n"})
    run_session(repo, env, lambda r: write(r / "a.txt", "agent\n"))
    code, out, err = sessions(env, repo, "undo", "last")
    assert code == 0, err
    assert notes(out) == []
