"""git and other programs for the built-ins: never an exception, never past the deadline, discovery on disk."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from wrapagent.hooks.builtins import gitrun

LATER = 120.0  # a generous deadline (seconds from now): only a broken kill gets near it


def test_a_program_runs_with_its_output_and_code(tmp_path: Path) -> None:
    out = gitrun.run([sys.executable, "-c", "import os; print(os.getcwd()); raise SystemExit(3)"], tmp_path,
                     time.monotonic() + LATER)
    assert (out.code, out.text.strip(), out.truncated) == (3, str(tmp_path), False)


def test_a_cap_on_the_output_stops_the_program_and_says_so(tmp_path: Path) -> None:
    out = gitrun.run(["yes"], tmp_path, time.monotonic() + LATER, limit=1000)
    assert (out.code, len(out.text), out.truncated) == (0, 1000, True)


def test_a_missing_program_a_passed_deadline_or_a_hang_is_none(tmp_path: Path) -> None:
    assert gitrun.run([str(tmp_path / "nope")], tmp_path, time.monotonic() + LATER) is None
    assert gitrun.run(["true"], tmp_path, time.monotonic() - 1) is None
    assert gitrun.run(["sleep", "300"], tmp_path, time.monotonic() + 1) is None


def test_git_gives_stdout_on_success_and_none_otherwise(tmp_path: Path) -> None:
    assert gitrun.git(("rev-parse", "--is-inside-work-tree"), tmp_path, time.monotonic() + LATER) is None
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert gitrun.git(("rev-parse", "--is-inside-work-tree"), tmp_path, time.monotonic() + LATER) == "true\n"
    assert gitrun.git(("log",), tmp_path, time.monotonic() + LATER) is None  # no commit yet: git fails


def test_the_repository_is_found_on_disk_from_a_subfolder_and_a_worktree_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    assert gitrun.find_dot_git(repo / "a" / "b") == repo / ".git"
    linked = tmp_path / "wt"
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")
    assert gitrun.find_dot_git(linked) == linked / ".git"
    assert gitrun.git_dir(linked) == repo / ".git" / "worktrees" / "wt"
    assert gitrun.git_dir(repo / "a") == repo / ".git"


def test_a_jj_repository_is_told_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / ".jj").mkdir()
    assert gitrun.is_jj_repo(tmp_path / "sub")
    (tmp_path / "sub" / ".git").mkdir(parents=True)  # a git repository inside it: git's, not jj's
    assert not gitrun.is_jj_repo(tmp_path / "sub" / "deeper")
