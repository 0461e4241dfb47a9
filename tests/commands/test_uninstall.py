"""`wrapagent uninstall` on a scratch HOME: after it, nothing of wrapagent's is left.

Set up as a user would have it after a day: a session recorded in a git
project (its checkpoints in wrapagent's own store), shims, a starter config,
a trusted project hooks file. Records of an earlier release name checkpoint
refs in the user's repository: only those, holding the recorded commits,
in the recorded repository, go.
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

    assert git("for-each-ref", "refs/wrapagent/") == ""  # the user's repository is only read
    assert not (project / ".git" / "wrapagent").exists()
    assert list((home / ".local" / "state" / "wrapagent" / "stores").iterdir())
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
    assert "checkpoint stores" in result.stdout
    assert _files_under(home) == before


def test_without_a_terminal_or_yes_only_the_shims_go(day_one):
    home, project, git, wa = day_one
    result = wa("uninstall")
    assert result.returncode == 1  # not everything was removed: a script can tell
    assert not (home / ".local" / "share" / "wrapagent").exists()
    assert (home / ".local" / "state" / "wrapagent" / "trust.json").is_file()
    assert list((home / ".local" / "state" / "wrapagent" / "stores").iterdir())
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


def _legacy_record(home: Path, project: Path, git, sid: str) -> dict:
    """A record as an earlier release wrote it: its checkpoints are refs in the user's repository."""
    import json

    head = git("rev-parse", "HEAD").strip()
    for which in ("before", "after"):
        git("update-ref", f"refs/wrapagent/checkpoints/{sid}/{which}", head)
    record = {"id": sid, "project_root": str(project), "checkpoints": {
        "status": "taken", "repo": str(project), "git_dir": str(project / ".git"),
        "ref": f"refs/wrapagent/checkpoints/{sid}", "before": head, "after": head}}
    [root] = (home / ".local" / "state" / "wrapagent" / "projects").iterdir()
    (root / sid).mkdir()
    (root / sid / "session.json").write_text(json.dumps(record))
    return record


def test_an_earlier_releases_refs_go_only_as_recorded(day_one):
    """Only `refs/wrapagent/checkpoints/<recorded id>/…` holding the recorded commit goes; the
    user's own notes under refs/wrapagent/ and a ref that moved since stay."""
    home, project, git, wa = day_one
    _legacy_record(home, project, git, "01LEGACY0000000000000000AA")
    git("update-ref", "refs/wrapagent/notes/mine", "HEAD")  # not wrapagent's, although under its name
    git("update-ref", "refs/wrapagent/checkpoints/01OTHER/before", "HEAD")  # no record names it
    (project / ".git" / "wrapagent").mkdir()
    (project / ".git" / "wrapagent" / "notes.txt").write_text("someone's notes\n")
    result = wa("uninstall", "--yes")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "removed 2 checkpoint ref(s)" in result.stdout
    left = git("for-each-ref", "--format=%(refname)", "refs/wrapagent/").split()
    assert left == ["refs/wrapagent/checkpoints/01OTHER/before", "refs/wrapagent/notes/mine"]
    assert (project / ".git" / "wrapagent" / "notes.txt").read_text() == "someone's notes\n"


def test_uninstall_after_the_project_became_a_link_to_another_repository(day_one, tmp_path: Path):
    """Before: uninstall followed the recorded path into the other repository and deleted its
    `refs/wrapagent/*` and `.git/wrapagent/`. Now that repository is not touched at all."""
    home, project, git, wa = day_one
    _legacy_record(home, project, git, "01LEGACY0000000000000000BB")
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(["git", "-C", str(other), "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-q",
                    "--allow-empty", "-m", "o"], check=True)
    subprocess.run(["git", "-C", str(other), "update-ref", "refs/wrapagent/checkpoints/01LEGACY0000000000000000BB/before",
                    "HEAD"], check=True)
    (other / ".git" / "wrapagent").mkdir()
    (other / ".git" / "wrapagent" / "notes.txt").write_text("theirs\n")
    moved = tmp_path / "moved"
    project.rename(moved)
    project.symlink_to(other)
    result = wa("uninstall", "--yes")
    assert result.returncode == 0, result.stdout + result.stderr
    refs = subprocess.run(["git", "-C", str(other), "for-each-ref", "refs/wrapagent/"], capture_output=True,
                          text=True, check=True).stdout
    assert "01LEGACY0000000000000000BB/before" in refs
    assert (other / ".git" / "wrapagent" / "notes.txt").read_text() == "theirs\n"


def test_the_last_step_names_install_sh_for_its_private_virtualenv(tmp_path):
    from wrapagent.commands.uninstall import package_removal

    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    private = tmp_path / "data" / "wrapagent" / "venv"
    assert "./install.sh --uninstall" in package_removal(env, prefix=str(private))
    assert package_removal(env, prefix=str(tmp_path / "other-venv")).startswith("python3 -m pip uninstall")
