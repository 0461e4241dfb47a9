"""A recorded session's checkpoints, as `sessions diff`, `show` and `undo` use them.

The repository and the two commits of a session, or one line saying why
they are gone: never a checkpoint at all (the record's note), pruned (the
record says when), or pruned and then removed by `git gc` (git itself would
only say `fatal: bad object`). Also the diff, and the refusals of undo.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Sequence

from wrapagent.history.checkpoints import CheckpointError, Repo


def _when(iso: object) -> str:
    """An ISO timestamp as local `YYYY-MM-DD HH:MM`, for messages."""
    import datetime as dt

    try:
        stamp = dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    return (stamp.astimezone() if stamp.tzinfo else stamp).strftime("%Y-%m-%d %H:%M")


def session_commits(info: Mapping[str, object], repo: Repo | None = None) -> tuple[str, str]:
    """The session's `before` and `after` commits; a CheckpointError saying why there are none.

    With `repo`, the commits must still be in it: after `sessions prune` and
    `git gc` git itself would only say `fatal: bad object`.
    """
    before, after = info.get("before"), info.get("after")
    if info.get("pruned_at"):
        raise CheckpointError(f"the checkpoints of this session were pruned on {_when(info['pruned_at'])}")
    if info.get("status") == "taken" and before and not after and info.get("after_note"):
        raise CheckpointError(f"no `after` checkpoint: {info['after_note']}; the `before` one is commit "
                              f"{before} in {info.get('store') or info.get('git_dir')}")
    if info.get("status") != "taken" or not before or not after:
        note = info.get("note") or "the session has no complete checkpoints"
        raise CheckpointError(f"no checkpoints for this session: {note}")
    if repo is not None:
        data = f"{before}^{{commit}}\n{after}^{{commit}}\n".encode()
        proc = repo.run(["cat-file", "--batch-check"], input=data, check=False)
        if proc.returncode != 0 or b"missing" in proc.stdout:
            where = "checkpoint store" if repo.store is not None else "repository"
            raise CheckpointError(f"the checkpoints of this session are no longer in the {where} "
                                  f"(pruned, and their commits removed: {str(before)[:12]})")
    return str(before), str(after)


def open_repo(info: Mapping[str, object], env: Mapping[str, str] | None = None) -> Repo:
    """The session's project and the store its checkpoints are in.

    A record of an earlier release names no store: its checkpoints are
    refs in the user's repository, read there and nothing written.
    """
    from wrapagent.history.store import Store, is_store

    top, store = info.get("repo"), info.get("store")
    if store:
        if not is_store(str(store)):
            raise CheckpointError(f"the checkpoint store {store} is gone")
        if not top or not os.path.isdir(str(top)):
            raise CheckpointError(f"the session's project {top!r} is gone")
        found = Repo.find(str(top), env)
        if found is None or os.path.realpath(found.top) != os.path.realpath(str(top)):
            raise CheckpointError(f"the session's project {top!r} is no longer that git repository")
        found.store = Store(str(store), found.top, found.git_dir, env)
        return found
    repo = Repo.find(str(top), env) if top and os.path.isdir(str(top)) else None
    if repo is None:
        raise CheckpointError(f"the session's repository {top!r} is gone")
    return repo


def diff_stat(info: Mapping[str, object], env: Mapping[str, str] | None = None) -> str:
    """`git diff --stat before after` as text, for `sessions show`."""
    session_commits(info)
    repo = open_repo(info, env)
    before, after = session_commits(info, repo)
    return repo.run(["-c", "core.quotepath=off", "diff", "--stat", "--no-color", "--no-ext-diff",
                     before, after]).stdout.decode("utf-8", "replace")


def diff_args(info: Mapping[str, object], stat: bool,
              env: Mapping[str, str] | None = None) -> tuple[Repo, list[str]]:
    """The repository and `git diff` arguments that show the session's changes (run on the user's terminal)."""
    session_commits(info)
    repo = open_repo(info, env)
    before, after = session_commits(info, repo)
    return repo, ["diff", *(["--stat"] if stat else []), before, after]


def shown_paths(paths: Sequence[str], limit: int = 8) -> str:
    """`a, b, c … and N more`: paths for a one-line message, control characters as `\\xNN`.

    A cloned repository's file names may hold terminal escapes: a refusal
    naming them must not drive the user's terminal.
    """
    def visible(path: str) -> str:
        return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c for c in path)

    head = ", ".join(visible(p) for p in paths[:limit])
    return head + (f" … and {len(paths) - limit} more" if len(paths) > limit else "")


class UndoRefused(CheckpointError):
    """Undo checked something and changed nothing; the message is one line saying why."""


class UndoConflict(UndoRefused):
    """Files the session changed were changed again afterwards."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        super().__init__(f"refusing to undo: {len(self.paths)} file(s) changed after the session ended: "
                         f"{shown_paths(self.paths)} (nothing was changed)")


def left_out_line(left_out: Mapping[str, int], limit: int = 6) -> str:
    """`not in the snapshot: model.bin, 60 MB; …` for the files a size cap left out."""
    from wrapagent.history.checkpoints import size_text

    items = sorted(left_out.items())
    shown = "; ".join(f"{shown_paths([p])}, {size_text(n)}" for p, n in items[:limit])
    more = f" … and {len(items) - limit} more" if len(items) > limit else ""
    return f"not in the snapshot: {shown}{more}"
