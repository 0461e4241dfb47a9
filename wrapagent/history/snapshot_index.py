"""How a snapshot builds the store's index: seeded, scanned once, updated with what changed.

Part of `checkpoints.Repo` (a mixin: it uses the repository's `run`,
`read_user`, `user_config`, `store`, `top` and `git_dir`). Kept apart from
the session wiring in checkpoints.py: this is the part whose cost is
measured against `git status` (bench/bench_checkpoints.py).
"""

from __future__ import annotations

import os

from wrapagent import gitcmd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class CheckpointError(Exception):
    """A snapshot or an operation on snapshots failed; the message is for the user."""


class BudgetExceeded(CheckpointError):
    """A git step did not finish within the snapshot's time budget."""


IGNORE_STAMP = "ignore-stamp"  # in the store: what the ignore rules were at the last snapshot


def _sha(data: bytes) -> str:
    from wrapagent.paths import _sha256_hex

    return _sha256_hex(data)


def _read_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _copy_index(source: str, target: str) -> bool:
    """Copy an index (0600, never through a link) keeping its modification time; False when
    there is none.

    git trusts an entry whose file's size and times (to the second, as most builds compare)
    are those recorded, unless the entry is as new as the index file itself ("racily clean":
    then it reads the file). That check needs the index file's own time: a copy dated now
    turned an entry recorded at 03.545 into a trusted one, and a same-size edit at 03.952 was
    missing from the snapshot taken at 04.012 (a CI run; `undo` would have lost it). The time
    is read before the bytes: an index rewritten in between is only dated earlier than its
    content, which makes git read more files, never fewer.
    """
    from wrapagent.history.store import write_private

    try:
        st = os.stat(source)
    except FileNotFoundError:
        return False
    data = _read_file(source)
    if data is None:
        return False
    write_private(target, data)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return True


