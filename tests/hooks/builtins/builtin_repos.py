"""Real temporary git repositories for the built-in guards' tests, and running a built-in on one.

`isolated_git` is an autouse fixture: a test module that imports it gets
repositories with no user or system git config, a fixed identity and fixed
dates, whatever machine it runs on.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from wrapagent.hooks.builtins import run_builtin
from wrapagent.hooks.context import GuardContext


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user/system git config, fixed identity and dates: reproducible repos."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(home))  # no sample hooks to copy: faster init
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Ada")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "ada@example.com")
        monkeypatch.setenv(f"GIT_{who}_DATE", "2024-05-01T12:00:00+00:00")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "advice.detachedHead=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    ).stdout


def commit(repo: Path, name: str, content: str, message: str) -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(content)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)


def make_repo(path: Path, *, commits: int = 1, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    if commits:
        commit(path, "README.md", "readme 0\n", "commit 0")
    for i in range(1, commits):  # one fork per extra commit keeps the suite fast
        git(path, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
    return path


def with_remote(tmp_path: Path) -> tuple[Path, Path]:
    """A repo tracking origin/main in a bare remote, in sync."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repo = make_repo(tmp_path / "repo")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return repo, remote


def ctx_for(root: Path, *, resume: bool = False, cwd: Path | None = None) -> GuardContext:
    return GuardContext(project_root=root, cwd=cwd or root, tool="codex", session_id="s1", is_resume=resume)


def run(name: str, root: Path, resume: bool = False, **args: object) -> str:
    return run_builtin(name, args, ctx_for(root, resume=resume), timeout=60)  # a loaded machine's git


def no_git_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))


def fake_tool(tmp_path: Path, name: str, script: str) -> Path:
    bindir = tmp_path / "fake-bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return bindir
