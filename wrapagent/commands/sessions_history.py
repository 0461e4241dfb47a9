"""`sessions diff`, `prune` and `resume`: act on a session's history (`undo`: sessions_undo.py).

diff and prune work on the checkpoints of `history/checkpoints.py`;
resume on the native ids of `history/transcripts.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Any, Mapping, Sequence

from wrapagent import paths
from wrapagent.commands.ask import yes_at_terminal
from wrapagent.commands.sessions_find import SessionsError as _SessionsError
from wrapagent.commands.sessions_find import _resolve_project, pick


# --------------------------------------------------------------------------- diff, undo, prune, resume


def _checkpoints_of(ns: argparse.Namespace, env: Mapping[str, str], err: IO[str], *,
                    read_only: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    record, note = pick(ns.id, env, ns.cwd, read_only=read_only)
    if note:
        from wrapagent.visible import visible

        err.write(visible(f"wrapagent sessions: {note}") + "\n")
    info = record.get("checkpoints")
    if not isinstance(info, dict):
        raise _SessionsError(f"session {record.get('id')} has no checkpoints (recorded before they existed)")
    return record, info


def cmd_diff(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    """`git diff before after`, run on the user's terminal so pager and colour are git's own."""
    from wrapagent import gitcmd
    from wrapagent.history import checkpoint_access, checkpoints

    record, info = _checkpoints_of(ns, env, err, read_only=True)
    try:
        if getattr(ns, "turn", None) is not None:
            from wrapagent.history.turn_checkpoints import turn_info

            info = turn_info(record, info, ns.turn, env)
        repo, args = checkpoint_access.diff_args(info, ns.stat, env)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    from wrapagent.commands.colour import git_color_args

    at = args.index("diff") + 1
    args[at:at] = git_color_args(out, env)  # NO_COLOR and --color reach git too
    left_out = {**(info.get("left_out_before") or {}), **(info.get("left_out_after") or {})}
    if left_out:
        out.write(checkpoint_access.left_out_line(left_out) + "\n")
    out.flush()
    try:
        if repo.store is not None:
            from wrapagent.history.store import CONFIG

            return gitcmd.run(repo.top, args, git_dir=repo.store.path, work_tree=repo.top, config=CONFIG,
                              interactive=True, base_env=env).code
        return gitcmd.run(repo.top, ["--no-optional-locks", *args], git_dir=repo.git_dir, work_tree=repo.top,
                          interactive=True, base_env=env).code
    except gitcmd.GitError as exc:
        raise _SessionsError(str(exc)) from None


def cmd_prune(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], stdin: IO[str] | None = None) -> int:
    """Drop old sessions' checkpoints; list first with --dry-run, ask before dropping more than one.

    A session's checkpoints are its diff and its undo, and git cannot bring a
    deleted ref back: more than one session's go only after a yes at the
    terminal or `--yes` (a script without it drops nothing, as `uninstall`).
    """
    import time

    from wrapagent.history import checkpoints

    if ns.older_than < 0:
        raise _SessionsError("--older-than must be 0 or more days")
    root = _resolve_project(ns.project or getattr(ns, "cwd", None))  # where the command was typed
    now = time.time()  # one cutoff for the look and the drop: the same sessions
    try:
        doomed = checkpoints.prune(root, ns.older_than, env, now, dry_run=True)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    what = f"the checkpoints of {len(doomed)} session(s) older than {ns.older_than:g} day(s) in {root}"
    if ns.dry_run or not doomed:
        out.write(f"{'would drop' if doomed else 'nothing to drop:'} {what}"
                  f"{' (dry run: nothing dropped)' if doomed else ''}\n")
        _list_ids(doomed, out)
        return 0
    if len(doomed) > 1 and not ns.yes:
        out.write(f"this drops {what}; their diff and undo go with them:\n")
        _list_ids(doomed, out)
        if not yes_at_terminal(sys.stdin if stdin is None else stdin, out, "Drop them?"):
            out.write("nothing dropped (--yes drops them without asking, --dry-run only lists)\n")
            return 1
    try:
        dropped = checkpoints.prune(root, ns.older_than, env, now)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    checkpoints.note_pruned(dropped, paths.all_sessions_roots(env))
    from wrapagent.history.recording_files import drop

    recordings = drop(dropped, env)
    also = f" (and {recordings} recording(s))" if recordings else ""
    out.write(f"dropped the checkpoints of {len(dropped)} session(s) older than {ns.older_than:g} day(s)"
              f" in {root}{also}\n")
    _list_ids(dropped, out)
    return 0


def _list_ids(session_ids: Sequence[str], out: IO[str]) -> None:
    for session_id in session_ids:
        out.write(f"  {session_id}\n")


def resume_argv(record: Mapping[str, Any], extra: Sequence[str]) -> tuple[str, list[str], str]:
    """(tool, the tool's arguments, the directory to run in) that continue a recorded session."""
    from wrapagent.history.transcripts import resume_args

    native = record.get("native_session_id")
    tool = str(record.get("transport") or record.get("tool") or "")
    if not native:
        raise _SessionsError(f"session {record.get('id')} has no native session id of {tool or 'its tool'} "
                             "to resume (see `wrapagent sessions show`)")
    try:
        args = resume_args(tool, str(native), extra)
    except KeyError:
        raise _SessionsError(f"wrapagent does not know how {tool!r} resumes a session") from None
    return str(record.get("tool") or tool), args, str(record.get("cwd") or ".")


def cmd_resume(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    """Start the same tool, wrapped, in the session's directory, continuing its conversation."""
    record, skipped = pick(ns.id, env, ns.cwd, read_only=False)
    if skipped:
        from wrapagent.visible import visible

        err.write(visible(f"wrapagent sessions: {skipped}") + "\n")
    tool, args, cwd = resume_argv(record, ns.tool_args)
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise _SessionsError(f"cannot enter the session's directory {cwd}: {exc.strerror}") from None
    out.flush()
    # A fresh wrapagent, as if the user typed `wrapagent TOOL ARGS` there: its
    # own session record, hooks and signal dispositions. This wrapagent, by its
    # real location: `python -m wrapagent` would run a `wrapagent/` of that folder.
    from wrapagent.commands.own_process import module_argv

    argv = module_argv("wrapagent", "--", tool, *args)
    try:
        os.execve(sys.executable, argv, dict(env))
    except OSError as exc:
        raise _SessionsError(f"cannot start wrapagent again: {exc.strerror}") from None
    return 126  # not reached