class IndexBuilder:
    """The index side of a snapshot (see `checkpoints.Repo`)."""

    def _seed_index(self, private: str, work: str, deadline: float | None) -> str:
        """Start from the store's index (warm stat cache), else from the user's index, else nothing:
        "store", "user" or "empty".

        From the user's index, a path whose blob there may not be the file's
        bytes (store.converted_paths: a filter, eol conversion) is hashed
        again, as bytes: the index then holds exactly the user's tracked
        files, so the first snapshot needs no look at the ignore rules.
        The user's index is only read (a plain copy, never a lock).
        """
        from wrapagent.history.store import converted_paths

        if _copy_index(private, work):
            return "store"
        if not _copy_index(os.path.join(self.git_dir, "index"), work):
            return "empty"
        listed = self.run(["ls-files", "-z", "--cached"], index=work, deadline=deadline, check=False)
        if listed.returncode != 0:  # a split or sparse index, an unknown extension: start empty
            _unlink(work)
            return "empty"
        paths = [p for p in listed.stdout.split(b"\0") if p]
        converted = converted_paths(self.top, self.git_dir, paths, self.env, deadline, self.user_config(deadline))
        drop = paths if converted is None else sorted(converted)
        if drop:
            self.run(["update-index", "-z", "--force-remove", "--stdin"], index=work, deadline=deadline,
                     input=b"\0".join(drop) + b"\0")
            again = [p for p in drop if self._under_folders(p) and self._is_file(p)]
            if again:
                self.run(["update-index", "-z", "--add", "--replace", "--stdin"], index=work,
                         deadline=deadline, input=b"\0".join(again) + b"\0")
        return "user"

    def write_tree(self, deadline: float | None = None, max_file_bytes: int | None = None,
                   left_out: dict | None = None, folders: list | None = None) -> str:
        """The work tree as it is now (tracked + untracked, minus ignored), as a tree id in the store.

        Files larger than `max_file_bytes` that git would have to read are
        left out (their paths and sizes go into `left_out`): a 60 MB build
        product costs neither the budget nor the disk.
        """
        if self.store is None:
            raise CheckpointError("this session's checkpoints are in the repository (an earlier release): "
                                  "read only")
        excludes = self.store.sync_excludes()
        private, work = self._index_paths()
        try:
            seed = self._seed_index(private, work, deadline)
            paths, dirs = self._changed(work, deadline)
            # Ignore rules that may have changed since the last snapshot: the entries ignored now go
            # before the update, which would write their new content. (An index just copied from
            # the user's holds exactly their tracked files: nothing to look at.)
            stamp = self._ignore_stamp(excludes)
            if seed == "empty" or (seed == "store" and (
                    stamp != _read_file(self.store.file(IGNORE_STAMP))
                    or any(p == b".gitignore" or p.endswith(b"/.gitignore") for p in paths))):
                dropped = self._forget_ignored(work, deadline)
                paths = [p for p in paths if p not in dropped]
            self._update(work, paths, dirs, deadline, max_file_bytes, left_out, folders)
            tree = self.run(["write-tree"], index=work, deadline=deadline).stdout.decode().strip()
            os.replace(work, private)
            from wrapagent.history.store import write_private

            write_private(self.store.file(IGNORE_STAMP), stamp)
            return tree
        finally:
            _unlink(work)
            _unlink(work + ".lock")  # left by a git process killed at the end of the budget

    def _ignore_stamp(self, excludes: bytes) -> bytes:
        """What decides which files are ignored, outside the work tree's `.gitignore` files: the user's
        index (tracked files are never ignored), `info/exclude`, the global excludes file."""
        from wrapagent.history.store import excludes_stamp

        try:
            st = os.stat(os.path.join(self.git_dir, "index"))
            index = f"{st.st_size} {st.st_mtime_ns} {st.st_ino}"
        except OSError:
            index = "-"
        digest = _sha(excludes)
        return f"index {index}\nexclude {digest}\nglobal {excludes_stamp(self.user_config(), self.env)}\n".encode(
            "utf-8", "surrogateescape")

    def _changed(self, work: str, deadline: float | None) -> tuple[list[bytes], list[bytes]]:
        """(changed or untracked paths, untracked folders that list nothing): one scan of the work tree.

        The scan collapses untracked folders (`--directory`); only those are
        listed again, file by file. One that lists nothing is empty (or
        holds ignored files only).
        """
        listed = self.run(["ls-files", "-z", "-m", "-o", "--directory", "--exclude-standard"], index=work,
                          deadline=deadline).stdout.split(b"\0")
        entries = [p for p in dict.fromkeys(listed) if p]
        untracked_dirs = [p for p in entries if p.endswith(b"/")]
        paths = [p for p in entries if not p.endswith(b"/")]
        top = os.fsencode(self.top)
        # A tracked file turned folder: git lists the entry, not the folder's files (`--directory`).
        turned = [p + b"/" for p in paths if os.path.isdir(os.path.join(top, p))
                  and not os.path.islink(os.path.join(top, p))]
        if turned:
            paths += self._list_folders(work, turned, deadline)
        empty: list[bytes] = []
        if untracked_dirs:
            inside = self._list_folders(work, untracked_dirs, deadline)
            paths += inside
            found = set(inside)
            empty = [d.rstrip(b"/") for d in untracked_dirs
                     if d.rstrip(b"/") not in found and not any(f.startswith(d) for f in found)]
        return paths, empty

    def _update(self, work: str, paths: Sequence[bytes], empty: Sequence[bytes], deadline: float | None,
                max_file_bytes: int | None, left_out: dict | None, folders: list | None) -> None:
        """`git add -A`, by hand, on what `_changed` listed: Python leaves out the files too big (and
        those it cannot read), `update-index` hashes the rest. `folders` gets the empty ones."""
        if folders is not None:
            folders += [d.decode("utf-8", "surrogateescape") for d in empty]
        add, gone = self._sort_out(paths, max_file_bytes, left_out)
        if gone:
            self.run(["update-index", "-z", "--force-remove", "--stdin"], index=work, deadline=deadline,
                     input=b"\0".join(gone) + b"\0")
        if add:
            done = self.run(["update-index", "-z", "--add", "--remove", "--replace", "--stdin"], index=work,
                            deadline=deadline, input=b"\0".join(add) + b"\0", check=False)
            if done.returncode != 0:
                raise CheckpointError(f"`git update-index` failed: {done.last_error_line()}")

    def _list_folders(self, work: str, folders: Sequence[bytes], deadline: float | None) -> list[bytes]:
        """The untracked, not ignored files (and nested repositories, as `x`) below `folders`."""
        out: list[bytes] = []
        for start in range(0, len(folders), 500):  # a command line never too long
            specs = [b":(literal)" + f for f in folders[start:start + 500]]
            listed = self.run(["ls-files", "-z", "-o", "--exclude-standard", "--",
                               *(s.decode("utf-8", "surrogateescape") for s in specs)],
                              index=work, deadline=deadline).stdout.split(b"\0")
            out += [p.rstrip(b"/") for p in listed if p]
        return out

    def _sort_out(self, paths: Sequence[bytes], max_file_bytes: int | None,
                  left_out: dict | None) -> tuple[list[bytes], list[bytes]]:
        """(paths to hash into the index, paths whose entry goes): by what `lstat` says of each."""
        import stat

        top = os.fsencode(self.top)
        add: list[bytes] = []
        gone: list[bytes] = []
        for path in dict.fromkeys(paths):
            if not self._under_folders(path):
                gone.append(path)
                continue
            try:
                st = os.lstat(os.path.join(top, path))
            except OSError:
                gone.append(path)
                continue
            if stat.S_ISDIR(st.st_mode) and not os.path.exists(os.path.join(top, path, b".git")):
                gone.append(path)  # a file turned folder: the entry goes, its files are listed themselves
                continue
            if stat.S_ISREG(st.st_mode):
                if max_file_bytes is not None and st.st_size > max_file_bytes:
                    if left_out is not None:
                        left_out[path.decode("utf-8", "surrogateescape")] = st.st_size
                    gone.append(path)
                    continue
                if not os.access(os.path.join(top, path), os.R_OK):
                    continue  # unreadable (another user's file): as `add --ignore-errors` did
            add.append(path)
        return add, gone

    def _forget_ignored(self, work: str, deadline: float | None) -> set[bytes]:
        """Make the store's index hold exactly the user's tracked files plus untracked, non-ignored ones.

        An update never adds an ignored file and never drops an entry: a
        `.env` snapshotted once while untracked would stay in every later
        snapshot, rotated secret included, after the user ignores it, and a
        file the user force-adds (`git add -f dist/app.js`) after the first
        snapshot would never be in one. Runs before the update, which would
        write the ignored file's new content into the store. Costs two
        `ls-files` (the user's index only read) and, when the store's index
        holds untracked files, one `check-ignore` of those alone.
        """
        listing = ["ls-files", "-z", "--cached"]
        ours = set(self.run(listing, index=work, deadline=deadline).stdout.split(b"\0"))
        user_index = os.path.join(self.git_dir, "index")
        theirs: set[bytes] = set()
        if os.path.exists(user_index):
            theirs = set(self.read_user(listing, deadline=deadline).stdout.split(b"\0"))
        drop = self._ignored(sorted(p for p in ours - theirs if p), deadline)
        if drop:
            self.run(["update-index", "-z", "--force-remove", "--stdin"], index=work,
                     deadline=deadline, input=b"\0".join(drop) + b"\0")
        dropped = set(drop)
        # Tracked by the user since, and ignored (the update takes in the others): as files.
        add = [p for p in self._ignored(sorted(p for p in theirs - ours if p), deadline)
               if self._is_file(p)]
        if add:
            self.run(["update-index", "-z", "--add", "--replace", "--stdin"], index=work,
                     deadline=deadline, input=b"\0".join(add) + b"\0")
        return dropped

    def _ignored(self, paths: Sequence[bytes], deadline: float | None) -> list[bytes]:
        """Those of `paths` git's ignore rules match now (tracked or not).

        A path below something that is no longer a folder (a tracked
        `vendor/lib.py` after `vendor` became a symlink) is not in the work
        tree, so not ignored: asked about it, `check-ignore` dies ("beyond a
        symbolic link") and every snapshot of the repository failed with it.
        """
        paths = [p for p in paths if self._under_folders(p)]
        if not paths:
            return []
        return check_ignore(self.run(["check-ignore", "--no-index", "-z", "--stdin"], deadline=deadline,
                                     check=False, input=ignore_query(paths)))

    def _under_folders(self, path: bytes) -> bool:
        """Whether every leading part of `path` is a real folder (not a link, a file), or absent."""
        import stat

        folder = os.fsencode(self.top)
        for part in path.split(b"/")[:-1]:
            folder = os.path.join(folder, part)
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return False
            except FileNotFoundError:
                return True  # a folder that is gone: check-ignore takes the path as it is
            except OSError:
                return False
        return True

    def _is_file(self, path: bytes) -> bool:
        import stat

        try:
            mode = os.lstat(os.path.join(os.fsencode(self.top), path)).st_mode
        except OSError:
            return False
        return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def ignore_query(paths: Sequence[bytes]) -> bytes:
    """`check-ignore --stdin` input naming exactly these paths: each as `./path`.

    check-ignore reads its paths as pathspecs and supports no `literal`
    magic: a file named `:!README.md` or `:(x)y` (an agent's, anybody's)
    made it die, and with it undo and every snapshot of the repository.
    Magic is only read at a pathspec's start; `./` keeps it from being one.
    """
    return b"".join(b"./" + p + b"\0" for p in paths)


def check_ignore(proc: gitcmd.Result) -> list[bytes]:
    """The ignored paths of a `check-ignore -z --stdin` run on `ignore_query` input."""
    if proc.returncode not in (0, 1):
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CheckpointError(f"`git check-ignore` failed: {msg[-1] if msg else proc.returncode}")
    return [p[2:] if p.startswith(b"./") else p for p in proc.stdout.split(b"\0") if p]
