"""`sessions undo ID [--dry-run] [--force]`: put back what one session changed, and only that.

The checks on the files themselves are `history/undo.py`'s. This module adds
what only the records know:

- another top-level session of the same repository that ran at the same
  time: the work tree's `after` holds its work too, so undo refuses, naming
  the files both changed (every file of this session when the other one has
  no checkpoints to compare), unless `--force`. Edits the user made in an
  editor during the session cannot be told apart; the README says so.
- a second undo of an undone session says so instead of finding
  "conflicts" (`checkpoints.undone_at` in the record).

Undo always ends by naming the `after` commit, from which any file can be
brought back (`git restore --source=<commit> -- PATH`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
from typing import IO, Any, Mapping

from wrapagent.commands.sessions_find import SessionsError, all_records, is_top_level, pick
from wrapagent.commands.sessions_show import format_time
from wrapagent.visible import field


def _stamp(iso: Any, default: float) -> float:
    try:
        return dt.datetime.fromisoformat(str(iso)).timestamp()
    except ValueError:
        return default


def _window(record: Mapping[str, Any], now: float) -> tuple[float, float]:
    """(start, end) in epoch seconds; a running session runs until now."""
    start = _stamp(record.get("started_at"), now)
    end = record.get("ended_at")
    if not end:
        return start, now if record.get("state") == "running" else start
    return start, _stamp(end, now)


def _same_repository(record: Mapping[str, Any], top: str) -> bool:
    info = record.get("checkpoints")
    if isinstance(info, dict) and info.get("repo"):
        return info.get("repo") == top
    for key in ("project_root", "cwd"):
        where = record.get(key)
        if where and (where == top or str(where).startswith(top.rstrip(os.sep) + os.sep)):
            return True
    return False


def overlapping(record: Mapping[str, Any], env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Other top-level sessions of the same repository whose time windows overlap this one's."""
    info = record.get("checkpoints") or {}
    top = str(info.get("repo") or "")
    now = dt.datetime.now(dt.timezone.utc).timestamp()
    start, end = _window(record, now)
    found = []
    for other in all_records(env):
        if other.get("id") == record.get("id") or not is_top_level(other) or not _same_repository(other, top):
            continue
        other_start, other_end = _window(other, now)
        if other_start < end and start < other_end:
            found.append(other)
    return found


def _shared_paths(plan, other: Mapping[str, Any]) -> list[str]:
    """The files undo would touch that the other session may have changed too."""
    from wrapagent.history import checkpoint_access, checkpoints

    mine = plan.acted_on
    info = other.get("checkpoints")
    try:
        before, after = checkpoint_access.session_commits(info if isinstance(info, dict) else {}, plan.repo)
        theirs = {p for _, p in plan.repo.changes(before, after, mine)}
    except checkpoints.CheckpointError:
        return sorted(mine)  # running, or no checkpoints: any of them may be its work
    return sorted(p for p in mine if p in theirs)


def _note_undone(record: Mapping[str, Any]) -> None:
    from wrapagent.history import checkpoints

    folder = record.get("_dir")
    if folder:
        checkpoints.note_record(folder, undone_at=dt.datetime.now(dt.timezone.utc).isoformat())


def cmd_undo(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    from wrapagent.history import checkpoint_access, checkpoints
    from wrapagent.history import undo as undo_mod
    from wrapagent.history.checkpoint_access import shown_paths

    record, _ = pick(ns.id, env, ns.cwd, read_only=False)
    sid = record.get("id")
    info = record.get("checkpoints")
    if not isinstance(info, dict):
        raise SessionsError(f"session {sid} has no checkpoints (recorded before they existed)")
    if info.get("undone_at"):
        out.write(f"session {sid} was already undone on {format_time(info['undone_at'])}: nothing to do\n")
        return 0
    try:
        checkpoint_access.session_commits(info)
        repo = checkpoint_access.open_repo(info, env)
        before, after = checkpoint_access.session_commits(info, repo)
        plan = undo_mod.plan(repo, before, after)
    except checkpoints.CheckpointError as exc:
        raise SessionsError(str(exc)) from None
    notes = []
    for other in overlapping(record, env) if plan.acted_on else []:
        shared = _shared_paths(plan, other)
        if not shared:
            notes.append(f"session {other.get('id')} ran in this repository at the same time; "
                         "none of the files undo touches are among its changes")
        elif not ns.force:
            raise SessionsError(
                f"refusing to undo: session {other.get('id')} ran in this repository at the same time "
                f"and these files may hold its work: {shown_paths(shared)} (nothing was changed; "
                "--force undoes them anyway)")
        else:
            notes.append(f"session {other.get('id')} ran at the same time: its work in "
                         f"{shown_paths(shared)} is undone too (--force)")
    lines = plan.lines()
    if not lines:
        out.write(f"session {sid} changed no file: nothing to undo\n")
        return 0
    if ns.dry_run:
        out.write(f"dry run: undo of session {sid} in {field(repo.top)} would do this "
                  "(nothing was changed):\n")
    else:
        try:
            undo_mod.apply(plan)
        except checkpoint_access.UndoRefused as exc:  # the work tree changed since the checks
            raise SessionsError(str(exc)) from None
        except (OSError, checkpoints.CheckpointError) as exc:
            raise SessionsError(f"undo stopped part-way: {exc}; the session's files are all in "
                                f"{after} (git restore --source={after[:12]} -- PATH)") from None
        if plan.acted_on:
            _note_undone(record)
        out.write(f"undid session {sid} in {field(repo.top)}:\n")
    for path, what in lines:
        out.write(f"  {field(path)}: {what}\n")  # one line per path: a newline in a name is escaped
    for note in notes:
        out.write(f"note: {field(note)}\n")
    ref = f"{info.get('ref')}/after" if info.get("ref") else "its after checkpoint"
    out.write(f"the session's version of every file stays in {ref} ({after[:12]}): "
              f"`git restore --source={after[:12]} -- PATH` brings one back\n")
    return 0
