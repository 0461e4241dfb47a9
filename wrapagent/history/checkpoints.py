"""Snapshots of the project's work tree as git commits, in wrapagent's own store (history/store.py).

Before the tool starts and after it exits, the work tree (tracked and
untracked files, minus what git ignores at that moment) is written as a
commit of the project's store, with git plumbing only:

    git ls-files -m -o --exclude-standard     # what changed since the store's index
    git update-index --add --remove --stdin   # those files, as bytes; too-big ones left out
    git write-tree
    git commit-tree <tree> [-p <before>]      # no hooks, nothing of the user's
    git update-ref refs/sessions/<session>/<before|after> <commit>

The store's index starts as a copy of the user's index (minus the paths
whose blob there is converted), so git's stat cache makes the first
snapshot cheap; each snapshot works on its own copy and puts it back with
a rename, so two sessions in one project never corrupt it. The user's
repository is only read (`--no-optional-locks`). The user's pre-existing
edits are in the "before" snapshot, so `diff` and `undo` only ever see
what changed during the session.

Each snapshot runs under a time budget: on a repository too big for it, the
snapshot is abandoned (its git process killed) and the record says so. A
file larger than `[checkpoints] max_file_mb` is left out (the record lists
it), so one build product neither exhausts the budget nor grows the store.
"""

from __future__ import annotations

import os
import time

from wrapagent import gitcmd

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Mapping, Sequence

REF_PREFIX = "refs/sessions/"  # in the store
LEGACY_REF_PREFIX = "refs/wrapagent/checkpoints/"  # in the user's repository, before the store
OVER_BUDGET_MARK = "over-budget"  # in $GIT_DIR/wrapagent/: the last snapshot here ran out of time
OVER_BUDGET_RETRY_SECS = 24 * 3600
IDENTITY = gitcmd.IDENTITY
FOLDERS_KEPT = 1000  # at most this many empty (or ignored-only) folders of `before` listed in a record
DEFAULT_MAX_FILE_MB = 10.0  # [checkpoints] max_file_mb: a larger file is left out of a snapshot


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


def git(root: str | Path, args: Sequence[str], *, env: Mapping[str, str] | None = None,
        index: str | None = None, deadline: float | None = None, input: bytes | None = None,
        check: bool = True, git_dir: str | None = None) -> gitcmd.Result:
    """Run git on the work tree at `root` (and `git_dir`, once known) through wrapagent/gitcmd.py.

    A wrapped session may run inside a git hook or a `git rebase -x`: gitcmd
    drops the variables that would point git at another repository or index,
    and runs none of the user's hooks (`post-index-change` and
    `reference-transaction` would otherwise fire on every snapshot). With
    `deadline` (monotonic) git's process group is killed when time is up and
    the temporary pack it was writing (`objects/pack/tmp_pack_*`: a large
    untracked file is streamed into one) is removed with it.
    """
    try:
        return gitcmd.run(root, args, git_dir=git_dir, work_tree=root if git_dir else None, index=index,
                          deadline=deadline, input=input, check=check, identity=True, base_env=env)
    except gitcmd.GitTimeout as exc:
        if not exc.started:
            raise BudgetExceeded("no time left in the snapshot budget") from None
        removed = f" (removed the {len(exc.removed)} temporary file(s) it left)" if exc.removed else ""
        raise BudgetExceeded(f"`git {args[0]}` took longer than the snapshot budget{removed}") from None
    except gitcmd.GitError as exc:
        raise CheckpointError(str(exc)) from None  # gitcmd's own words ("cannot run git: …" when it could not start)


