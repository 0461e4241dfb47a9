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

An undo on a running session also marks the tree it left as the next
turn's start (`turn_undo.mark_next_start`), as `wrapagent undo` does; an
undo of one turn (`--turn N`) leaves the checkpoints `wrapagent redo` puts
back from, as `wrapagent undo` does.

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


SHOWN_STAGED = 3  # staged paths named in the note; the rest are counted


def what_undo_leaves(repo, info: Mapping[str, Any], acted_on: list[str], *, dry_run: bool) -> list[str]:
    """One line each for what `git status` and `git log` still show after the undo.

    Undo restores files only: changes staged in the index to the files it
    touches (a `git rm` shows as `D README.md` next to `?? README.md`) and
    commits made during the session stay. Saying so keeps the user from
    taking either for a failed undo. Best effort: a git error drops a line.
    """
    from wrapagent.history import checkpoints

    lines = []
    try:
        staged = _staged(repo, set(acted_on))
        if staged:
            shown = ", ".join(f"{status} {field(path)}" for status, path in staged[:SHOWN_STAGED])
            more = f" and {len(staged) - SHOWN_STAGED} more" if len(staged) > SHOWN_STAGED else ""
            lines.append(f"the index stages changes to {len(staged)} of these files ({shown}{more}): undo "
                         f"{'would leave' if dry_run else 'leaves'} the index alone, so `git status` still "
                         "shows them (`git restore --staged -- PATH` unstages one)")
        commits = _commits_made(repo, info)
        if commits:
            start, end, count = commits
            lines.append(f"the {count} commit(s) made during the session {'would stay' if dry_run else 'stay'} "
                         f"(HEAD went from {start[:12] if start else 'no commit'} to {end[:12]}): undo changes "
                         f"files only (`git log {start[:12] + '..' if start else ''}{end[:12]}` lists them)")
    except (checkpoints.CheckpointError, OSError, ValueError):
        pass
    return lines


def _staged(repo, paths: set[str]) -> list[tuple[str, str]]:
    """(status, path) of the index's changes against HEAD, among `paths` (matched here: no pathspecs)."""
    if not paths or repo.rev("HEAD") is None:
        return []
    proc = repo.read_user(["diff-index", "--cached", "-z", "--no-renames", "--name-status", "HEAD"])
    out = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    found = [(out[i][:1], out[i + 1]) for i in range(0, len(out) - 1, 2) if out[i]]
    return [(status, path) for status, path in found if path in paths]


def _commits_made(repo, info: Mapping[str, Any]) -> tuple[str | None, str, int] | None:
    """(HEAD before, HEAD after, commits between) when HEAD moved forward during the session."""
    start, end = info.get("head"), info.get("head_after")
    if not end or end == start:
        return None
    span = f"{start}..{end}" if start else str(end)
    proc = repo.read_user(["rev-list", "--count", span])
    count = int(proc.stdout.decode().strip() or 0) if proc.returncode == 0 else 0
    return (str(start) if start else None, str(end), count) if count else None


def cmd_undo(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    from wrapagent.history import checkpoint_access, checkpoints
    from wrapagent.history import undo as undo_mod
    from wrapagent.history.checkpoint_access import shown_paths

    record, skipped = pick(ns.id, env, ns.cwd, read_only=False)
    if skipped:
        err.write(f"wrapagent sessions: {field(skipped)}\n")  # which session `last` is, when it passed one over
    sid = record.get("id")
    info = record.get("checkpoints")
    if not isinstance(info, dict):
        raise SessionsError(f"session {sid} has no checkpoints (recorded before they existed)")
    turn = getattr(ns, "turn", None)
    if turn is not None:
        from wrapagent.history.turn_checkpoints import turn_info

        try:
            info = turn_info(record, info, turn, env)
        except checkpoints.CheckpointError as exc:
            raise SessionsError(str(exc)) from None
    if info.get("undone_at"):
        out.write(f"session {sid} was already undone on {format_time(info['undone_at'])}: nothing to do\n")
        return 0
    try:
        checkpoint_access.session_commits(info)
        repo = checkpoint_access.open_repo(info, env)
        before, after = checkpoint_access.session_commits(info, repo)
        plan = undo_mod.plan(repo, before, after, left_out=undo_mod.left_out(info), force=ns.force,
                             keep_folders=undo_mod.folders_before(info))
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
        # An undo of one turn is a checkpoint, as `wrapagent undo`'s: the trees `wrapagent redo` puts back from.
        redo = turn is not None and bool(plan.acted_on) and repo.store is not None
        if redo:
            from wrapagent.commands.turn_undo import undo_checkpoint

            pre = undo_checkpoint(repo, str(sid), turn, "pre", f"before undo of turn {turn}")
        try:
            undo_mod.apply(plan)
        except checkpoint_access.UndoRefused as exc:  # the work tree changed since the checks
            raise SessionsError(str(exc)) from None
        except (OSError, checkpoints.CheckpointError) as exc:
            raise SessionsError(f"undo stopped part-way: {exc}; the files as they were before the session "
                                f"are in commit {before} and the session's in {after} ({_where(repo)}); "
                                f"run `wrapagent sessions undo {sid}` again to finish") from None
        if plan.acted_on and turn is None:
            _note_undone(record)
        if plan.acted_on and repo.store is not None:
            from wrapagent.commands.turn_undo import mark_next_start

            post = undo_checkpoint(repo, str(sid), turn, "post",
                                   f"after undo of turn {turn} (redo: {pre[:12]})") if redo else None
            # A running session's next turn starts from here, else it counts the undo as its change.
            mark_next_start(repo, record, post, f"undo of turn {turn}" if turn is not None
                            else "undo of the session")
        out.write(f"undid session {sid} in {field(repo.top)}:\n")
    for path, what in lines:
        out.write(f"  {field(path)}: {what}\n")  # one line per path: a newline in a name is escaped
    for note in notes:
        out.write(f"note: {field(note)}\n")
    for line in what_undo_leaves(repo, info, plan.acted_on, dry_run=ns.dry_run):
        out.write(f"note: {line}\n")
    out.write(f"the session's version of every file stays in {after[:12]}: "
              f"`{_show_command(repo, after)}` brings one back\n")
    return 0


def _where(repo) -> str:
    return f"wrapagent's store {repo.store.path}" if repo.store is not None else "the repository"


def _show_command(repo, commit: str) -> str:
    """The git command that writes one file of a checkpoint back, byte for byte."""
    import shlex

    if repo.store is None:
        return f"git restore --source={commit[:12]} -- PATH"
    return f"git --git-dir={shlex.quote(repo.store.path)} cat-file blob {commit[:12]}:PATH > PATH"
