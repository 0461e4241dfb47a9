"""Real temporary repositories and session records for the checkpoint and undo tests (tests/security/).

A "session" here is what the lifecycle does around the tool: the `before`
checkpoint, the agent's work (a Python function), the `after` checkpoint,
and the record written where `wrapagent sessions` reads it. The commands are
run in-process with the folder they are "typed" in (`cwd`).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Callable

from wrapagent import paths
from wrapagent.hooks.config_model import CheckpointSettings
from wrapagent.history import checkpoints
from wrapagent.history.ids import CROCKFORD

_clock = [0]


def session_id(at: float | None = None) -> str:
    """A ULID at `at` (epoch seconds), strictly after every id made before: the newest is the last made."""
    ms = int((dt.datetime.now().timestamp() if at is None else at) * 1000)
    ms = max(ms, _clock[0] + 1) if at is None else ms
    _clock[0] = max(_clock[0], ms)
    value = ms << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat()


def isolated_env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WRAPAGENT_", "XDG_", "GIT_"))}
    env.update(HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "config"),
               XDG_STATE_HOME=str(base / "state"), XDG_DATA_HOME=str(base / "data"),
               GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@example.invalid", GIT_PAGER="cat")
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode("utf-8", "surrogateescape")


def in_store(info: dict, env: dict[str, str], *args: str) -> str:
    """git on a session's checkpoint store (wrapagent's own git directory; the project its work tree)."""
    return git(Path(info["repo"]), env, f"--git-dir={info['store']}", f"--work-tree={info['repo']}", *args)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_repo(path: Path, env: dict[str, str], files: dict[str, str] | None = None,
              ignore: str = ".env\n*.log\n") -> Path:
    """A repository with one commit of `files` (and a .gitignore)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, env, "init", "-q", "-b", "main")
    write(path / ".gitignore", ignore)
    for name, text in (files or {"README.md": "readme\n", "src/app.py": "print('app')\n"}).items():
        write(path / name, text)
    git(path, env, "add", "-A")
    git(path, env, "commit", "-q", "-m", "initial")
    return path.resolve()


def start_session(repo: Path, env: dict[str, str], *, cwd: Path | None = None,
                  settings: CheckpointSettings | None = None, **fields) -> dict:
    """A session's record after its `before` checkpoint (the tool would start now)."""
    settings = settings or CheckpointSettings(budget_secs=60)
    cwd = (cwd or repo).resolve()
    project = Path(paths.project_root_of(str(cwd)))
    # an agent's session (`last` means the newest of those): codex stands in, nothing runs it
    record = {"id": session_id(), "tool": "codex", "transport": "codex", "cwd": str(cwd),
              "project_root": str(project), "depth": 0, "parent_session": None,
              "started_at": iso(dt.datetime.now().timestamp()), "state": "finished", **fields}
    checkpoints.begin(record, settings, project, env)
    record["_settings"] = settings
    return record


def finish_session(record: dict, env: dict[str, str]) -> dict:
    """The `after` checkpoint, `ended_at`, and the record saved where `sessions` reads it."""
    checkpoints.end(record, record.pop("_settings"), record["project_root"], env)
    record["ended_at"] = iso(dt.datetime.now().timestamp())
    save_record(record, env)
    return record


def run_session(repo: Path, env: dict[str, str], work: Callable[[Path], None] = lambda r: None,
                **kwargs) -> dict:
    """before → work → after, then the record saved in the project's sessions folder; the record."""
    record = start_session(repo, env, **kwargs)
    work(repo)
    return finish_session(record, env)


def save_record(record: dict, env: dict[str, str]) -> Path:
    folder = paths.sessions_root(record["project_root"], env) / record["id"]
    folder.mkdir(parents=True, exist_ok=True)
    data = {k: v for k, v in record.items() if k != "_dir"}
    (folder / "session.json").write_text(json.dumps(data, indent=2))
    record["_dir"] = str(folder)
    return folder


def load_record(record: dict) -> dict:
    return json.loads((Path(record["_dir"]) / "session.json").read_text())


def sessions(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """`wrapagent sessions ARGS` typed in `cwd`: (exit code, stdout, stderr)."""
    from wrapagent.commands import sessions as sessions_cmd

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)  # also where the process is, as when typed in a shell
    try:
        code = sessions_cmd.main(list(args), out=out, err=err, env=env, cwd=str(cwd))
    finally:
        os.chdir(here)
    return code, out.getvalue(), err.getvalue()


def tree_files(repo: Path) -> dict[str, object]:
    """Every path of the work tree outside .git, ignored ones included: bytes, link target or `dir`."""
    out: dict[str, object] = {}
    for folder, dirs, files in os.walk(repo):
        rel = os.path.relpath(folder, repo)
        if rel.split(os.sep)[0] == ".git":
            continue
        for name in dirs:
            path = os.path.join(folder, name)
            key = os.path.normpath(os.path.join(rel, name))
            if key == ".git":
                continue
            out[key] = ("link", os.readlink(path)) if os.path.islink(path) else "dir"
        for name in files:
            path = os.path.join(folder, name)
            key = os.path.normpath(os.path.join(rel, name))
            if os.path.islink(path):
                out[key] = ("link", os.readlink(path))
            else:
                with open(path, "rb") as f:
                    out[key] = (f.read(), os.stat(path).st_mode & 0o777)
    return out


def user_state(repo: Path, env: dict[str, str]) -> dict[str, object]:
    """What the user sees of their repository: config, refs (not wrapagent's), index bytes, status, files."""
    git_dir = Path(git(repo, env, "rev-parse", "--absolute-git-dir").strip())
    refs = [line for line in git(repo, env, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if not line.startswith("refs/wrapagent/")]
    return {
        "config": (git_dir / "config").read_bytes(),
        "head": git(repo, env, "rev-parse", "HEAD"),
        "refs": refs,
        "index": (git_dir / "index").read_bytes() if (git_dir / "index").exists() else None,
        "status": git(repo, env, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored"),
        "files": tree_files(repo),
    }
