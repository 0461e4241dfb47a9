"""Hooks and guards never inherit git's repository variables from a git hook that started wrapagent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
                          env=env).stdout


def test_a_configured_hook_gets_no_git_dir_or_index(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    _git(user, "init", "-q")
    (user / "a.txt").write_text("a\n")
    _git(user, "-c", "user.name=u", "-c", "user.email=u@x", "add", "a.txt")
    _git(user, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "one")
    config = tmp_path / "config" / "wrapagent"
    config.mkdir(parents=True)
    seen = tmp_path / "seen.txt"
    (config / "hooks.toml").write_text(
        "[pre_run]\ncommand = 'env | grep -E \"^GIT_(DIR|INDEX_FILE|WORK_TREE|AUTHOR_NAME)=\" "
        f"> {seen} || true'\n")
    env = dict(os.environ)
    env.update({"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
                "HOME": str(tmp_path), "GIT_DIR": str(user / ".git"), "GIT_WORK_TREE": str(user),
                "GIT_INDEX_FILE": str(user / ".git" / "index.lock"), "GIT_AUTHOR_NAME": "Someone"})
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "wrapagent", "true"], cwd=work, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # the location variables are gone; the user's identity preference stays
    assert seen.read_text().splitlines() == ["GIT_AUTHOR_NAME=Someone"]
