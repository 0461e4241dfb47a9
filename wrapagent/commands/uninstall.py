"""`wrapagent uninstall`: remove what wrapagent created, so `pip uninstall` leaves nothing.

`pip uninstall wrapagent` removes the package only. What wrapagent itself
wrote lives elsewhere: the shims (which then fail, clearly, on every
`codex`), the state folder (session records, `trust.json`), and in every
project where a session ran, the checkpoint refs `refs/wrapagent/…` and the
private index folder `<git dir>/wrapagent/`. The projects are known from the
session records (each names its project and its checkpoints' repository), so
they are read before the state folder goes.

Like other tools that install shims, the shims go at once; the history
(state folder and per-project refs) only after a yes at the terminal or
`--yes`, because a session history cannot be brought back. The user's
configuration (`~/.config/wrapagent/`) is theirs: it stays unless `--config`
is given.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Mapping

from wrapagent import paths
from wrapagent.commands import shims as shims_mod

WRAPAGENT_REFS = "refs/wrapagent/"
RECORD_NAME = "session.json"


@dataclass
class Project:
    """One repository where wrapagent left refs or its private index folder."""

    top: str
    git_dir: str
    refs: list[str] = field(default_factory=list)

    @property
    def private_dir(self) -> str:
        return os.path.join(self.git_dir, "wrapagent")


@dataclass
class Plan:
    shim_dir: Path
    shims: list[str]
    state_dir: Path
    config_dir: Path
    projects: list[Project]
    running: list[str]  # markers of sessions that may still be running

    @property
    def has_history(self) -> bool:
        return self.state_dir.exists() or bool(self.projects)


def known_project_roots(env: Mapping[str, str]) -> list[str]:
    """Every project and checkpoint repository named by a session record, in first-seen order."""
    seen: dict[str, None] = {}
    for root in paths.all_sessions_roots(env):
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            record = _read_record(os.path.join(entry.path, RECORD_NAME)) if entry.is_dir() else None
            if not record:
                continue
            for value in (record.get("project_root"), (record.get("checkpoints") or {}).get("repo")):
                if isinstance(value, str) and os.path.isabs(value):
                    seen.setdefault(os.path.normpath(value), None)
    return list(seen)


def _read_record(path: str) -> dict | None:
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find_projects(roots: list[str], env: Mapping[str, str]) -> list[Project]:
    """The repositories among `roots` that still hold something of wrapagent's."""
    from wrapagent.history.checkpoints import CheckpointError, Repo, git

    found: dict[str, Project] = {}
    for root in roots:
        if not os.path.isdir(root):
            continue
        try:
            repo = Repo.find(root, env=env)
        except CheckpointError:
            repo = None
        if repo is None or repo.git_dir in found:
            continue
        try:
            proc = git(repo.top, ["for-each-ref", "--format=%(refname)", WRAPAGENT_REFS], env=env)
            refs = proc.stdout.decode("utf-8", "surrogateescape").split()
        except CheckpointError:
            refs = []
        project = Project(repo.top, repo.git_dir, refs)
        if refs or os.path.isdir(project.private_dir):
            found[repo.git_dir] = project
    return list(found.values())


def make_plan(env: Mapping[str, str], shim_dir: str | None = None) -> Plan:
    folder = shims_mod.resolve_shim_dir(shim_dir, env)
    state = paths.state_dir(env)
    running = []
    for root in paths.all_sessions_roots(env):
        marker_dir = root / ".running"
        if marker_dir.is_dir():
            running.extend(sorted(p.stem for p in marker_dir.glob("*.lock")))
    return Plan(folder, shims_mod.installed_shims(folder), state, paths.config_dir(env),
                find_projects(known_project_roots(env), env), running)


