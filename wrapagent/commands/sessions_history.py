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

    _, info = _checkpoints_of(ns, env, err, read_only=True)
    try:
        repo, args = checkpoint_access.diff_args(info, ns.stat, env)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    from wrapagent.commands.colour import git_color_args

    at = args.index("diff") + 1
    args[at:at] = git_color_args(out, env)  # NO_COLOR and --color reach git too
    out.flush()
    try:
        return gitcmd.run(repo.top, args, git_dir=repo.git_dir, work_tree=repo.top, interactive=True,
                          base_env=env).code
    except gitcmd.GitError as exc:
        raise _SessionsError(str(exc)) from None


def cmd_prune(ns: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    from wrapagent.history import checkpoints

    if ns.older_than < 0:
        raise _SessionsError("--older-than must be 0 or more days")
    root = _resolve_project(ns.project)
    try:
        dropped = checkpoints.prune(root, ns.older_than, env)
    except checkpoints.CheckpointError as exc:
        raise _SessionsError(str(exc)) from None
    checkpoints.note_pruned(dropped, paths.all_sessions_roots(env))
    out.write(f"dropped the checkpoints of {len(dropped)} session(s) older than {ns.older_than:g} day(s)"
              f" in {root}\n")
    for session_id in dropped:
        out.write(f"  {session_id}\n")
    return 0


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
    record, _ = pick(ns.id, env, ns.cwd, read_only=False)
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