class Repo:
    """A git work tree (its top level and the user's git dir, only ever read) and wrapagent's store
    of its checkpoints (history/store.py), where every snapshot is written.

    `store` is None for a record of an earlier release, whose checkpoints
    are refs in the user's repository: those are only read (diff, undo).
    """

    def __init__(self, top: str, git_dir: str, env: Mapping[str, str] | None = None,
                 store: "Store | None" = None, objects: str | None = None) -> None:
        self.top = top
        self.git_dir = git_dir
        self.env = env
        self.store = store
        self.objects = objects
        self.head: str | None = None  # the user's HEAD commit when `find` looked (None: no commit yet)
        self._config: dict[str, str] | None = None

    @classmethod
    def find(cls, path: str | Path, env: Mapping[str, str] | None = None,
             deadline: float | None = None) -> "Repo | None":
        """The repository whose work tree holds `path`; None outside one (or in a bare one). Reads only."""
        from wrapagent.history.store import user_read

        args = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]
        try:
            proc = user_read(path, [*args, "HEAD"], env=env, deadline=deadline)  # HEAD in the same call
            if proc.returncode != 0:  # no commit yet (or no repository)
                proc = user_read(path, args, env=env, deadline=deadline)
        except gitcmd.GitTimeout:
            raise BudgetExceeded("no time left in the snapshot budget") from None
        except gitcmd.GitError:
            return None
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode != 0 or len(lines) not in (3, 4) or not lines[0]:
            return None
        repo = cls(lines[0], lines[1], env, objects=os.path.join(lines[2], "objects"))
        repo.head = lines[3] if len(lines) == 4 else None
        return repo

    def open_store(self, *, create: bool = True) -> "Repo":
        """This repository with its store opened (created when missing): where snapshots go."""
        from wrapagent.history.store import Store, StoreError

        try:
            self.store = Store.open(self.top, self.git_dir, self.objects, self.env, create=create)
        except (StoreError, OSError) as exc:
            raise CheckpointError(f"checkpoint store: {exc}") from None
        return self

    def run(self, args: Sequence[str], *, index: str | None = None, deadline: float | None = None,
            input: bytes | None = None, check: bool = True) -> gitcmd.Result:
        """git on the store (or, for an earlier release's record, read-only on the user's repository)."""
        try:
            if self.store is not None:
                return self.store.run(args, index=index, deadline=deadline, input=input, check=check)
            from wrapagent.history.store import user_read

            return user_read(self.top, args, git_dir=self.git_dir, env=self.env, index=index,
                             deadline=deadline, input=input, check=check)
        except gitcmd.GitTimeout as exc:
            if not exc.started:
                raise BudgetExceeded("no time left in the snapshot budget") from None
            removed = f" (removed the {len(exc.removed)} temporary file(s) it left)" if exc.removed else ""
            raise BudgetExceeded(f"`git {args[0]}` took longer than the snapshot budget{removed}") from None
        except gitcmd.GitError as exc:
            raise CheckpointError(str(exc)) from None

    def run_in(self, folder: str, args: Sequence[str], *, input: bytes | None = None) -> gitcmd.Result:
        """git with this repository's git dir (the store's) on another work tree `folder` (undo's
        scratch copy of the `before` ignore files); never checks the exit code."""
        git_dir = self.store.path if self.store is not None else self.git_dir
        return git(folder, args, env=self.env, git_dir=git_dir, input=input, check=False)

    def read_user(self, args: Sequence[str], *, index: str | None = None, deadline: float | None = None,
                  input: bytes | None = None) -> gitcmd.Result:
        """A read-only git call on the user's repository (`--no-optional-locks`)."""
        from wrapagent.history.store import user_read

        try:
            return user_read(self.top, args, git_dir=self.git_dir, env=self.env, index=index,
                             deadline=deadline, input=input)
        except gitcmd.GitTimeout:
            raise BudgetExceeded("no time left in the snapshot budget") from None
        except gitcmd.GitError as exc:
            raise CheckpointError(str(exc)) from None

    def user_config(self, deadline: float | None = None) -> dict[str, str]:
        """The user's settings a snapshot reads (store.USER_CONFIG_KEYS), asked once per Repo."""
        if self._config is None:
            from wrapagent.history.store import user_config

            try:
                self._config = user_config(self.top, self.git_dir, self.env, deadline)
            except gitcmd.GitTimeout:
                raise BudgetExceeded("no time left in the snapshot budget") from None
            except gitcmd.GitError as exc:
                raise CheckpointError(str(exc)) from None
        return self._config

    def rev(self, name: str, deadline: float | None = None) -> str | None:
        """A commit of the user's repository (HEAD), read only."""
        proc = self.read_user(["rev-parse", "-q", "--verify", f"{name}^{{commit}}"], deadline=deadline)
        out = proc.stdout.decode().strip()
        return out if proc.returncode == 0 and out else None

    # -- snapshots ----------------------------------------------------------------

    def _scratch(self) -> str:
        """The store's folder: its index and marks."""
        if self.store is None:
            raise CheckpointError("this session's checkpoints are in the repository (an earlier release): "
                                  "read only")
        return self.store.path

    def _index_paths(self) -> tuple[str, str]:
        folder = self._scratch()
        unique = f"{os.getpid()}-{os.urandom(4).hex()}"  # sessions (and threads) never share one
        return os.path.join(folder, "index"), os.path.join(folder, f"index.{unique}.tmp")

    def _seed_index(self, private: str, work: str, deadline: float | None) -> str:
        """Start from the store's index (warm stat cache), else from the user's index, else nothing:
        "store", "user" or "empty".

        From the user's index, a path whose blob there may not be the file's
        bytes (store.converted_paths: a filter, eol conversion) is hashed
        again, as bytes: the index then holds exactly the user's tracked
        files, so the first snapshot needs no look at the ignore rules.
        The user's index is only read (a plain copy, never a lock).
        """
        from wrapagent.history.store import converted_paths, write_private

        data = _read_file(private)
        if data is not None:
            write_private(work, data)
            return "store"
        data = _read_file(os.path.join(self.git_dir, "index"))
        if data is None:
            return "empty"
        write_private(work, data)
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

    def untracked_reason(self, cwd: str | None, deadline: float | None = None) -> str | None:
        """Why this work tree is not snapshotted although it is a repository; None when it is.

        A dotfiles repository (`git init ~`, `status.showUntrackedFiles no`)
        would otherwise put the whole home folder, `~/.ssh` included, into
        a snapshot from any folder under it.
        """
        home = os.path.realpath(os.path.expanduser("~") if self.env is None
                                else self.env.get("HOME") or os.path.expanduser("~"))
        if os.path.realpath(self.top) == home:
            return HOME_NOTE
        value = self.user_config(deadline).get("status.showuntrackedfiles", "").lower()
        if value in ("no", "false", "off", "0"):
            return ("status.showUntrackedFiles is `no` in this repository: untracked files are not "
                    "its business, so no checkpoints by default")
        if cwd:
            rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(self.top))
            if rel != "." and not rel.startswith(".."):
                inside = self.read_user(["ls-files", "-z", "--cached", "--", f":(literal){rel}"],
                                        deadline=deadline).stdout
                if not inside:
                    return (f"the session's folder ({rel}) holds no file the repository tracks: "
                            "no checkpoints by default")
        return None

    def snapshot(self, ref: str, message: str, parent: str | None,
                 deadline: float | None = None, max_file_bytes: int | None = None,
                 left_out: dict | None = None, folders: list | None = None) -> str:
        """Commit the work tree's current state under `ref` in the store; the commit id.

        `parent` is a commit of the store (the session's `before`), never the
        user's HEAD: the store must not depend on the user's history.
        """
        tree = self.write_tree(deadline, max_file_bytes, left_out, folders)
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        commit = self.run(args, deadline=deadline).stdout.decode().strip()
        from wrapagent.history.store import StoreError

        try:
            self.store.write_ref(ref, commit)
        except (StoreError, OSError) as exc:
            raise CheckpointError(f"cannot write {ref}: {exc}") from None
        return commit

    def _mark_path(self) -> str:
        return os.path.join(self._scratch(), OVER_BUDGET_MARK)

    def recently_over_budget(self, now: float | None = None) -> bool:
        """True when a snapshot here ran out of time recently: the next sessions don't wait for it again."""
        try:
            stamp = os.stat(self._mark_path()).st_mtime
        except OSError:
            return False
        return (time.time() if now is None else now) - stamp < OVER_BUDGET_RETRY_SECS

    def mark_over_budget(self) -> None:
        from wrapagent.history.store import write_private

        try:
            write_private(self._mark_path(), b"a wrapagent snapshot of this work tree ran out of its time budget\n")
        except OSError:
            pass

    # -- comparing and restoring ------------------------------------------------

    def changes(self, before: str, after: str, paths: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(status letter, path) for every file that differs between two trees or commits.

        With `paths`, only those paths and what lies below them. They are
        matched here, not given to git as pathspecs: a session that created
        40,000 files (a vendored library) would make the command line longer
        than the system allows (E2BIG), and undo impossible. git compares
        only the subtrees that differ, so the full list costs what changed.
        """
        if paths is not None and not paths:
            return []
        args = ["diff-tree", "-r", "-z", "--no-renames", "--name-status", "--no-ext-diff", before, after]
        out = self.run(args).stdout.decode("utf-8", "surrogateescape").split("\0")
        found = [(out[i][:1], out[i + 1]) for i in range(0, len(out) - 1, 2) if out[i]]
        if paths is None:
            return found
        wanted = set(paths)
        return [(status, path) for status, path in found if _at_or_below(path, wanted)]

    def checkout_paths(self, tree: str, paths: Sequence[str]) -> None:
        """Write `paths` as they are in `tree` into the work tree, leaving the user's index alone.

        A throw-away index holds `tree`; `checkout-index` on the store writes
        each file's bytes as they were (the store's attributes: no smudge
        filter, no eol conversion), so no filter can fail half-way.
        """
        import shutil
        import tempfile

        if not paths:
            return
        folder = tempfile.mkdtemp(prefix="wrapagent-undo-") if self.store is None else self.store.path
        tmp = os.path.join(folder, f"index.{os.getpid()}-{os.urandom(4).hex()}.undo")
        try:
            self.run(["read-tree", tree], index=tmp)
            data = b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0"
            self.run(["checkout-index", "-f", "-z", "--stdin"], index=tmp, input=data)
        finally:
            _unlink(tmp)
            if self.store is None:
                shutil.rmtree(folder, ignore_errors=True)


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


def _at_or_below(path: str, wanted: set[str]) -> bool:
    """Whether `path` is one of `wanted` or lies below one (as git's `:(literal)` pathspec matches)."""
    if path in wanted:
        return True
    cut = path.find("/")
    while cut != -1:
        if path[:cut] in wanted:
            return True
        cut = path.find("/", cut + 1)
    return False


# --------------------------------------------------------------------------- session wiring


def session_ref(session_id: str, which: str) -> str:
    return f"{REF_PREFIX}{session_id}/{which}"


def skip_reason(*, enabled: bool, depth: int, parent: str | None) -> str | None:
    """Why this session takes no checkpoints, or None when it should."""
    if not enabled:
        return "disabled by configuration ([checkpoints] enabled = false)"
    if depth or parent:
        return "nested session: the outer session's checkpoints cover the work tree"
    return None


def size_text(n: int) -> str:
    """`60 MB`, `12 KB`: a size for one line."""
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _open_for(project_root: str | Path, which: str, info: dict, env: Mapping[str, str] | None,
              deadline: float) -> Repo | None:
    """The repository and its store for this snapshot; None (with the reason in `info`) when there is none.

    The `after` snapshot goes into the store the `before` one went into, and
    only when the project is still the same work tree: a project deleted or
    renamed during the session keeps its `before` snapshot, and the record
    says why there is no `after` one.
    """
    repo = Repo.find(project_root, env, deadline)
    if which == "before":
        if repo is None:
            info.update(status="skipped", note="not a git repository")
        return repo
    if repo is None or os.path.realpath(repo.top) != os.path.realpath(str(info.get("repo"))):
        info["after_note"] = ("the project folder was deleted, moved or is no longer a git repository: "
                              "no `after` snapshot (the `before` one is kept)")
        return None
    return repo


def take(project_root: str | Path, session_id: str, which: str, info: dict,
         *, budget: float, env: Mapping[str, str] | None = None, cwd: str | None = None,
         max_file_bytes: int | None = None) -> None:
    """Take the `before` or `after` snapshot of one session, recording the outcome in `info`.

    `info` is the record's `checkpoints` object. Never raises: a failed
    snapshot is a note, the session goes on.
    """
    if info.get("status") not in (None, "taken"):
        return  # skipped earlier (not a repository, over budget, disabled)
    started = time.monotonic()
    deadline = started + budget
    repo = None
    try:
        repo = _open_for(project_root, which, info, env, deadline)
        if repo is None:
            return
        repo.open_store()
        if which == "before" and repo.recently_over_budget():
            info.update(status="skipped",
                        note=f"a snapshot of this repository ran out of its budget within the last "
                             f"{OVER_BUDGET_RETRY_SECS // 3600} h: not tried again yet "
                             f"(remove {repo._mark_path()} to retry now)")
            return
        if which == "before":
            reason = repo.untracked_reason(cwd, deadline)
            if reason is not None:
                info.update(status="skipped", note=reason)
                return
            info.update(repo=repo.top, store=repo.store.path, ref=REF_PREFIX + session_id, head=repo.head)
            parent = None
        else:
            parent = info.get("before")
            # the agent may have committed: diff and undo still compare work trees
            info["head_after"] = repo.head
        left_out: dict[str, int] = {}
        folders: list[str] = []
        commit = repo.snapshot(session_ref(session_id, which), f"wrapagent session {session_id}: {which}",
                               parent, deadline, max_file_bytes, left_out, folders)
        if left_out:
            info[f"left_out_{which}"] = left_out
        if folders and which == "before":
            info["folders_before"] = sorted(folders)[:FOLDERS_KEPT]
        info[which] = commit
        info["status"] = "taken"
    except BudgetExceeded:
        info.update(status="skipped",
                    note=f"the {which} snapshot took longer than its budget ({budget:g} s): "
                         "no checkpoints for this session")
        if repo is not None and repo.store is not None:
            repo.mark_over_budget()
    except CheckpointError as exc:
        info.update(status="failed", note=f"{which} snapshot: {exc}")
    finally:
        info[f"{which}_ms"] = round((time.monotonic() - started) * 1000, 1)


# --------------------------------------------------------------------------- commands


def note_record(session_dir: str | Path, **fields: object) -> bool:
    """Add `fields` to the `checkpoints` object of the record in `session_dir`; False when there is none.

    How undo and prune leave their mark ("undone on …", "pruned on …") for
    the next `sessions` command. The file is rewritten atomically, as the
    record module writes it.
    """
    from pathlib import Path

    from wrapagent.history.records import RECORD_NAME, atomic_write, dumps, load_record

    folder = Path(session_dir)
    record = load_record(folder)
    info = record.get("checkpoints") if record is not None else None
    if not isinstance(info, dict):
        return False
    info.update(fields)
    try:
        atomic_write(folder / RECORD_NAME, dumps(record).encode() + b"\n")
    except OSError:
        return False
    return True


def note_pruned(session_ids: Sequence[str], sessions_roots: Sequence[str | Path]) -> None:
    """Note in each record found under `sessions_roots` that its checkpoints were pruned now."""
    import datetime as dt

    stamp = dt.datetime.now(dt.timezone.utc).isoformat()
    for root in sessions_roots:
        for session_id in session_ids:
            if os.path.isdir(os.path.join(str(root), session_id)):
                note_record(os.path.join(str(root), session_id), pruned_at=stamp)


def ulid_time(session_id: str) -> float | None:
    """Seconds since the epoch encoded in a ULID session id (its first 10 characters)."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = 0
    for ch in session_id[:10].upper():
        index = alphabet.find(ch)
        if index < 0 or len(session_id) < 10:
            return None
        value = value * 32 + index
    return value / 1000.0


def prune(root: str | Path, older_than_days: float, env: Mapping[str, str] | None = None,
          now: float | None = None, *, dry_run: bool = False) -> list[str]:
    """Delete the checkpoints of sessions older than the given age from the project's store; their ids
    (with `dry_run`: the ids that would be, nothing deleted)."""
    repo = Repo.find(root, env)
    if repo is None:
        raise CheckpointError(f"{root} is not in a git repository")
    try:
        repo.open_store(create=False)
    except CheckpointError:
        return []  # no store: nothing was ever kept for this project
    return _prune_repo(repo, older_than_days, now, dry_run=dry_run)


def _prune_repo(repo: Repo, older_than_days: float, now: float | None = None,
                deadline: float | None = None, *, dry_run: bool = False) -> list[str]:
    """Drop the store's refs of old sessions, then the store's own objects nothing reaches any more.

    Only the store is touched; its `prune` keeps objects younger than an
    hour (a snapshot running now) and whatever the store's index names.
    """
    cutoff = (time.time() if now is None else now) - older_than_days * 86400
    doomed: dict[str, list[str]] = {}
    listed = repo.run(["for-each-ref", "--format=%(refname)", REF_PREFIX], deadline=deadline)
    for ref in listed.stdout.decode("utf-8", "surrogateescape").split():
        session_id = ref[len(REF_PREFIX):].split("/", 1)[0]
        stamp = ulid_time(session_id)
        if stamp is not None and stamp < cutoff:
            doomed.setdefault(session_id, []).append(ref)
    if doomed and not dry_run:
        lines = "".join(f"delete {ref}\n" for refs in doomed.values() for ref in refs)
        repo.run(["update-ref", "--stdin"], input=lines.encode("utf-8", "surrogateescape"), deadline=deadline)
        repo.run(["prune", "--expire=1.hour.ago"], deadline=deadline, check=False)
    return sorted(doomed)


PRUNE_MARK = "pruned"  # in the store: when old sessions' checkpoints were last looked for
PRUNE_EVERY_SECS = 24 * 3600


def expire_old(info: Mapping[str, object], keep_days: float, sessions_root: str | Path | None,
               env: Mapping[str, str] | None = None, *, budget: float = 2.0,
               now: float | None = None) -> list[str]:
    """At a session's end: drop the store's checkpoints of sessions older than `keep_days`.

    Cheap: one `stat` of a mark file in the store, and git only when it is
    a day old (then one `for-each-ref`, plus `update-ref` and `prune` when
    there are such sessions). The pruned sessions' records under
    `sessions_root` say so. Never raises; `keep_days` <= 0 keeps everything.
    """
    from wrapagent.history.store import Store, is_store, write_private

    top, store = info.get("repo"), info.get("store")
    if keep_days <= 0 or not top or not store or not is_store(str(store)):
        return []
    now = time.time() if now is None else now
    mark = os.path.join(str(store), PRUNE_MARK)
    try:
        if now - os.stat(mark).st_mtime < PRUNE_EVERY_SECS:
            return []
    except OSError:
        pass
    try:
        repo = Repo(str(top), "", env, store=Store(str(store), str(top), "", env))
        dropped = _prune_repo(repo, keep_days, now, time.monotonic() + budget)
        write_private(mark, f"wrapagent drops checkpoints older than {keep_days:g} days "
                            "([checkpoints] keep_days)\n".encode())
    except (OSError, CheckpointError):
        return []
    if dropped and sessions_root is not None:
        note_pruned(dropped, [sessions_root])
    return dropped


# --------------------------------------------------------------------------- lifecycle hooks


HOME_NOTE = ("the repository's top is the home folder (a dotfiles repository?): checkpoints would hold "
             "every file under it, so none by default")


def before_skip_reason(settings, *, depth: int, parent: str | None,
                       project_root: str | Path, env: Mapping[str, str] | None = None) -> str | None:
    """Why this session takes no `before` snapshot; None when it takes one (decided without git)."""
    reason = skip_reason(enabled=settings.enabled, depth=depth, parent=parent)
    if reason is not None:
        return reason
    root = str(project_root)
    home = (os.environ if env is None else env).get("HOME") or os.path.expanduser("~")
    home = os.path.realpath(home)
    if not os.path.exists(os.path.join(root, ".git")):
        # The project root is the nearest folder holding `.git` (paths.project_root_of), and
        # snapshots strip GIT_DIR & co.: no `.git` there means no repository, without forking git.
        if root.startswith(home + os.sep) and os.path.exists(os.path.join(home, ".git")):
            return "not a git repository (the one at the home folder does not count: no checkpoints there)"
        return "not a git repository"  # no `.git` found: no git process at all on start-up
    if os.path.realpath(root) == home:
        return HOME_NOTE
    return None


def max_file_bytes(settings) -> int | None:
    """`[checkpoints] max_file_mb` in bytes; None (no cap) when it is 0."""
    mb = float(getattr(settings, "max_file_mb", DEFAULT_MAX_FILE_MB))
    return int(mb * 1_000_000) if mb > 0 else None


def begin(record: dict, settings, project_root: str | Path, env: Mapping[str, str] | None = None) -> None:
    """Before the tool starts: the `before` snapshot, or the reason there is none, in `record["checkpoints"]`."""
    info: dict = {"status": None}
    record["checkpoints"] = info
    reason = before_skip_reason(settings, depth=int(record.get("depth") or 0),
                                parent=record.get("parent_session"), project_root=project_root, env=env)
    if reason is not None:
        info.update(status="skipped", note=reason)
        return
    take(project_root, str(record["id"]), "before", info, budget=settings.budget_secs, env=env,
         cwd=record.get("cwd"), max_file_bytes=max_file_bytes(settings))


def end(record: dict, settings, project_root: str | Path, env: Mapping[str, str] | None = None) -> None:
    """After the tool exited: the `after` snapshot, when there is a `before` one; then old
    sessions' refs past `[checkpoints] keep_days` go (`expire_old`, at most once a day)."""
    info = record.get("checkpoints")
    if not isinstance(info, dict) or info.get("status") != "taken":
        return
    take(project_root, str(record["id"]), "after", info, budget=settings.budget_secs, env=env,
         max_file_bytes=max_file_bytes(settings))
    from wrapagent.paths import sessions_root_str

    expire_old(info, getattr(settings, "keep_days", 30.0), sessions_root_str(project_root, env), env,
               budget=settings.budget_secs)
