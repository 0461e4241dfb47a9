"""`wrapagent uninstall` on a scratch HOME: after it, nothing of wrapagent's is left.

Set up as a user would have it after a day: a session recorded in a git
project (checkpoint refs, `.git/wrapagent/`), shims, a starter config, a
trusted project hooks file. Before issue 23 there was no such command
(`wrapagent uninstall` ran a program named `uninstall`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wrapagent_argv


@pytest.fixture
def day_one(tmp_path: Path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "WRAPAGENT_", "GIT_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    (tmp_path / "gitconfig").write_text("[user]\n\tname = t\n\temail = t@t\n[init]\n\tdefaultBranch = main\n")

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True,
                              text=True).stdout

    def wa(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run([*wrapagent_argv(), *args], cwd=project, env=env, input=stdin,
                              capture_output=True, text=True, timeout=120)

    git("init", "-q")
    (project / "file.txt").write_text("one\n")
    git("add", "file.txt")
    git("commit", "-qm", "first")
    git("branch", "topic")
    (project / "file.txt").write_text("two\n")  # the user's uncommitted edit

    assert wa("demo", "-p", stdin="hello\n").returncode == 0
    assert wa("shims", "install").returncode == 0
    assert wa("config", "init").returncode == 0
    (project / ".wrapagent").mkdir()
    (project / ".wrapagent" / "hooks.toml").write_text('[pre_run]\ncommand = "true"\n')
    from wrapagent.hooks.trust import TrustStore

    hooks = project / ".wrapagent" / "hooks.toml"
    TrustStore(env={"HOME": str(home)}).trust(hooks, hooks.read_bytes())

    assert git("for-each-ref", "refs/wrapagent/").strip()
    assert (project / ".git" / "wrapagent").is_dir()
    assert (home / ".local" / "state" / "wrapagent" / "trust.json").is_file()
    return home, project, git, wa


def _files_under(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if not p.is_dir())


def _dirs_under(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_dir())


def test_dry_run_removes_nothing(day_one):
    home, project, git, wa = day_one
    before = _files_under(home)
    result = wa("uninstall", "--dry-run")
    assert result.returncode == 0
    assert "2 ref(s) under refs/wrapagent/" in result.stdout
    assert _files_under(home) == before and git("for-each-ref", "refs/wrapagent/").strip()


def test_without_a_terminal_or_yes_only_the_shims_go(day_one):
    home, project, git, wa = day_one
    result = wa("uninstall")
    assert result.returncode == 1  # not everything was removed: a script can tell
    assert not (home / ".local" / "share" / "wrapagent").exists()
    assert (home / ".local" / "state" / "wrapagent" / "trust.json").is_file()
    assert git("for-each-ref", "refs/wrapagent/").strip()
    assert "--yes" in result.stdout


def test_yes_leaves_nothing_behind_and_the_users_repository_as_it_was(day_one):
    home, project, git, wa = day_one
    heads = git("for-each-ref", "refs/heads/")
    status = git("status", "--porcelain")
    result = wa("uninstall", "--yes", "--config")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _files_under(home) == []
    # only the empty XDG base folders remain (other programs use them too)
    assert _dirs_under(home) == [".config", ".local", ".local/share", ".local/state"]
    assert git("for-each-ref", "refs/wrapagent/") == ""
    assert not (project / ".git" / "wrapagent").exists()
    assert git("for-each-ref", "refs/heads/") == heads and git("status", "--porcelain") == status
    assert (project / ".wrapagent" / "hooks.toml").is_file()  # the project's own file stays
    assert (project / "file.txt").read_text() == "two\n"
    again = wa("uninstall", "--yes")
    assert again.returncode == 0 and "nothing of wrapagent's to remove" in again.stdout


def test_config_is_kept_without_the_flag(day_one):
    home, project, git, wa = day_one
    assert wa("uninstall", "--yes").returncode == 0
    assert _files_under(home) == [".config/wrapagent/hooks.toml"]


def test_the_last_step_names_install_sh_for_its_private_virtualenv(tmp_path):
    from wrapagent.commands.uninstall import package_removal

    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    private = tmp_path / "data" / "wrapagent" / "venv"
    assert "./install.sh --uninstall" in package_removal(env, prefix=str(private))
    assert package_removal(env, prefix=str(tmp_path / "other-venv")).startswith("python3 -m pip uninstall")
