"""`wrapagent undo` and `wrapagent redo`: a turn at a time, in the project you type them in.

`undo` puts back the files the newest not-yet-undone turn of the newest
agent session here changed (running or ended): the turn's `start` and
`stop` checkpoints (history/turn_checkpoints.py) with the guarantees of a
session's undo (every check first, exact bytes, a file changed since the
turn ended refuses unless `--force`, `--dry-run`). Run again, it undoes
the turn before. An undo is itself a checkpoint: the tree just before it
(`undo-N-pre`) and just after (`undo-N-post`); `redo` puts `undo-N-pre` back
for the last undone turn. A turn that changed no file (a plain answer) is
skipped: there is nothing of it to undo.

While the session runs, the tree an undo or redo (or `sessions undo ID --turn N`,
through `mark_next_start`) leaves is the start of the session's next turn
(`refs/sessions/<id>/next-start`, taken by the session):
that turn does not count the undo as its own change, so `undo` again goes on
to the turn before, and `redo` puts back what the last undo removed.

While the session runs, its next message gets one `<prompt-guard
name="undo">` block listing the files put back (`--quiet`: not), so the
agent does not go on from a state that no longer exists.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import IO, Any, Mapping

from wrapagent.commands.sessions_find import SessionsError

_REF = re.compile(r"^refs/sessions/([^/]+)/(turn|undo)-(\d+)-(start|stop|pre|post)$")


def turn_refs(repo, session_id: str) -> dict[tuple[str, int, str], str]:
    """{(kind, n, which): commit} of the session's turn and undo checkpoints in the store."""
    listed = repo.run(["for-each-ref", "--format=%(refname) %(objectname)", f"refs/sessions/{session_id}/"])
    out = {}
    for line in listed.stdout.decode("utf-8", "surrogateescape").splitlines():
        ref, _, commit = line.partition(" ")
        m = _REF.match(ref)
        if m and m.group(1) == session_id:
            out[(m.group(2), int(m.group(3)), m.group(4))] = commit
    return out


def _session_and_repo(env: Mapping[str, str], cwd: str):
    """The newest agent session of this project (running or ended) and the project's store."""
    from wrapagent.commands.sessions_find import last_here
    from wrapagent.history.checkpoints import CheckpointError, Repo

    record, _ = last_here(env, cwd, read_only=False)
    repo = Repo.find(cwd, env)
    if repo is None:
        raise SessionsError("not in a git repository: no turn checkpoints here")
    try:
        repo.open_store(create=False)
    except CheckpointError:
        raise SessionsError("no checkpoints were ever taken in this project") from None
    return record, repo


def _put_back(repo, before: str, after: str, *, force: bool, dry_run: bool):
    from wrapagent.history import undo as undo_mod
    from wrapagent.history.checkpoints import CheckpointError

    try:
        plan = undo_mod.plan(repo, before, after, force=force)
        if not dry_run:
            undo_mod.apply(plan)
    except CheckpointError as exc:
        raise SessionsError(str(exc)) from None
    except OSError as exc:
        raise SessionsError(f"stopped part-way: {exc}; the files as they were are in commit {before} of "
                            f"wrapagent's store {repo.store.path}; run the command again to finish") from None
    return plan


def _snapshot(repo, ref: str, message: str) -> str:
    from wrapagent.history.checkpoints import CheckpointError

    try:
        return repo.snapshot(ref, message, None)
    except CheckpointError as exc:
        raise SessionsError(f"cannot take the undo checkpoint: {exc}") from None


def undo_checkpoint(repo, sid: str, n: int, which: str, message: str) -> str:
    """The tree before (`which` "pre") or after ("post") an undo of turn `n`: what `redo` puts back from."""
    return _snapshot(repo, f"refs/sessions/{sid}/undo-{n}-{which}", message)


def _changed(repo, refs: Mapping[tuple[str, int, str], str], turns: list[int]) -> list[int]:
    """The turns whose stop differs from their start: a plain answer changed nothing to undo."""
    from wrapagent.history.checkpoints import CheckpointError

    if not turns:
        return []
    try:
        trees = repo.run(["rev-parse", *(f"{refs[('turn', n, w)]}^{{tree}}" for n in turns
                                         for w in ("start", "stop"))]).text().split()
    except CheckpointError as exc:
        raise SessionsError(f"cannot read the turns' checkpoints: {exc}") from None
    return [n for i, n in enumerate(turns) if trees[2 * i] != trees[2 * i + 1]]


def mark_next_start(repo, record: Mapping[str, Any], commit: str | None, what: str) -> None:
    """A running session's next turn starts from the tree this undo/redo left (taken by the session).

    `commit` is the undo's `post` checkpoint; None (a redo, `sessions undo ID --turn N`)
    takes one of its own.
    """
    from wrapagent.history.store import StoreError
    from wrapagent.history.turn_checkpoints import next_start_ref

    if record.get("state") != "running":
        return
    ref = next_start_ref(str(record.get("id")))
    if commit is None:
        _snapshot(repo, ref, f"after {what}: the next turn starts here")
        return
    try:
        repo.store.write_ref(ref, commit)
    except (StoreError, OSError) as exc:
        raise SessionsError(f"the files were put back, but the running session's next turn will count "
                            f"it as its own change: {exc}") from None


