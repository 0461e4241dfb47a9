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

    from wrapagent.history.checkpoints import Repo

from wrapagent.history.checkpoint_access import UndoConflict, UndoRefused, shown_paths
from wrapagent.history.checkpoints import check_ignore, ignore_query

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
        self.seen: dict[str, tuple[int, ...] | None] = {}  # path: what `lstat` said just before the check
        self.keep_folders: set[str] = set()  # folders that existed before the session: never removed

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
    return [(status, old_mode, new_mode, path) for status, old_mode, new_mode, _, path
            in raw_changes_ids(repo, before, after)]


def raw_changes_ids(repo: Repo, before: str, after: str) -> list[tuple[str, str, str, str, str]]:
    """(status, old mode, new mode, old blob id, path) of every path that differs between two commits."""
    out = repo.run(["diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-ext-diff", before, after]
                   ).stdout.decode("utf-8", "surrogateescape").split("\0")
    changes = []
    for i in range(0, len(out) - 1, 2):
        meta = out[i].lstrip(":").split()
        if len(meta) >= 5:
            changes.append((meta[4][:1], meta[0], meta[1], meta[2], out[i + 1]))
    return changes


def _real_folders(top: str, path: str) -> bool:
    """Whether every leading folder of `path` is a real folder (no link, no file) now."""
    folder = top
    for part in path.split("/")[:-1]:
        folder = os.path.join(folder, part)
        st = _lstat(folder)
        if st is None or not stat.S_ISDIR(st.st_mode):
            return False
    return True


def _missing_objects(repo: Repo, ids: Sequence[str]) -> set[str]:
    """Those blob ids the store cannot read any more (borrowed from the user's repository, whose
    `git gc` removed them since)."""
    if not ids:
        return set()
    proc = repo.run(["cat-file", "--batch-check=%(objectname)"], input="".join(f"{i}\n" for i in ids).encode(),
                    check=False)
    missing = set()
    for line in proc.stdout.decode().splitlines():
        if line.endswith(" missing"):
            missing.add(line.split()[0])
    return missing


