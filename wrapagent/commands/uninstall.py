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
from wrapagent.commands.ask import yes_at_terminal

WRAPAGENT_REFS = "refs/wrapagent/"
RECORD_NAME = "session.json"


@dataclass
class Project:
    """One repository where an earlier release left checkpoint refs a record names.

    `refs` maps each ref to the commit the record says it holds: only a ref
    still holding exactly that commit is deleted (git checks it atomically).
    """

    top: str
    git_dir: str
    refs: dict[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    shim_dir: Path
    shims: list[str]
    state_dir: Path
    config_dir: Path
    projects: list[Project]
    running: list[str]  # markers of sessions that may still be running
    stores: list[str] = field(default_factory=list)  # checkpoint stores outside the state folder

    @property
    def has_history(self) -> bool:
        return self.state_dir.exists() or bool(self.projects) or bool(self.stores)


def _records(env: Mapping[str, str]):
    """Every session record of every sessions root."""
    for root in paths.all_sessions_roots(env):
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            record = _read_record(os.path.join(entry.path, RECORD_NAME)) if entry.is_dir() else None
            if record:
                yield record


def _read_record(path: str) -> dict | None:
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded_stores(env: Mapping[str, str]) -> list[str]:
    """The checkpoint stores the records name outside the state folder (removed with it otherwise)."""
    from wrapagent.history.store import is_store

    state = os.path.realpath(paths.state_dir_str(env))
    found: dict[str, None] = {}
    for record in _records(env):
        store = (record.get("checkpoints") or {}).get("store")
        if isinstance(store, str) and os.path.isabs(store) and is_store(store):
            if not os.path.realpath(store).startswith(state + os.sep):
                found.setdefault(store, None)
    return list(found)


def find_projects(env: Mapping[str, str]) -> list[Project]:
    """Repositories holding checkpoint refs of an earlier release, as the records name them.

    Only `refs/wrapagent/checkpoints/<recorded id>/{before,after}` whose
    commit is the recorded one, in the repository the record's `git_dir`
    names, and only where that path leads to that repository still (not
    through a link: a project folder that became a link to another
    repository is left alone).
    """
    from wrapagent.history.checkpoints import LEGACY_REF_PREFIX

    found: dict[str, Project] = {}
    for record in _records(env):
        info = record.get("checkpoints") or {}
        git_dir, top, sid = info.get("git_dir"), info.get("repo"), record.get("id")
        if info.get("store") or not all(isinstance(v, str) and v for v in (git_dir, top, sid)):
            continue
        if not os.path.isabs(git_dir) or os.path.realpath(git_dir) != os.path.normpath(git_dir):
            continue  # the recorded path now goes through a link: not the recorded repository
        if not os.path.isdir(git_dir):
            continue
        project = found.setdefault(git_dir, Project(top, git_dir))
        for which in ("before", "after"):
            commit = info.get(which)
            if isinstance(commit, str) and commit:
                project.refs[f"{LEGACY_REF_PREFIX}{sid}/{which}"] = commit
    return [p for p in found.values() if _existing(p, env)]


def _existing(project: Project, env: Mapping[str, str]) -> bool:
    """Keep in `project.refs` only those that still hold the recorded commit; whether any is left."""
    from wrapagent import gitcmd

    try:
        listed = gitcmd.run(project.git_dir, ["--no-optional-locks", "for-each-ref",
                                              "--format=%(refname) %(objectname)", "refs/wrapagent/checkpoints/"],
                            git_dir=project.git_dir, base_env=env, timeout=30)
    except gitcmd.GitError:
        return False
    now = dict(line.split(" ", 1) for line in listed.text().splitlines() if " " in line)
    project.refs = {ref: commit for ref, commit in project.refs.items() if now.get(ref) == commit}
    return bool(project.refs)


def make_plan(env: Mapping[str, str], shim_dir: str | None = None) -> Plan:
    folder = shims_mod.resolve_shim_dir(shim_dir, env)
    state = paths.state_dir(env)
    running = []
    for root in paths.all_sessions_roots(env):
        marker_dir = root / ".running"
        if marker_dir.is_dir():
            running.extend(sorted(p.stem for p in marker_dir.glob("*.lock")))
    return Plan(folder, shims_mod.installed_shims(folder), state, paths.config_dir(env),
                find_projects(env), running, recorded_stores(env))


def describe(plan: Plan, *, with_config: bool) -> list[str]:
    """What would go, one line each, for the user to read before saying yes."""
    lines = []
    if plan.shims:
        lines.append(f"shims in {plan.shim_dir}: {', '.join(plan.shims)}")
    if plan.state_dir.exists():
        lines.append(f"state folder {plan.state_dir} (session records, checkpoint stores, trust.json)")
    for store in plan.stores:
        lines.append(f"checkpoint store {store}")
    for project in plan.projects:
        lines.append(f"in {project.top}: {len(project.refs)} checkpoint ref(s) of an earlier release "
                     f"under {WRAPAGENT_REFS}")
    if plan.config_dir.exists():
        lines.append(f"config {plan.config_dir}" + ("" if with_config else "  (kept; --config removes it)"))
    return lines


def remove_history(plan: Plan, env: Mapping[str, str], out: IO[str]) -> int:
    """Delete the recorded refs of earlier releases and the stores, then the state folder; 0 or 1.

    Each line says what was done: a failure is named, never reported as removed.
    """
    from wrapagent import gitcmd

    failed = 0
    for project in plan.projects:
        commands = "".join(f"delete {ref} {commit}\n" for ref, commit in sorted(project.refs.items()))
        try:
            gitcmd.run(project.git_dir, ["update-ref", "--stdin"], git_dir=project.git_dir, base_env=env,
                       input=commands.encode("utf-8", "surrogateescape"), check=True, timeout=30)
        except gitcmd.GitError as exc:
            print(f"  could not remove the refs in {project.top}: {exc}", file=out)
            failed = 1
            continue
        print(f"removed {len(project.refs)} checkpoint ref(s) in {project.top}", file=out)
    for store in plan.stores:
        if _rmtree(Path(store), out) == 0:
            print(f"removed {store}", file=out)
        else:
            failed = 1
    if plan.state_dir.exists():
        if _rmtree(plan.state_dir, out) == 0:
            print(f"removed {plan.state_dir}", file=out)
        else:
            failed = 1
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
        if yes or yes_at_terminal(stdin, out, "Remove them? This deletes the session history."):
            status |= remove_history(plan, env, out)
            if with_config and plan.config_dir.exists():
                status |= _rmtree(plan.config_dir, out)
                print(f"removed {plan.config_dir}", file=out)
        else:
            print("kept the session history and the state folder (`wrapagent uninstall --yes` removes them)",
                  file=out)
            status = 1
    print(f"Last: remove the package ({package_removal(env)}), "
          "and the shims' PATH line or the `wrapagent init` aliases from your shell rc.", file=out)
    return status


def package_removal(env: Mapping[str, str], prefix: str | None = None) -> str:
    """How to remove this wrapagent's package: install.sh's private virtualenv has its own way."""
    import sys

    venv = paths.data_dir(env) / "venv"
    if os.path.realpath(prefix or sys.prefix) == os.path.realpath(venv):
        return (f"it is in {venv}, made by install.sh: `./install.sh --uninstall` in the wrapagent "
                "checkout removes it and its ~/.local/bin/wrapagent link")
    return "python3 -m pip uninstall wrapagent, or pipx / uv tool uninstall wrapagent"