def _notify(record: Mapping[str, Any], what: str, files: list[str], quiet: bool) -> None:
    """Leave the running session a notice for its next message: the files put back."""
    from wrapagent.history.turn_checkpoints import leave_notice

    folder = record.get("_dir")
    if quiet or record.get("state") != "running" or not folder or not os.path.isdir(str(folder)):
        return
    try:
        leave_notice(str(folder), what, files)
    except OSError:
        pass


def _print(out: IO[str], header: str, plan) -> None:
    from wrapagent.visible import field

    out.write(header + "\n")
    for path, what in plan.lines():
        out.write(f"  {field(path)}: {what}\n")


def undo_turn(env: Mapping[str, str], cwd: str, *, force: bool, dry_run: bool, quiet: bool,
              out: IO[str]) -> int:
    record, repo = _session_and_repo(env, cwd)
    sid = str(record.get("id"))
    refs = turn_refs(repo, sid)
    done = _changed(repo, refs, sorted(n for (kind, n, which) in refs if kind == "turn" and which == "stop"
                                       and ("turn", n, "start") in refs and ("undo", n, "post") not in refs))
    if not done:
        raise SessionsError(f"session {sid} has no finished turn that changed files left to undo")
    n = max(done)
    start, stop = refs[("turn", n, "start")], refs[("turn", n, "stop")]
    if dry_run:
        plan = _put_back(repo, start, stop, force=force, dry_run=True)
        _print(out, f"dry run: undo of turn {n} of session {sid} would do this (nothing was changed):", plan)
        return 0
    pre = undo_checkpoint(repo, sid, n, "pre", f"before undo of turn {n}")
    plan = _put_back(repo, start, stop, force=force, dry_run=False)
    post = undo_checkpoint(repo, sid, n, "post", f"after undo of turn {n} (redo: {pre[:12]})")
    mark_next_start(repo, record, post, f"undo of turn {n}")
    _notify(record, "undo", sorted(plan.acted_on), quiet)
    _print(out, f"undid turn {n} of session {sid}:", plan)
    return 0


def redo_turn(env: Mapping[str, str], cwd: str, *, force: bool, dry_run: bool, quiet: bool,
              out: IO[str]) -> int:
    record, repo = _session_and_repo(env, cwd)
    sid = str(record.get("id"))
    refs = turn_refs(repo, sid)
    undone = [n for (kind, n, which) in refs if kind == "undo" and which == "post" and ("undo", n, "pre") in refs]
    if not undone:
        raise SessionsError(f"session {sid} has no undone turn to redo")
    n = min(undone)  # undos go newest turn first: the last one made is the oldest turn
    pre, post = refs[("undo", n, "pre")], refs[("undo", n, "post")]
    plan = _put_back(repo, pre, post, force=force, dry_run=dry_run)
    if dry_run:
        _print(out, f"dry run: redo of turn {n} of session {sid} would do this (nothing was changed):", plan)
        return 0
    repo.run(["update-ref", "--stdin"], input=(f"delete refs/sessions/{sid}/undo-{n}-pre\n"
                                               f"delete refs/sessions/{sid}/undo-{n}-post\n").encode())
    mark_next_start(repo, record, None, f"redo of turn {n}")
    _notify(record, "redo", sorted(plan.acted_on), quiet)
    _print(out, f"redid turn {n} of session {sid}:", plan)
    return 0


def main(name: str, args: list[str], *, out: IO[str] | None = None, err: IO[str] | None = None,
         env: Mapping[str, str] | None = None, cwd: str | None = None) -> int:
    """`wrapagent undo|redo [--dry-run] [--force] [--quiet]`."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    parser = argparse.ArgumentParser(prog=f"wrapagent {name}", description=(
        "Undo the newest turn of the newest agent session in this project (run again: the turn "
        "before)." if name == "undo" else "Put back what the last `wrapagent undo` removed."))
    parser.add_argument("--dry-run", action="store_true", help="only list what would change")
    parser.add_argument("--force", action="store_true", help="also over files changed since")
    parser.add_argument("--quiet", action="store_true", help="do not tell the running agent")
    ns = parser.parse_args(args)
    env = os.environ if env is None else env
    cwd = os.getcwd() if cwd is None else cwd
    act = undo_turn if name == "undo" else redo_turn
    try:
        return act(env, cwd, force=ns.force, dry_run=ns.dry_run, quiet=ns.quiet, out=out)
    except SessionsError as exc:
        from wrapagent.visible import visible

        err.write(visible(f"wrapagent {name}: {exc}") + "\n")
        return 1