def _newer_than_after(repo: Repo, restore: Sequence[tuple[str, str, str]]) -> list[str]:
    """Paths the session deleted (or made ignored) that hold something else than `before` now.

    A file the session dropped from the snapshots by ignoring it (`notes.txt`
    added to `.gitignore`) and the user wrote afterwards is in no fresh
    snapshot either: only its bytes on disk tell that writing the old copy
    back would lose the user's work.
    """
    present = []
    for status, old_id, path in restore:
        if status != "D" or not _real_folders(repo.top, path):
            continue  # below a link or a file now: what is there is not at this path (the in-the-way check)
        full = os.path.join(repo.top, path)
        if os.path.lexists(full) and not (os.path.isdir(full) and not os.path.islink(full)):
            present.append((old_id, path))  # a folder here is the session's (its files are `created`)
    if not present:
        return []
    regular = [(old_id, path) for old_id, path in present if os.path.isfile(os.path.join(repo.top, path))
               and not os.path.islink(os.path.join(repo.top, path))]
    changed = [path for old_id, path in present if (old_id, path) not in regular]
    if regular:
        data = "".join(f"{path}\n" for _, path in regular).encode("utf-8", "surrogateescape")
        if all("\n" not in path for _, path in regular):
            ids = repo.run(["hash-object", "--no-filters", "--stdin-paths"], input=data,
                           check=False).stdout.decode().split()
        else:
            ids = []
        if len(ids) != len(regular):
            return sorted(changed + [path for _, path in regular])
        changed += [path for (old_id, path), now in zip(regular, ids) if now != old_id]
    return sorted(changed)


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
        data = ignore_query([p.encode("utf-8", "surrogateescape") for p in paths])
        # the work tree: `before`'s ignore files; the store's info/exclude is the user's
        proc = repo.run_in(tree, ["check-ignore", "--no-index", "-z", "--stdin"], input=data)
        return {p.decode("utf-8", "surrogateescape") for p in check_ignore(proc)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _unchanged_since(repo: Repo, before: str, paths: Sequence[str]) -> set[str]:
    """Those of `paths` whose inode has not changed since the `before` snapshot was taken.

    The `.gitignore` files of `before` are not all that made git ignore a
    file: `.git/info/exclude` and the global excludes file are not in the
    snapshots, and an agent that emptied them made the user's `.env` or
    key appear in `after` as the session's new file. A file's ctime is set
    by the system on every change and cannot be set back: one older than
    the `before` commit (whole seconds, floored) was there, untouched.
    """
    if not paths:
        return set()
    stamp = repo.run(["show", "-s", "--format=%ct", before]).stdout.decode().strip()
    try:
        since = int(stamp)
    except ValueError:
        return set()
    older = set()
    for path in paths:
        try:
            if os.lstat(os.path.join(repo.top, path)).st_ctime < since:
                older.add(path)
        except OSError:
            continue
    return older


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # a file where a folder was: the leading folders' check looks at that
    except OSError as exc:
        raise UndoRefused(f"refusing to undo: cannot look at {shown_paths([path])}: {exc.strerror} "
                          "(nothing was changed)") from None


def _fingerprint(top: str, path: str) -> tuple[int, ...] | None:
    """What `lstat` says of a path (type, size, times, inode), None when nothing is there.

    Taken in `plan` before the snapshot that proves the file is as the
    session left it, and again in `apply`: a file saved in between (an
    editor's autosave while undo was reading the records) differs, and undo
    refuses instead of overwriting that edit.
    """
    try:
        st = os.lstat(os.path.join(top, path))
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


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
    kinds: dict[str, str] = {}  # a leading folder is shared by many paths: looked at once

    def kind(lead: str) -> str:
        if lead not in kinds:
            st = _lstat(os.path.join(top, lead))
            if st is None:
                kinds[lead] = "absent"
            elif not stat.S_ISDIR(st.st_mode):
                kinds[lead] = "other"
            else:
                kinds[lead] = "repo" if os.path.exists(os.path.join(top, lead, ".git")) else "folder"
        return kinds[lead]

    for path in plan.acted_on:
        for lead in _leading(path):
            found = kind(lead)
            if found != "other":
                if found == "repo":
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
    folders = {os.path.dirname(p) for p in plan.acted_on}
    locked = sorted({f for f in (_writable_folder(top, os.path.join(d, "-")) for d in folders) if f})
    if locked:
        raise UndoRefused(f"refusing to undo: no permission to write in {shown_paths(locked)} (nothing was changed)")


def plan(repo: Repo, before: str, after: str, *, left_out: Mapping[str, int] | None = None,
         force: bool = False, keep_folders: Sequence[str] = ()) -> UndoPlan:
    """Every check, nothing changed: the plan, or `UndoRefused` saying why in one line.

    `left_out` (path: size) are the files a size cap kept out of the
    snapshots: never touched, listed. With `force`, files changed after the
    session are undone too (their newer content is lost). A file already as
    it was before the session (an undo that stopped part-way) is left as it
    is, so running undo again finishes what it started.
    """
    from wrapagent.history.checkpoints import size_text

    result = UndoPlan(repo, before, after)
    result.keep_folders = set(keep_folders)
    created: list[str] = []
    restore_ids: list[tuple[str, str, str]] = []
    skipped = dict(left_out or {})
    for status, old_mode, new_mode, old_id, path in raw_changes_ids(repo, before, after):
        if path in skipped:
            continue
        if GITLINK in (old_mode, new_mode):
            what = "a nested repository or submodule: wrapagent leaves it as it is"
            result.not_restored.append((path, what))
        elif status == "A":
            created.append(path)
        else:
            result.restore.append((status, path))
            restore_ids.append((status, old_id, path))
    for path, size in sorted(skipped.items()):
        result.not_restored.append((path, f"not in the snapshot: {size_text(size)}, larger than the size cap"))
    hidden = ignored_before(repo, before, created)
    older = _unchanged_since(repo, before, [p for p in created if p not in hidden])
    for path in created:
        if path in hidden:
            result.kept.append((path, "git ignored it before the session: it may have existed then"))
        elif path in older:
            result.kept.append((path, "unchanged since before the session: it was there then"))
        else:
            result.remove.append(path)
    for path, _ in result.not_restored:  # restoring a file where a nested repository now is
        if any(p == path for _, p in result.restore):
            raise UndoRefused(f"refusing to undo: a nested git repository now stands at {shown_paths([path])} "
                              "(nothing was changed)")
    gone = _missing_objects(repo, sorted({i for s, i, _ in restore_ids if i.strip("0")}))
    if gone:
        lost = sorted(p for _, i, p in restore_ids if i in gone)
        raise UndoRefused(f"refusing to undo: {len(lost)} file(s) cannot be restored, their content is no "
                          f"longer in the repository (removed by git gc): {shown_paths(lost)} (nothing was changed)")
    acted = result.acted_on
    if not acted:
        return result
    result.seen = {p: _fingerprint(repo.top, p) for p in acted}  # before git reads them: see `apply`
    now = repo.write_tree()
    moved = [p for _, p in repo.changes(after, now, acted)]
    newer = [p for p in _newer_than_after(repo, restore_ids) if p not in moved]
    if moved:
        as_before = {p for _, p in repo.changes(before, now, acted)}
        done = [p for p in moved if p not in as_before and p not in newer]
        if len(done) == len(acted):
            raise UndoRefused("these files are already as they were before the session: undone already? "
                              "(nothing was changed)")
        _drop(result, done, "already as before the session (an undo that stopped part-way?)")
        moved = [p for p in moved if p not in done]
    conflicts = sorted(set(moved) | set(newer))
    if conflicts and not force:
        raise UndoConflict(conflicts)
    _check_in_the_way(result)
    return result


def _drop(result: UndoPlan, paths: Sequence[str], why: str) -> None:
    """Take `paths` out of what undo does; listed as kept, with `why`."""
    gone = set(paths)
    result.remove = [p for p in result.remove if p not in gone]
    result.restore = [(s, p) for s, p in result.restore if p not in gone]
    result.kept += [(p, why) for p in sorted(gone)]
    for p in gone:
        result.seen.pop(p, None)


def apply(plan: UndoPlan) -> None:
    """Do what `plan` decided. Created paths go first: a file the session turned into a folder
    (or back) must be out of the way before the old one is written again.

    The work tree is the user's and may have changed since `plan` (another
    session, a sync tool, an editor saving): the paths and the files are
    looked at once more before the first change (`UndoRefused`, nothing
    changed), and removals never follow a link (`_remove_created`).
    """
    _check_in_the_way(plan)
    edited = [p for p in plan.acted_on if p in plan.seen and _fingerprint(plan.repo.top, p) != plan.seen[p]]
    if edited:
        raise UndoConflict(edited)
    for path in plan.remove:
        _remove_created(plan.repo.top, path, plan.keep_folders)
    restored = [p for _, p in plan.restore]
    modes = _read_write_bits(plan.repo.top, restored)
    plan.repo.checkout_paths(plan.before, restored)
    _put_back_read_write_bits(plan.repo.top, modes)


def _read_write_bits(top: str, paths: Sequence[str]) -> dict[str, int]:
    """The read/write permission bits of those `paths` that are plain files now.

    git keeps only the executable bit, and writes a file it checks out with
    the umask's: restoring the content of the user's read-only (0444) file
    would otherwise leave it writable. The bits a file has when undo starts
    are the best knowledge there is of what they were before the session.
    """
    modes = {}
    for path in paths:
        try:
            st = os.lstat(os.path.join(top, path))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            modes[path] = st.st_mode & 0o666
    return modes


def _put_back_read_write_bits(top: str, modes: Mapping[str, int]) -> None:
    """After the checkout: each file's read/write bits as they were, its executable bits as git wrote them."""
    for path, bits in modes.items():
        try:
            fd = os.open(os.path.join(top, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue  # a link or nothing there now: nothing of ours to adjust
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISREG(mode) and mode & 0o666 != bits:
                os.fchmod(fd, (stat.S_IMODE(mode) & ~0o666) | bits)
        except OSError:
            pass  # the content is back; its permissions are a nicety
        finally:
            os.close(fd)


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def _remove_created(top: str, path: str, keep: set[str] | frozenset[str] = frozenset()) -> None:
    """Remove a file the session created, then the folders it left empty; never through a link.

    Each leading folder is opened from the one above it with `O_NOFOLLOW`:
    one that became a link since the checks (to a folder outside the
    repository holding a file of that name) stops undo there with an
    OSError, instead of removing that outside file.
    """
    parts = path.split("/")
    fds = [os.open(top, _FOLDER_FLAGS)]
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                fds.append(os.open(name, _FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=fds[-1]))
            except FileNotFoundError:
                return  # gone already, and the file with it
            except OSError as exc:
                lead = "/".join(parts[: i + 1])
                raise OSError(exc.errno, f"{shown_paths([lead])} is no longer a folder (a link or a file "
                                         "appeared there during undo): not followed") from None
        try:
            os.unlink(parts[-1], dir_fd=fds[-1])
        except FileNotFoundError:
            pass
        for i in range(len(parts) - 1, 0, -1):  # the folders it leaves empty, deepest first
            if "/".join(parts[:i]) in keep:
                return  # there before the session (empty, or holding ignored files only)
            try:
                os.rmdir(parts[i - 1], dir_fd=fds[i - 1])
            except OSError:
                return
    finally:
        for fd in fds:
            os.close(fd)


def left_out(info: Mapping[str, object]) -> dict[str, int]:
    """The files a size cap kept out of the session's snapshots (path: size)."""
    out: dict[str, int] = {}
    for key in ("left_out_before", "left_out_after"):
        value = info.get(key)
        if isinstance(value, dict):
            out.update({str(k): int(v) for k, v in value.items() if isinstance(v, int)})
    return out


def folders_before(info: Mapping[str, object]) -> list[str]:
    """The folders of the work tree that held nothing snapshotted before the session (kept by undo)."""
    value = info.get("folders_before")
    return [str(f) for f in value] if isinstance(value, list) else []


def undo(info: Mapping[str, object], env: Mapping[str, str] | None = None, *,
         dry_run: bool = False, force: bool = False) -> UndoPlan:
    """Check everything, then (unless `dry_run`) put the session's files back; the plan."""
    from wrapagent.history.checkpoint_access import open_repo, session_commits

    session_commits(info)  # says why there are none before looking for the repository
    repo = open_repo(info, env)
    before, after = session_commits(info, repo)
    result = plan(repo, before, after, left_out=left_out(info), force=force,
                  keep_folders=folders_before(info))
    if not dry_run:
        apply(result)
    return result


def undo_files(info: Mapping[str, object], env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """`undo`, returning (status, path) of the files removed (`A`) or restored."""
    result = undo(info, env)
    return [("A", p) for p in result.remove] + list(result.restore)