def describe(plan: Plan, *, with_config: bool) -> list[str]:
    """What would go, one line each, for the user to read before saying yes."""
    lines = []
    if plan.shims:
        lines.append(f"shims in {plan.shim_dir}: {', '.join(plan.shims)}")
    if plan.state_dir.exists():
        lines.append(f"state folder {plan.state_dir} (session records, trust.json)")
    for project in plan.projects:
        what = [f"{len(project.refs)} ref(s) under {WRAPAGENT_REFS}"] if project.refs else []
        if os.path.isdir(project.private_dir):
            what.append(project.private_dir)
        lines.append(f"in {project.top}: {' and '.join(what)}")
    if plan.config_dir.exists():
        lines.append(f"config {plan.config_dir}" + ("" if with_config else "  (kept; --config removes it)"))
    return lines


def remove_history(plan: Plan, env: Mapping[str, str], out: IO[str]) -> int:
    """Delete the per-project refs and private folders, then the state folder; 0 or 1."""
    from wrapagent.history.checkpoints import CheckpointError, git

    failed = 0
    for project in plan.projects:
        if project.refs:
            commands = "".join(f"delete {ref}\n" for ref in project.refs).encode("utf-8", "surrogateescape")
            try:
                git(project.top, ["update-ref", "--stdin"], env=env, input=commands)
            except CheckpointError as exc:
                print(f"  {project.top}: {exc}", file=out)
                failed = 1
        _rmtree(Path(project.private_dir), out)
        print(f"removed wrapagent's refs and {project.private_dir} in {project.top}", file=out)
    if plan.state_dir.exists():
        failed |= _rmtree(plan.state_dir, out)
        print(f"removed {plan.state_dir}", file=out)
    return failed


def _rmtree(path: Path, out: IO[str]) -> int:
    if not path.exists() and not path.is_symlink():
        return 0
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)
    except OSError as exc:
        print(f"  cannot remove {path}: {exc.strerror or exc}", file=out)
        return 1
    return 0


def _remove_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass  # not empty or not there: someone else's files stay


def _confirm(stdin: IO[str], out: IO[str]) -> bool:
    try:
        interactive = stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        return False
    out.write("Remove them? This deletes the session history. [y/N] ")
    out.flush()
    return stdin.readline().strip().lower() in ("y", "yes")


def cmd_uninstall(*, yes: bool, dry_run: bool, with_config: bool, shim_dir: str | None,
                  stdin: IO[str], out: IO[str], env: Mapping[str, str] | None = None) -> int:
    """`wrapagent uninstall [--yes] [--dry-run] [--config] [--dir DIR]`; returns the exit code."""
    env = os.environ if env is None else env
    plan = make_plan(env, shim_dir)
    lines = describe(plan, with_config=with_config)
    if not lines:
        print("nothing of wrapagent's to remove", file=out)
    else:
        print("wrapagent created:", file=out)
        for line in lines:
            print(f"  {line}", file=out)
    if plan.running:
        print(f"note: {len(plan.running)} session(s) may still be running ({', '.join(plan.running)}); "
              "end them first, or they write their records again", file=out)
    if dry_run:
        print("(dry run: nothing removed)", file=out)
        return 0
    status = 0
    if plan.shims:
        report = shims_mod.uninstall_shims(plan.shims, shim_dir=plan.shim_dir, env=env)
        print(f"removed the shims: {', '.join(report.removed)}", file=out)
    _remove_empty(paths.data_dir(env))
    history = plan.has_history or (with_config and plan.config_dir.exists())
    if history:
        if yes or _confirm(stdin, out):
            status |= remove_history(plan, env, out)
            if with_config and plan.config_dir.exists():
                status |= _rmtree(plan.config_dir, out)
                print(f"removed {plan.config_dir}", file=out)
        else:
            print("kept the session history and the state folder (`wrapagent uninstall --yes` removes them)",
                  file=out)
            status = 1
    print("Last: remove the package (python3 -m pip uninstall wrapagent, or pipx / uv tool uninstall), "
          "and the shims' PATH line or the `wrapagent init` aliases from your shell rc.", file=out)
    return status
