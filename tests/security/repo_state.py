"""Helpers for the git-isolation tests: a clean git for the test itself, and a byte-exact
picture of a user's repository (config, refs, index, status, log) to compare before and after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WAIT = 120.0  # generous: a loaded machine starts Python and git slowly

_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
             "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CONFIG_PARAMETERS")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    env.update(extra)
    return env


def git(cwd: Path, *args: str, env: dict | None = None, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=clean_env() if env is None else env,
                          capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "User")
    git(path, "config", "user.email", "user@example.com")
    for name, text in (files or {"README": "hello\n"}).items():
        (path / name).write_text(text)
        git(path, "add", name)
    git(path, "commit", "-q", "-m", "initial")
    return path


def wrapagent_cmd() -> str:
    """A shell command that runs wrapagent one-shot on `true` (pipe mode, no terminal)."""
    return f"'{sys.executable}' -m wrapagent true </dev/null"


def install_hook(repo: Path, name: str, body: str) -> Path:
    hooks = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    hooks = (repo / hooks if not hooks.is_absolute() else hooks) / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / name
    hook.write_text("#!/bin/sh\n" + body + "\n")
    hook.chmod(0o755)
    return hook


def state(work_tree: Path) -> dict:
    """Everything of the user's repository a wrapagent run must leave as it was.

    Refs under refs/wrapagent/ (checkpoints, which the README promises) and
    `$GIT_DIR/wrapagent/` are wrapagent's own and left out; everything else
    is compared byte for byte or as git prints it.
    """
    git_dir = Path(git(work_tree, "rev-parse", "--absolute-git-dir").strip())
    common = Path(git(work_tree, "rev-parse", "--git-common-dir").strip())
    common = common if common.is_absolute() else (work_tree / common).resolve()
    index = git_dir / "index"
    out = {
        "config": (common / "config").read_bytes(),
        "HEAD": (git_dir / "HEAD").read_bytes(),
        "index": index.read_bytes() if index.exists() else None,
        "index.lock": (git_dir / "index.lock").exists(),
        "refs": [line for line in git(work_tree, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
                 if not line.startswith("refs/wrapagent/")],
        "log": git(work_tree, "log", "--exclude=refs/wrapagent/*", "--all", "--format=%H %an %s",
                   check=False).splitlines(),
        "status": git(work_tree, "status", "--porcelain=v1", "--untracked-files=all"),
        "staged": git(work_tree, "diff", "--cached", "--name-status"),
    }
    return out


def sessions_roots(env: dict) -> list[Path]:
    base = Path(env.get("XDG_STATE_HOME") or Path(env["HOME"]) / ".local" / "state")
    return sorted((base / "wrapagent" / "projects").glob("*"))


def records(root: Path) -> list[dict]:
    found = []
    for child in sorted(root.iterdir()):
        record = child / "session.json"
        if child.is_dir() and not child.name.startswith(".") and record.exists():
            found.append(json.loads(record.read_text()))
    return found


def committed_paths(root: Path) -> set[str]:
    """Files tracked at HEAD of the sessions repository (asked with its git dir named)."""
    out = git(root, f"--git-dir={root / '.git'}", f"--work-tree={root}", "ls-tree", "-r", "--name-only", "HEAD")
    return set(out.split())


def sessions_status(root: Path) -> str:
    return git(root, f"--git-dir={root / '.git'}", f"--work-tree={root}", "status", "--porcelain")
