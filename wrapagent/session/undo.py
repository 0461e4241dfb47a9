"""Undo a session's changes to the work tree: all or nothing, and only the session's.

`plan` runs every check before anything is touched: the session's commits
are still there, every file it changed is still exactly as it left it (a
fresh snapshot compared with `after`), every path undo writes has nothing of
the user's in its way (not the path itself, nor any of its leading folders:
a file or symlink at `olddir` where the session deleted `olddir/f.txt`), and
every folder undo writes in is writable. Any failure raises `UndoRefused`
with one line saying why, and nothing has changed. `apply` then does it.

What undo never does:
- delete a path that may have existed before the session: a file the
  session "created" that git ignored under the rules of the time (the agent
  emptied `.gitignore`, and the user's `.env` showed up in `after`) is kept
  and listed as such: the snapshots never held it, so nothing says it is new;
- touch nested repositories and submodules (gitlinks): they are listed as
  not restored, and a path undo must restore where one now stands refuses.
"""

from __future__ import annotations

import os
import stat
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Sequence

    from wrapagent.session.checkpoints import Repo

from wrapagent.session.checkpoint_access import UndoConflict, UndoRefused, shown_paths
from wrapagent.session.checkpoints import CheckpointError, git

GITLINK = "160000"


class UndoPlan:
    """What undo will do, decided before anything changes (also what `--dry-run` prints)."""

    def __init__(self, repo: Repo, before: str, after: str) -> None:
        self.repo = repo
        self.before = before
        self.after = after
        self.remove: list[str] = []  # created by the session: deleted
        self.restore: list[tuple[str, str]] = []  # (status, path): written back from `before`
        self.kept: list[tuple[str, str]] = []  # (path, why): left as they are
        self.not_restored: list[tuple[str, str]] = []  # (path, why): nested repositories

    @property
    def acted_on(self) -> list[str]:
        return self.remove + [p for _, p in self.restore]

    def lines(self) -> list[tuple[str, str]]:
        """(path, what undo does or did to it), in path order."""
        out = [(p, "removed (created by the session)") for p in self.remove]
        out += [(p, "restored (deleted by the session)" if s == "D" else "restored") for s, p in self.restore]
        out += [(p, f"kept ({why})") for p, why in self.kept]
        out += [(p, f"not restored ({why})") for p, why in self.not_restored]
        return sorted(out)


def raw_changes(repo: Repo, before: str, after: str) -> list[tuple[str, str, str, str]]:
    """(status, old mode, new mode, path) of every path that differs between two commits."""
    out = repo.run(["diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-ext-diff", before, after]
                   ).stdout.decode("utf-8", "surrogateescape").split("\0")
    changes = []
    for i in range(0, len(out) - 1, 2):
        meta = out[i].lstrip(":").split()
        if len(meta) >= 5:
            changes.append((meta[4][:1], meta[0], meta[1], out[i + 1]))
    return changes


def ignored_before(repo: Repo, before: str, paths: Sequence[str]) -> set[str]:
    """Those of `paths` that git ignored under the rules of the `before` snapshot.

    The `.gitignore` files of `before` are written into an empty folder and
    `git check-ignore --no-index` asks there (the repository's own
    `info/exclude` and `core.excludesFile` apply as well).
    """
    import shutil
    import tempfile

    if not paths:
        return set()
    listing = repo.run(["ls-tree", "-r", "-z", "--name-only", before]).stdout.decode("utf-8", "surrogateescape")
    ignores = [p for p in listing.split("\0") if p and os.path.basename(p) == ".gitignore"]
    folder = tempfile.mkdtemp(prefix="wrapagent-undo-")
    index = os.path.join(folder, "index")
    tree = os.path.join(folder, "tree")
    os.mkdir(tree)
    try:
        if ignores:
            repo.run(["read-tree", before], index=index)
            data = b"\0".join(p.encode("utf-8", "surrogateescape") for p in ignores) + b"\0"
            repo.run(["checkout-index", "-z", "--stdin", f"--prefix={tree}/"], index=index, input=data)
        data = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
        proc = git(tree, ["check-ignore", "--no-index", "-z", "--stdin"], env=repo.env,
                   git_dir=repo.git_dir, input=data, check=False)  # the work tree: `before`'s ignore files
        if proc.returncode not in (0, 1):
            msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise CheckpointError(f"`git check-ignore` failed: {msg[-1] if msg else proc.returncode}")
        return {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # a file where a folder was: the leading folders' check looks at that
    except OSError as exc:
        raise UndoRefused(f"refusing to undo: cannot look at {shown_paths([path])}: {exc.strerror} "
                          "(nothing was changed)") from None


def _leading(path: str) -> list[str]:
    """`a`, `a/b` for `a/b/c`."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _writable_folder(top: str, path: str) -> str | None:
    """The nearest existing folder above `path` when undo may not write in it, else None."""
    folder = os.path.dirname(os.path.join(top, path))
    while folder != top and not (os.path.isdir(folder) and not os.path.islink(folder)):
        folder = os.path.dirname(folder)
    return None if os.access(folder, os.W_OK | os.X_OK) else folder


def _check_in_the_way(plan: UndoPlan) -> None:
    """Nothing of anybody else's where undo writes or deletes: the path, its leading folders."""
    top = plan.repo.top
    removing = set(plan.remove)
    blocked: list[str] = []
    why = ""
    for path in plan.acted_on:
        for lead in _leading(path):
            st = _lstat(os.path.join(top, lead))
            if st is None or stat.S_ISDIR(st.st_mode):
                if st is not None and os.path.exists(os.path.join(top, lead, ".git")):
                    blocked.append(lead)
                    why = why or "a nested git repository now stands at"
                continue
            if lead in removing and path not in removing:
                continue  # the session turned this folder into a file: removed first
            blocked.append(lead)
            why = why or "a file or link (not the session's) now stands in the way at"
    for status, path in plan.restore:
        full = os.path.join(top, path)
        st = _lstat(full)
        if st is None or not stat.S_ISDIR(st.st_mode):
            continue  # a file here is the session's own (the snapshot check saw to that)
        for folder, dirs, files in os.walk(full):
            rel = os.path.relpath(folder, top).replace(os.sep, "/")
            if ".git" in dirs or ".git" in files:
                blocked.append(path)
                why = why or "a nested git repository now stands at"
                break
            others = [f"{rel}/{name}" for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]
                      if f"{rel}/{name}" not in removing]
            if others:
                blocked.append(path)
                why = why or "a folder holding files the session did not create now stands at"
                break
    if blocked:
        unique = sorted(set(blocked))
        raise UndoRefused(f"refusing to undo: {why} {shown_paths(unique)} (nothing was changed)")
    locked = sorted({f for f in (_writable_folder(top, p) for p in plan.acted_on) if f})
    if locked:
        raise UndoRefused(f"refusing to undo: no permission to write in {shown_paths(locked)} (nothing was changed)")


def plan(repo: Repo, before: str, after: str) -> UndoPlan:
    """Every check, nothing changed: the plan, or `UndoRefused` saying why in one line."""
    result = UndoPlan(repo, before, after)
    created: list[str] = []
    for status, old_mode, new_mode, path in raw_changes(repo, before, after):
        if GITLINK in (old_mode, new_mode):
            what = "a nested repository or submodule: wrapagent leaves it as it is"
            result.not_restored.append((path, what))
        elif status == "A":
            created.append(path)
        else:
            result.restore.append((status, path))
    hidden = ignored_before(repo, before, created)
    for path in created:
        if path in hidden:
            result.kept.append((path, "git ignored it before the session: it may have existed then"))
        else:
            result.remove.append(path)
    for path, _ in result.not_restored:  # restoring a file where a nested repository now is
        if any(p == path for _, p in result.restore):
            raise UndoRefused(f"refusing to undo: a nested git repository now stands at {shown_paths([path])} "
                              "(nothing was changed)")
    acted = result.acted_on
    if not acted:
        return result
    now = repo.write_tree()
    moved = [p for _, p in repo.changes(after, now, acted)]
    if moved:
        if not repo.changes(before, now, acted):
            raise UndoRefused("these files are already as they were before the session: undone already? "
                              "(nothing was changed)")
        raise UndoConflict(moved)
    _check_in_the_way(result)
    return result


def apply(plan: UndoPlan) -> None:
    """Do what `plan` decided. Created paths go first: a file the session turned into a folder
    (or back) must be out of the way before the old one is written again."""
    for path in plan.remove:
        _remove_created(plan.repo.top, path)
    plan.repo.checkout_paths(plan.before, [p for _, p in plan.restore])


def _remove_created(top: str, path: str) -> None:
    """Remove a file the session created, then the folders it left empty."""
    full = os.path.join(top, path)
    try:
        os.unlink(full)
    except FileNotFoundError:
        pass
    folder = os.path.dirname(full)
    while folder != top and folder.startswith(top + os.sep):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)


def undo(info: Mapping[str, object], env: Mapping[str, str] | None = None, *,
         dry_run: bool = False) -> UndoPlan:
    """Check everything, then (unless `dry_run`) put the session's files back; the plan."""
    from wrapagent.session.checkpoint_access import open_repo, session_commits

    session_commits(info)  # says why there are none before looking for the repository
    repo = open_repo(info, env)
    before, after = session_commits(info, repo)
    result = plan(repo, before, after)
    if not dry_run:
        apply(result)
    return result


def undo_files(info: Mapping[str, object], env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """`undo`, returning (status, path) of the files removed (`A`) or restored."""
    result = undo(info, env)
    return [("A", p) for p in result.remove] + list(result.restore)
